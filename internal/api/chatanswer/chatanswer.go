// Package chatanswer reads what an answer in the Chat Completions shape says — its text, tool
// calls, finish reason and usage — for the surfaces that answer in another shape (Anthropic
// Messages, OpenAI Responses): the completion core always hands back Chat Completions objects and
// chunks, and each of those surfaces rewrites them from what is read here.
package chatanswer

import (
	"github.com/tidwall/gjson"
)

// ToolCall is one function call of an answer.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // the JSON arguments as the model wrote them
}

// Usage is an answer's token accounting.
type Usage struct {
	Input, Output, Cached, Reasoning int64
}

// Answer is a whole (non-streamed) answer.
type Answer struct {
	ID     string
	Text   string
	Calls  []ToolCall
	Finish string // the Chat Completions finish_reason: stop, length, tool_calls, content_filter
	Usage  Usage
}

// Read reads a chat.completion object.
func Read(body []byte) Answer {
	r := gjson.ParseBytes(body)
	choice := r.Get("choices.0")
	a := Answer{ID: r.Get("id").String(), Text: choice.Get("message.content").String(),
		Finish: choice.Get("finish_reason").String(), Usage: usageOf(r.Get("usage"))}
	choice.Get("message.tool_calls").ForEach(func(_, c gjson.Result) bool {
		a.Calls = append(a.Calls, ToolCall{ID: c.Get("id").String(), Name: c.Get("function.name").String(),
			Arguments: c.Get("function.arguments").String()})
		return true
	})
	if a.Text == "" {
		a.Text = choice.Get("message.refusal").String()
	}
	return a
}

func usageOf(u gjson.Result) Usage {
	return Usage{Input: u.Get("prompt_tokens").Int(), Output: u.Get("completion_tokens").Int(),
		Cached: u.Get("prompt_tokens_details.cached_tokens").Int(), Reasoning: u.Get("completion_tokens_details.reasoning_tokens").Int()}
}

// CallDelta is a streamed piece of one tool call: its first piece names the call (ID and Name
// set); later ones carry more of its arguments.
type CallDelta struct {
	Index     int
	ID, Name  string
	Arguments string
}

// Delta is what one chat.completion.chunk adds to the answer.
type Delta struct {
	Text   string
	Calls  []CallDelta
	Finish string
	Usage  *Usage // set on the chunk that reports usage
}

// ReadChunk reads one chat.completion.chunk.
func ReadChunk(data []byte) Delta {
	r := gjson.ParseBytes(data)
	choice := r.Get("choices.0")
	d := Delta{Text: choice.Get("delta.content").String(), Finish: choice.Get("finish_reason").String()}
	if d.Text == "" {
		d.Text = choice.Get("delta.refusal").String()
	}
	choice.Get("delta.tool_calls").ForEach(func(_, c gjson.Result) bool {
		d.Calls = append(d.Calls, CallDelta{Index: int(c.Get("index").Int()), ID: c.Get("id").String(),
			Name: c.Get("function.name").String(), Arguments: c.Get("function.arguments").String()})
		return true
	})
	if u := r.Get("usage"); u.IsObject() {
		usage := usageOf(u)
		d.Usage = &usage
	}
	return d
}
