package wirecheck

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// recorder keeps what a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(f string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(f, args...))
}
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...) }

func TestWantComparesValuesNotBytes(t *testing.T) {
	doc := gjson.Parse(`{"a":{"x":1,"y":[1,2]},"s":"{\"k\": true}","n":null}`)
	r := &recorder{}
	Want{"a": `{ "y": [1, 2], "x": 1.0 }`, "s|@fromstr": `{"k":true}`, "n": `null`, "missing": Absent}.Check(r, doc)
	if len(r.errors) != 0 {
		t.Errorf("equal values reported: %q", r.errors)
	}
	r.errors = nil
	Want{"a.x": `2`, "n": Absent, "missing": `1`, "a.y": `[2,1]`}.Check(r, doc)
	if len(r.errors) != 4 {
		t.Errorf("want 4 differences reported, got %q", r.errors)
	}
}

func TestParseSSEReadsNamedFrames(t *testing.T) {
	evs := ParseSSE(t, "event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	if got := Names(evs); !slices.Equal(got, []string{"ping", "message_stop"}) {
		t.Errorf("names %q", got)
	}
	r := &recorder{}
	ParseSSE(r, "event: ping\ndata: {\"type\":\"pong\"}\n\n")
	if len(r.errors) == 0 {
		t.Error("a frame whose type is not its event name passed")
	}
}
