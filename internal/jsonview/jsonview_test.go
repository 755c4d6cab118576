package jsonview

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestFieldsReadsWhatGetManyReads(t *testing.T) {
	names := []string{"model", "messages", "stream", "stream_options.include_usage", "models", "absent", "n.a.b", "mod"}
	for _, body := range []string{
		`{}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"stream_options":{"other":1},"models":["a","b"],"model":null,"n":{"a":{"b":"deep"}}}`,
		`{"model":"first","model":"second","stream_options":{},"stream_options":{"include_usage":true}}`, // first wins
		`{"mod\u0065l":"escaped key","mode":"not model","modelx":1,"stream":"yes"}`,
		`  {"stream" : false , "messages" : [] }  `,
		`[{"model":"not an object"}]`,
	} {
		got, want := make([]gjson.Result, len(names)), gjson.GetMany(body, names...)
		Fields(got, body, names...)
		for i := range names {
			if got[i].Raw != want[i].Raw || got[i].Type != want[i].Type || got[i].Exists() != want[i].Exists() {
				t.Errorf("%s: %q = %#v, gjson.GetMany reads %#v", body, names[i], got[i], want[i])
			}
		}
	}
}
