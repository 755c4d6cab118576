package cloudbench

import "testing"

func TestCheckOutputWantsA200AndAWholeStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    string
		stream bool
		ok     bool
	}{
		{"a streamed 200", `{"statusCode":200,"headers":{}}` + "\x00\x00\x00\x00\x00\x00\x00\x00" + "data: {}\n\ndata: [DONE]\n\n", true, true},
		{"a streamed 200 cut short", `{"statusCode":200}` + "\x00\x00\x00\x00\x00\x00\x00\x00" + "data: {}\n\n", true, false},
		{"a plain 200 over the streaming integration", `{"statusCode":200}` + "\x00\x00\x00\x00\x00\x00\x00\x00" + `{"id":"x"}`, false, true},
		{"a 401", `{"statusCode":401}` + "\x00\x00\x00\x00\x00\x00\x00\x00" + `{"error":{}}`, false, false},
		{"a buffered 200", `{"statusCode":200,"body":"{}"}`, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckOutput([]byte(tc.out), tc.stream); (err == nil) != tc.ok {
				t.Errorf("CheckOutput = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
