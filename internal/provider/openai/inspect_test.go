package openai

import "testing"

func TestInspect(t *testing.T) {
	const pre = `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[`
	cases := []struct {
		name                       string
		data                       string
		content, finish, usageOnly bool
		usage                      bool
		failed                     bool
	}{
		{"role-only", pre + `{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`, false, false, false, false, false},
		{"role-and-empty-content", pre + `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, false, false, false, false, false},
		{"null-content", pre + `{"index":0,"delta":{"content":null}}]}`, false, false, false, false, false},
		{"content", pre + `{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`, true, false, false, false, false},
		{"whitespace-content-counts", pre + `{"index":0,"delta":{"content":" "}}]}`, true, false, false, false, false},
		{"refusal", pre + `{"index":0,"delta":{"refusal":"I can't"}}]}`, true, false, false, false, false},
		{"empty-refusal", pre + `{"index":0,"delta":{"refusal":""}}]}`, false, false, false, false, false},
		{"tool-calls", pre + `{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`, true, false, false, false, false},
		{"empty-tool-calls", pre + `{"index":0,"delta":{"tool_calls":[]}}]}`, false, false, false, false, false},
		{"content-in-second-choice", pre + `{"index":0,"delta":{}},{"index":1,"delta":{"content":"x"}}]}`, true, false, false, false, false},
		{"finish", pre + `{"index":0,"delta":{},"finish_reason":"stop"}]}`, false, true, false, false, false},
		{"finish-with-content", pre + `{"index":0,"delta":{"content":"."},"finish_reason":"length"}]}`, true, true, false, false, false},
		{"usage-only", pre + `],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, false, false, true, true, false},
		{"usage-with-choice", pre + `{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`, false, true, false, true, false},
		{"null-usage", pre + `{"index":0,"delta":{"content":"a"}}],"usage":null}`, true, false, false, false, false},
		{"keep-alive-object", `{}`, false, false, false, false, false},
		{"empty-finish-reason-is-no-finish", pre + `{"index":0,"delta":{"content":"a"},"finish_reason":""}]}`, true, false, false, false, false},
		// The first of a repeated name counts, as a lookup finds it.
		{"repeated-choices-first-counts", pre + `{"index":0,"delta":{"content":"a"}}],"choices":[]}`, true, false, false, false, false},
		{"repeated-delta-first-counts", pre + `{"index":0,"delta":{},"delta":{"content":"a"}}]}`, false, false, false, false, false},
		{"error", `{"error":{"message":"overloaded","type":"server_error"}}`, false, false, false, false, true},
		{"null-error", pre + `{"index":0,"delta":{"content":"a"}}],"error":null}`, true, false, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, failed := inspect([]byte(tc.data))
			if failed != tc.failed {
				t.Errorf("failed = %v, want %v", failed, tc.failed)
			}
			if string(c.Data) != tc.data {
				t.Errorf("Data altered: %s", c.Data)
			}
			if c.Content != tc.content || c.Finish != tc.finish || c.UsageOnly != tc.usageOnly || (c.Usage != nil) != tc.usage {
				t.Errorf("Content=%v Finish=%v UsageOnly=%v Usage=%v; want %v %v %v %v", c.Content, c.Finish, c.UsageOnly, c.Usage != nil, tc.content, tc.finish, tc.usageOnly, tc.usage)
			}
			if tc.usage && (c.Usage.PromptTokens != 3 || c.Usage.CompletionTokens != 4) {
				t.Errorf("usage %+v", c.Usage)
			}
		})
	}
}
