// Package wirecheck checks JSON bodies and named SSE streams in tests by value: a Want maps gjson
// paths to the JSON value expected there (key order and spacing do not matter), and ParseSSE
// splits an event stream of the Anthropic Messages or OpenAI Responses kind into its frames. The
// surfaces that translate one wire into another (messagesapi, responsesapi) state their rules
// with it, so a test says what a body means rather than which bytes it has.
package wirecheck

import (
	"bufio"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Absent, as a Want value, says the path must not exist.
const Absent = "<absent>"

// Want maps a gjson path (modifiers allowed, e.g. "arguments|@fromstr") to the JSON value
// expected there, or to Absent.
type Want map[string]string

// Check reports every path of w whose value in doc differs, and doc itself when one did.
func (w Want) Check(t testing.TB, doc gjson.Result) {
	t.Helper()
	failed := false
	for _, path := range slices.Sorted(keys(w)) {
		got := doc.Get(path)
		switch {
		case w[path] == Absent:
			if got.Exists() {
				t.Errorf("%s = %s, want it absent", path, got.Raw)
				failed = true
			}
		case !SameJSON(got.Raw, w[path]):
			raw := got.Raw
			if raw == "" {
				raw = "(nothing)"
			}
			t.Errorf("%s = %s, want %s", path, raw, w[path])
			failed = true
		}
	}
	if failed {
		t.Logf("in %s", doc.Raw)
	}
}

func keys(w Want) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range w {
			if !yield(k) {
				return
			}
		}
	}
}

// SameJSON says whether two JSON texts hold the same value; an invalid one matches nothing.
func SameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// Event is one frame of a named event stream.
type Event struct {
	Name string
	Data gjson.Result
}

// ParseSSE splits body into its frames. Every frame must have an event name and JSON data
// whose type member is that name, as the Anthropic and OpenAI SDKs expect of these streams.
func ParseSSE(t testing.TB, body string) []Event {
	t.Helper()
	var out []Event
	var name string
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if !json.Valid([]byte(data)) {
				t.Fatalf("frame %d (%s) is not JSON: %s", len(out), name, data)
			}
			e := Event{Name: name, Data: gjson.Parse(data)}
			if typ := e.Data.Get("type").String(); name == "" || typ != name {
				t.Fatalf("frame %d: event %q with data of type %q", len(out), name, typ)
			}
			out = append(out, e)
			name = ""
		case line == "":
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return out
}

// Names are the events' names in order.
func Names(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
	}
	return out
}
