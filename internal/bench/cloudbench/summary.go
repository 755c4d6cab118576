package cloudbench

import (
	"cmp"
	"slices"
	"time"
)

// PhaseRounds are one request's sequential round trips in each phase: all AWS calls, and the
// DynamoDB calls alone.
type PhaseRounds struct {
	Before, BeforeDynamo int
	During               int
	After, AfterDynamo   int
}

// RoundsOf counts r's sequential rounds per phase.
func RoundsOf(r Request) PhaseRounds {
	p := r.Split()
	return PhaseRounds{
		Before: Rounds(p.Before), BeforeDynamo: Rounds(OnlyDynamoDB(p.Before)),
		During: Rounds(p.During),
		After:  Rounds(p.After), AfterDynamo: Rounds(OnlyDynamoDB(p.After)),
	}
}

// Stat is the median and the maximum of a count over requests.
type Stat struct{ Median, Max int }

// StatOf returns the median (the lower middle of an even count) and the maximum of v.
func StatOf(v []int) Stat {
	if len(v) == 0 {
		return Stat{}
	}
	s := slices.Sorted(slices.Values(v))
	return Stat{Median: s[(len(s)-1)/2], Max: s[len(s)-1]}
}

// OpCount is how often an operation was called per request, on average, in each phase.
type OpCount struct {
	Op                                string
	Before, During, After, Background float64
}

// Total is the calls per request in all phases.
func (o OpCount) Total() float64 { return o.Before + o.During + o.After + o.Background }

// CallsPerRequest averages each operation's calls over reqs, by phase; stray calls (between
// invocations) count as Background. Operations come sorted by name.
func CallsPerRequest(reqs []Request, stray []Span) []OpCount {
	if len(reqs) == 0 {
		return nil
	}
	counts := map[string]*OpCount{}
	add := func(spans []Span, field func(*OpCount) *float64) {
		for _, s := range spans {
			c := counts[s.Op]
			if c == nil {
				c = &OpCount{Op: s.Op}
				counts[s.Op] = c
			}
			*field(c)++
		}
	}
	for _, r := range reqs {
		p := r.Split()
		add(p.Before, func(c *OpCount) *float64 { return &c.Before })
		add(p.During, func(c *OpCount) *float64 { return &c.During })
		add(p.After, func(c *OpCount) *float64 { return &c.After })
	}
	add(stray, func(c *OpCount) *float64 { return &c.Background })
	var out []OpCount
	n := float64(len(reqs))
	for _, c := range counts {
		out = append(out, OpCount{Op: c.Op, Before: c.Before / n, During: c.During / n, After: c.After / n, Background: c.Background / n})
	}
	slices.SortFunc(out, func(a, b OpCount) int { return cmp.Compare(a.Op, b.Op) })
	return out
}

// Slope is the number of sequential round trips a latency change implies: (b − a) / (db − da).
func Slope(a, b, da, db time.Duration) float64 {
	if db == da {
		return 0
	}
	return float64(b-a) / float64(db-da)
}

// Median returns the request whose latency is the median of reqs (the lower middle), for a
// representative call order.
func Median(reqs []Request) (Request, bool) {
	if len(reqs) == 0 {
		return Request{}, false
	}
	s := slices.Clone(reqs)
	slices.SortFunc(s, func(a, b Request) int { return cmp.Compare(a.End.Sub(a.Start), b.End.Sub(b.Start)) })
	return s[(len(s)-1)/2], true
}
