package cloudbench

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// span is a call from ms a to ms b after t0.
func span(op string, a, b int) Span {
	return Span{Op: op, Arrive: t0.Add(time.Duration(a) * time.Millisecond), Answer: t0.Add(time.Duration(b) * time.Millisecond)}
}

func TestRoundsCountsSequentialCallsAndOverlappingOnesAsOne(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spans []Span
		want  int
	}{
		{"no calls", nil, 0},
		{"one call", []Span{span("a", 0, 10)}, 1},
		{"three calls in flight at once are one round", []Span{span("a", 0, 10), span("b", 1, 11), span("c", 2, 9)}, 1},
		{"a call after another answered is a second round", []Span{span("a", 0, 10), span("b", 10, 20)}, 2},
		{"a parallel round then one call", []Span{span("a", 0, 10), span("b", 0, 12), span("c", 13, 20)}, 2},
		{"a chain bridged by a long call still counts its sequential calls", []Span{span("long", 0, 30), span("a", 1, 10), span("b", 11, 20), span("c", 21, 29)}, 3},
		{"order of the records does not matter", []Span{span("b", 10, 20), span("c", 20, 30), span("a", 0, 10)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rounds(tc.spans); got != tc.want {
				t.Errorf("Rounds = %d, want %d", got, tc.want)
			}
		})
	}
}

func ops(spans []Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Op)
	}
	return out
}

func TestSplitSeparatesCallsBeforeDuringAndAfterTheAttempts(t *testing.T) {
	r := Request{
		Calls:    []Span{span("key", 0, 5), span("admit", 6, 10), span("breaker", 22, 24), span("settle", 41, 45)},
		Attempts: []Span{span("fail", 11, 20), span("ok", 25, 40)},
	}
	p := r.Split()
	if !slices.Equal(ops(p.Before), []string{"key", "admit"}) || !slices.Equal(ops(p.During), []string{"breaker"}) || !slices.Equal(ops(p.After), []string{"settle"}) {
		t.Errorf("before %v, during %v, after %v", ops(p.Before), ops(p.During), ops(p.After))
	}
	if got := (Request{Calls: []Span{span("key", 0, 5)}}).Split(); len(got.Before) != 1 {
		t.Errorf("without attempts every call is before: %+v", got)
	}
}

func TestAssignGivesEachCallToTheInvocationItArrivedIn(t *testing.T) {
	reqs := []Request{
		{Start: t0, End: t0.Add(10 * time.Millisecond)},
		{Start: t0.Add(20 * time.Millisecond), End: t0.Add(30 * time.Millisecond)},
	}
	stray := Assign(reqs, []Span{span("a", 1, 2), span("b", 12, 13), span("c", 20, 21), span("d", 30, 31)}, []Span{span("up", 25, 26)})
	if !slices.Equal(ops(reqs[0].Calls), []string{"a"}) || !slices.Equal(ops(reqs[1].Calls), []string{"c", "d"}) || !slices.Equal(ops(reqs[1].Attempts), []string{"up"}) {
		t.Errorf("first %v, second %v %v", ops(reqs[0].Calls), ops(reqs[1].Calls), ops(reqs[1].Attempts))
	}
	if !slices.Equal(ops(stray), []string{"b"}) {
		t.Errorf("stray %v, want the call between the invocations", ops(stray))
	}
}
