// Package chatanswer reads what an answer in the Chat Completions shape says — its text, tool
// calls, finish reason and usage — for the surfaces that answer in another shape (Anthropic
// Messages, OpenAI Responses): the completion core always hands back Chat Completions objects and
// chunks, and each of those surfaces rewrites them from what is read here.
package chatanswer

import (
	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/jsonview"
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

// Read reads a chat.completion object, without copying it: the Answer's strings may alias body.
func Read(body []byte) Answer {
	r := gjson.Parse(jsonview.String(body))
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

// ReadChunk reads one chat.completion.chunk, in one pass over it and without copying it: a
// stream's every chunk comes through here. The Delta's strings may alias data: a caller that keeps
// one past data's life clones it.
func ReadChunk(data []byte) Delta {
	var d Delta
	var refusal string
	gjson.Parse(jsonview.String(data)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			v.ForEach(func(_, choice gjson.Result) bool {
				choice.ForEach(func(k, v gjson.Result) bool {
					switch k.Str {
					case "finish_reason":
						d.Finish = v.String()
					case "delta":
						v.ForEach(func(k, v gjson.Result) bool {
							switch k.Str {
							case "content":
								d.Text = v.String()
							case "refusal":
								refusal = v.String()
							case "tool_calls":
								v.ForEach(func(_, c gjson.Result) bool {
									d.Calls = append(d.Calls, callDelta(c))
									return true
								})
							}
							return true
						})
					}
					return true
				})
				return false // the first choice only
			})
		case "usage":
			if v.IsObject() {
				u := usageOf(v)
				d.Usage = &u
			}
		}
		return true
	})
	if d.Text == "" {
		d.Text = refusal
	}
	return d
}

func callDelta(c gjson.Result) CallDelta {
	var cd CallDelta
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			cd.Index = int(v.Int())
		case "id":
			cd.ID = v.String()
		case "function":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "name":
					cd.Name = v.String()
				case "arguments":
					cd.Arguments = v.String()
				}
				return true
			})
		}
		return true
	})
	return cd
}
