package cloudbench

import (
	"slices"
	"time"
)

// Span is one timed call: an AWS call at the delay proxy or an attempt at the fake upstream.
type Span struct {
	Op     string        // the AWS operation (Operation), or the upstream model of an attempt
	Detail string        // what it touched: tables, secret, queue, bus
	Arrive time.Time     // when the request arrived
	Answer time.Time     // when its answer was written
	Held   time.Duration // how long the delay proxy really held it before forwarding (≥ D)
}

// Rounds is the number of sequential round trips in spans: the longest chain of spans each of
// which arrived after the one before it was answered. Spans that overlap in time are one round;
// spans that do not are sequential.
func Rounds(spans []Span) int {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b Span) int { return a.Arrive.Compare(b.Arrive) })
	depth := make([]int, len(s))
	longest := 0
	for i := range s {
		depth[i] = 1
		for j := range i {
			if !s[j].Answer.After(s[i].Arrive) && depth[j]+1 > depth[i] {
				depth[i] = depth[j] + 1
			}
		}
		longest = max(longest, depth[i])
	}
	return longest
}

// Request is one invocation as the benchmark saw it: from the invoke's start to its answer, the
// AWS calls that arrived in between and the upstream attempts.
type Request struct {
	Start, End time.Time
	Calls      []Span
	Attempts   []Span
}

// Phases are a request's AWS calls split around its upstream attempts.
type Phases struct {
	Before []Span // arrived before the first attempt did
	During []Span // arrived while the attempts ran (between the first's arrival and the last's answer)
	After  []Span // arrived after the last attempt was answered
}

// Split splits the request's calls around its attempts; without attempts every call is Before.
func (r Request) Split() Phases {
	var p Phases
	if len(r.Attempts) == 0 {
		p.Before = slices.Clone(r.Calls)
		return p
	}
	first, last := r.Attempts[0].Arrive, r.Attempts[0].Answer
	for _, a := range r.Attempts[1:] {
		if a.Arrive.Before(first) {
			first = a.Arrive
		}
		if a.Answer.After(last) {
			last = a.Answer
		}
	}
	for _, c := range r.Calls {
		switch {
		case c.Arrive.Before(first):
			p.Before = append(p.Before, c)
		case c.Arrive.Before(last):
			p.During = append(p.During, c)
		default:
			p.After = append(p.After, c)
		}
	}
	return p
}

// Assign hands each call and attempt to the request whose window (Start to End) holds its
// arrival; requests must not overlap. What arrived outside every window (after a response, in
// the background) is returned as stray.
func Assign(reqs []Request, calls, attempts []Span) (stray []Span) {
	find := func(t time.Time) *Request {
		i, _ := slices.BinarySearchFunc(reqs, t, func(r Request, t time.Time) int { return r.Start.Compare(t) })
		// reqs[i-1] is the last request that started at or before t (or reqs[i] starts exactly at t).
		for _, k := range []int{i, i - 1} {
			if k >= 0 && k < len(reqs) && !t.Before(reqs[k].Start) && !t.After(reqs[k].End) {
				return &reqs[k]
			}
		}
		return nil
	}
	for _, c := range calls {
		if r := find(c.Arrive); r != nil {
			r.Calls = append(r.Calls, c)
		} else {
			stray = append(stray, c)
		}
	}
	for _, a := range attempts {
		if r := find(a.Arrive); r != nil {
			r.Attempts = append(r.Attempts, a)
		}
	}
	return stray
}

// OnlyDynamoDB keeps the DynamoDB calls of spans.
func OnlyDynamoDB(spans []Span) []Span {
	return slices.DeleteFunc(slices.Clone(spans), func(s Span) bool { return !IsDynamoDB(s.Op) })
}
