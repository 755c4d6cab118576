package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// surface is one of the gateway's chat surfaces as the conformance matrix drives it: how a
// request is written on its wire, and how its answers, streams and errors read in the terms the
// matrix asserts for every surface alike. Every surface runs the same chain, so a new surface
// joins the matrix by adding its entry to surfaces — and cannot skip a row.
type surface struct {
	name string
	path string
	// request is the surface's body for the chain [first, second], streamed or not, with the chain's
	// redundancy options (raw JSON); usage asks for the usage report where the surface makes it optional.
	request func(first, second string, stream bool, redundancy string, usage bool) string
	// plain and stream read a 200 answer.
	plain, stream func(r *result) view
	// failure reads an error answer sent before any byte of a stream.
	failure func(r *result) failure
	// statuses is the status of each way a whole request fails.
	statuses map[failKind]int
	// errorType is what the surface says of each way a request fails: its error code, or for
	// the Messages wire (which has none) its error type; "" for a surface that says neither
	// (classic: its short title instead).
	errorType func(k failKind, providerCode string) string
	// v1 is a /v1 surface: X-SecureAI-* report headers on an answer, x-should-retry on every error.
	v1 bool
	// optionalUsage: a stream reports usage only when asked (Chat Completions' include_usage).
	optionalUsage bool
}

// failKind is how a request fails as a whole.
type failKind string

const (
	succeeds    failKind = ""
	rejected    failKind = "rejected"     // the provider's final 4xx, never a failover
	exhausted   failKind = "exhausted"    // every model failed, not all rate limited
	rateLimited failKind = "rate-limited" // every model was rate limited
)

// view is a 200 answer in the matrix's terms.
type view struct {
	model  string       // the served model the answer names (every chunk, event and object must agree)
	report gjson.Result // the failover report's container: secureai, or the classic metadata
	text   string
	tool   string // the first tool call as name(arguments), "" when none
	finish string // stop or tool_calls, as Chat Completions names them
	usage  bool   // usage was reported
	// Streams only.
	whole    bool         // ended with the surface's terminator and no error
	failure  gjson.Result // the error the stream ended with (its error object)
	problems []string     // what breaks the surface's own wire rules
}

func (v *view) problem(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// failure is an error answer in the matrix's terms.
type failure struct {
	errorType string       // as surface.errorType names it
	message   string       // the human message
	attempts  gjson.Result // the attempts made
	problems  []string
}

// surfaces are every chat surface the gateway serves.
var surfaces = []surface{chatSurface, classicSurface, messagesSurface, responsesSurface}

func marshal(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

const prompt = "Say hello"

// openAIErrorType is the code of OpenAI's envelope for each way a request fails.
func openAIErrorType(k failKind, providerCode string) string {
	if k == rejected {
		return providerCode
	}
	return "all_models_failed"
}

func openAIFailure(r *result) failure {
	j := r.json()
	f := failure{errorType: j.Get("error.code").String(), message: j.Get("error.message").String(), attempts: j.Get("error.attempts")}
	if j.Get("error.type").String() == "" || f.message == "" || !j.Get("error.param").Exists() {
		f.problems = append(f.problems, "not OpenAI's error envelope {error:{message,type,param,code}}: "+string(r.body))
	}
	return f
}

var chatSurface = surface{
	name: "chat", path: "/v1/chat/completions", v1: true, optionalUsage: true,
	request: func(first, second string, stream bool, redundancy string, usage bool) string {
		m := map[string]any{"models": []string{first, second}, "messages": []any{map[string]any{"role": "user", "content": prompt}},
			"redundancy": json.RawMessage(redundancy)}
		if stream {
			m["stream"] = true
			if usage {
				m["stream_options"] = map[string]any{"include_usage": true}
			}
		}
		return marshal(m)
	},
	plain: func(r *result) view {
		j := r.json()
		v := view{model: j.Get("model").String(), report: j.Get("secureai"), text: j.Get("choices.0.message.content").String(),
			finish: j.Get("choices.0.finish_reason").String(), usage: j.Get("usage").IsObject()}
		if c := j.Get("choices.0.message.tool_calls.0.function"); c.Exists() {
			v.tool = c.Get("name").String() + "(" + c.Get("arguments").String() + ")"
		}
		if j.Get("object").String() != "chat.completion" {
			v.problem("object %q, want chat.completion", j.Get("object"))
		}
		return v
	},
	stream: func(r *result) view {
		var v view
		var args strings.Builder
		usageChunks := 0
		for i, f := range r.frames {
			if f == "[DONE]" {
				if i != len(r.frames)-1 {
					v.problem("frames after [DONE]")
				}
				v.whole = !v.failure.Exists()
				continue
			}
			c := gjson.Parse(f)
			if e := c.Get("error"); e.Exists() {
				v.failure = e
				if e.Get("message").String() == "" || e.Get("type").String() == "" || e.Get("code").String() == "" {
					v.problem("error frame lacks message/type/code: %s", f)
				}
				if i != len(r.frames)-1 {
					v.problem("the error frame is not the last frame")
				}
				continue
			}
			if i == 0 {
				v.model, v.report = c.Get("model").String(), c.Get("secureai")
			} else if c.Get("secureai").Exists() {
				v.problem("chunk %d carries secureai; only the first chunk may", i)
			}
			if m := c.Get("model").String(); m != v.model {
				v.problem("chunk %d names model %q, the first %q", i, m, v.model)
			}
			v.text += c.Get("choices.0.delta.content").String()
			if tc := c.Get("choices.0.delta.tool_calls.0"); tc.Exists() {
				if n := tc.Get("function.name").String(); n != "" {
					v.tool = n
				}
				args.WriteString(tc.Get("function.arguments").String())
			}
			if fr := c.Get("choices.0.finish_reason"); fr.Type == gjson.String {
				v.finish = fr.Str
			}
			if c.Get("usage").IsObject() {
				usageChunks++
			}
		}
		if v.tool != "" {
			v.tool += "(" + args.String() + ")"
		}
		if usageChunks > 1 {
			v.problem("%d usage chunks", usageChunks)
		}
		v.usage = usageChunks == 1
		return v
	},
	failure:   openAIFailure,
	statuses:  map[failKind]int{rejected: 400, exhausted: 502, rateLimited: 429},
	errorType: openAIErrorType,
}

var classicSurface = surface{
	name: "classic", path: "/chat/completions",
	request: func(first, second string, stream bool, redundancy string, _ bool) string {
		m := map[string]any{"models": []string{first, second}, "messages": []any{map[string]any{"role": "user", "content": prompt}},
			"index": "Zero-Knowledge", "redundancy": json.RawMessage(redundancy)}
		if stream {
			m["stream"] = true
		}
		return marshal(m)
	},
	plain: func(r *result) view {
		j := r.json()
		v := view{model: j.Get("model").String(), report: j.Get("metadata"), text: j.Get("choices.0.message.content").String(),
			finish: j.Get("choices.0.finish_reason").String(), usage: j.Get("usage.total_tokens").Int() > 0}
		if c := j.Get("choices.0.message.tool_calls.0.function"); c.Exists() {
			v.tool = c.Get("name").String() + "(" + c.Get("arguments").String() + ")"
		}
		if !j.Get("success").Bool() || j.Get("object").String() != "chat.completion" {
			v.problem("not the classic envelope (success, object chat.completion): %s", r.body)
		}
		return v
	},
	stream: func(r *result) view {
		var v view
		var args strings.Builder
		for i, f := range r.frames {
			if f == "[DONE]" {
				if i != len(r.frames)-1 {
					v.problem("frames after [DONE]")
				}
				v.whole = !v.failure.Exists()
				continue
			}
			fr := gjson.Parse(f)
			d := fr.Get("data")
			switch typ := fr.Get("type").String(); {
			case i == 0 && typ != "metadata" && typ != "error": // a chain that failed after keep-alives has no metadata
				v.problem("the first frame is %q, want metadata", typ)
			case typ == "metadata":
				if i == 0 {
					v.model, v.report = d.Get("model").String(), d.Get("metadata")
				}
			case typ == "chunk":
				if m := d.Get("model").String(); m != v.model {
					v.problem("frame %d names model %q, the metadata %q", i, m, v.model)
				}
				v.text += d.Get("choices.0.delta.content").String()
				if tc := d.Get("choices.0.delta.tool_calls.0"); tc.Exists() {
					if n := tc.Get("function.name").String(); n != "" {
						v.tool = n
					}
					args.WriteString(tc.Get("function.arguments").String())
				}
				if fr := d.Get("choices.0.finish_reason"); fr.Type == gjson.String {
					v.finish = fr.Str
				}
			case typ == "usage":
				v.usage = d.Get("total_tokens").Int() > 0
			case typ == "error":
				v.failure = d
				if d.Get("success").Bool() || d.Get("message").String() == "" || d.Get("code").String() == "" || d.Get("error").String() == "" {
					v.problem("error frame lacks success:false/error/message/code: %s", f)
				}
				if i != len(r.frames)-1 {
					v.problem("the error frame is not the last frame")
				}
			default:
				v.problem("frame %d has type %q", i, typ)
			}
		}
		if v.tool != "" {
			v.tool += "(" + args.String() + ")"
		}
		return v
	},
	failure: func(r *result) failure {
		j := r.json()
		f := failure{message: j.Get("message").String(), attempts: j.Get("attempts")}
		if j.Get("success").Bool() || !j.Get("success").Exists() || j.Get("error").String() == "" || f.message == "" || j.Get("request_id").String() == "" {
			f.problems = append(f.problems, "not the classic error envelope {success:false,error,message,request_id}: "+string(r.body))
		}
		return f
	},
	statuses:  map[failKind]int{rejected: 400, exhausted: 502, rateLimited: 429},
	errorType: func(failKind, string) string { return "" },
}

var messagesSurface = surface{
	name: "messages", path: "/v1/messages", v1: true,
	request: func(first, second string, stream bool, redundancy string, _ bool) string {
		m := map[string]any{"model": first, "fallback_models": []string{second}, "max_tokens": 256,
			"messages": []any{map[string]any{"role": "user", "content": prompt}}, "redundancy": json.RawMessage(redundancy)}
		if stream {
			m["stream"] = true
		}
		return marshal(m)
	},
	plain: func(r *result) view {
		j := r.json()
		v := view{model: j.Get("model").String(), report: j.Get("secureai"), finish: stopReasons[j.Get("stop_reason").String()],
			usage: j.Get("usage.output_tokens").Int() > 0}
		for _, b := range j.Get("content").Array() {
			switch b.Get("type").String() {
			case "text":
				v.text += b.Get("text").String()
			case "tool_use":
				if v.tool == "" {
					v.tool = b.Get("name").String() + "(" + b.Get("input").Raw + ")"
				}
			}
		}
		if j.Get("type").String() != "message" || j.Get("role").String() != "assistant" || !strings.HasPrefix(j.Get("id").String(), "msg_") {
			v.problem("not a Messages message object: %s", r.body)
		}
		if v.finish == "" {
			v.problem("stop_reason %q", j.Get("stop_reason"))
		}
		return v
	},
	stream: func(r *result) view {
		var v view
		var args strings.Builder
		open := map[int64]string{} // content block index → type
		stopped := false
		for i, f := range r.frames {
			ev := gjson.Parse(f)
			typ := ev.Get("type").String()
			if r.events[i] != typ {
				v.problem("event %d is named %q but its data says %q", i, r.events[i], typ)
			}
			if i == 0 && typ != "message_start" {
				v.problem("the first event is %q, want message_start", typ)
			}
			if stopped {
				v.problem("event %q after message_stop", typ)
			}
			if v.failure.Exists() {
				v.problem("event %q after the error event", typ)
			}
			idx := ev.Get("index").Int()
			switch typ {
			case "message_start":
				m := ev.Get("message")
				v.model, v.report = m.Get("model").String(), m.Get("secureai")
				if i != 0 {
					v.problem("message_start at event %d", i)
				}
			case "ping":
			case "content_block_start":
				open[idx] = ev.Get("content_block.type").String()
				if cb := ev.Get("content_block"); cb.Get("type").String() == "tool_use" && v.tool == "" {
					v.tool = cb.Get("name").String()
				}
			case "content_block_delta":
				if open[idx] == "" {
					v.problem("a delta for content block %d, which is not open", idx)
				}
				d := ev.Get("delta")
				switch d.Get("type").String() {
				case "text_delta":
					v.text += d.Get("text").String()
				case "input_json_delta":
					args.WriteString(d.Get("partial_json").String())
				}
			case "content_block_stop":
				if open[idx] == "" {
					v.problem("content_block_stop for block %d, which is not open", idx)
				}
				delete(open, idx)
			case "message_delta":
				v.finish = stopReasons[ev.Get("delta.stop_reason").String()]
				v.usage = ev.Get("usage.output_tokens").Int() > 0
			case "message_stop":
				stopped = true
				v.whole = v.finish != "" && len(open) == 0
			case "error":
				v.failure = ev.Get("error")
				if ev.Get("error.type").String() == "" || ev.Get("error.message").String() == "" {
					v.problem("error event lacks error.type/message: %s", f)
				}
			default:
				v.problem("unknown event %q", typ)
			}
			if typ != "message_start" && strings.Contains(f, `"secureai"`) {
				v.problem("%s carries secureai; only message_start may", typ)
			}
		}
		if v.tool != "" {
			v.tool += "(" + args.String() + ")"
		}
		if v.failure.Exists() && v.finish != "" {
			v.problem("a failed stream sent a stop_reason (%s): it looks finished", v.finish)
		}
		return v
	},
	failure: func(r *result) failure {
		j := r.json()
		f := failure{errorType: j.Get("error.type").String(), message: j.Get("error.message").String(), attempts: j.Get("error.attempts")}
		if j.Get("type").String() != "error" || f.errorType == "" || f.message == "" {
			f.problems = append(f.problems, `not Anthropic's error envelope {"type":"error","error":{type,message}}: `+string(r.body))
		}
		return f
	},
	statuses: map[failKind]int{rejected: 400, exhausted: 529, rateLimited: 429},
	errorType: func(k failKind, _ string) string {
		return map[failKind]string{rejected: "invalid_request_error", exhausted: "overloaded_error", rateLimited: "rate_limit_error"}[k]
	},
}

// stopReasons are Anthropic's stop reasons as Chat Completions names them.
var stopReasons = map[string]string{"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop"}

var responsesSurface = surface{
	name: "responses", path: "/v1/responses", v1: true,
	request: func(first, second string, stream bool, redundancy string, _ bool) string {
		m := map[string]any{"model": first, "fallback_models": []string{second}, "input": prompt, "store": false,
			"redundancy": json.RawMessage(redundancy)}
		if stream {
			m["stream"] = true
		}
		return marshal(m)
	},
	plain: func(r *result) view {
		j := r.json()
		v := view{model: j.Get("model").String(), report: j.Get("secureai"), usage: j.Get("usage.output_tokens").Int() > 0}
		responseOutput(&v, j)
		if j.Get("object").String() != "response" || j.Get("status").String() != "completed" {
			v.problem("not a completed Response object: %s", r.body)
		}
		return v
	},
	stream: func(r *result) view {
		var v view
		var id string
		var args, deltas strings.Builder
		added := map[int64]bool{}
		for i, f := range r.frames {
			ev := gjson.Parse(f)
			typ := ev.Get("type").String()
			if r.events[i] != typ {
				v.problem("event %d is named %q but its data says %q", i, r.events[i], typ)
			}
			if n := ev.Get("sequence_number"); n.Type != gjson.Number || n.Int() != int64(i) {
				v.problem("event %d (%s) has sequence_number %s", i, typ, n.Raw)
			}
			if i == 0 && typ != "response.created" {
				v.problem("the first event is %q, want response.created", typ)
			}
			if v.whole || v.failure.Exists() {
				v.problem("event %q after the response ended", typ)
			}
			if resp := ev.Get("response"); resp.Exists() {
				// Every Response object of one stream is the same response, served by one model, with the report.
				if i == 0 {
					id, v.model, v.report = resp.Get("id").String(), resp.Get("model").String(), resp.Get("secureai")
				}
				if got := resp.Get("id").String(); got != id {
					v.problem("%s's response id %q differs from response.created's %q", typ, got, id)
				}
				if got := resp.Get("model").String(); got != v.model {
					v.problem("%s's response names model %q, response.created %q", typ, got, v.model)
				}
				if !resp.Get("secureai").Exists() {
					v.problem("%s's response lacks secureai", typ)
				}
			}
			switch typ {
			case "response.output_item.added":
				added[ev.Get("output_index").Int()] = true
				if it := ev.Get("item"); it.Get("type").String() == "function_call" && v.tool == "" {
					v.tool = it.Get("name").String()
				}
			case "response.output_item.done":
				if !added[ev.Get("output_index").Int()] {
					v.problem("output_item.done for output %d, never added", ev.Get("output_index").Int())
				}
				delete(added, ev.Get("output_index").Int())
			case "response.output_text.delta":
				deltas.WriteString(ev.Get("delta").String())
			case "response.function_call_arguments.delta":
				args.WriteString(ev.Get("delta").String())
			case "response.completed":
				resp := ev.Get("response")
				v.whole = resp.Get("status").String() == "completed" && len(added) == 0
				v.usage = resp.Get("usage.output_tokens").Int() > 0
				var final view
				responseOutput(&final, resp)
				if final.text != deltas.String() {
					v.problem("response.completed's output says %q, the deltas %q", final.text, deltas.String())
				}
				v.finish = final.finish
			case "response.failed":
				resp := ev.Get("response")
				v.failure = resp.Get("error")
				if resp.Get("status").String() != "failed" || v.failure.Get("code").String() == "" || v.failure.Get("message").String() == "" {
					v.problem("response.failed lacks status failed / error.code / error.message: %s", f)
				}
			case "error":
				v.problem("an error event: Codex does not understand it (response.failed is the terminal failure)")
			}
		}
		v.text = deltas.String()
		if v.tool != "" {
			v.tool += "(" + args.String() + ")"
		}
		return v
	},
	failure:   openAIFailure,
	statuses:  map[failKind]int{rejected: 400, exhausted: 502, rateLimited: 429},
	errorType: openAIErrorType,
}

// responseOutput reads a Response object's output into v: its text, first function call and
// finish.
func responseOutput(v *view, resp gjson.Result) {
	v.finish = "stop"
	for _, it := range resp.Get("output").Array() {
		switch it.Get("type").String() {
		case "message":
			for _, p := range it.Get("content").Array() {
				if p.Get("type").String() == "output_text" {
					v.text += p.Get("text").String()
				}
			}
		case "function_call":
			if v.tool == "" {
				v.tool = it.Get("name").String() + "(" + it.Get("arguments").String() + ")"
			}
			v.finish = "tool_calls"
		}
	}
}

// header is the Authorization header for secret.
func bearer(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }
