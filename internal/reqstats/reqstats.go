// Package reqstats counts completed chat requests over time, for the console's requests chart:
// nothing else the gateway keeps (limit windows per key, receipts of served answers, audit entries
// of failures) can say how many requests ended in a given minute.
//
// Each process counts in memory (Counter, a completion.Observer: one atomic add on the answer's
// path) and flushes its counts to a Store off that path, at most once per flush interval, as
// additive per-minute and per-hour buckets: concurrent flushes from many processes add up, and
// no process reads before it writes. Buckets expire after Retention. The admin route
// (Handler) reads the last hour as 60 minute buckets, the last day as 24 hour buckets and the last
// week as 168 hour buckets.
package reqstats

import (
	"context"
	"time"
)

// Surface is the API a request came through.
type Surface uint8

// Surfaces.
const (
	OpenAI    Surface = iota // POST /v1/chat/completions
	Classic                  // POST /chat/completions
	Messages                 // POST /v1/messages
	Responses                // POST /v1/responses
	nSurfaces
)

// Outcome is how a request ended.
type Outcome uint8

// Outcomes.
const (
	Served Outcome = iota // a model answered
	Failed                // refused or failed: no model's answer was delivered
	nOutcomes
)

var (
	surfaceNames = [nSurfaces]string{"openai", "classic", "messages", "responses"}
	outcomeNames = [nOutcomes]string{"served", "failed"}
)

func (s Surface) String() string { return surfaceNames[s] }
func (o Outcome) String() string { return outcomeNames[o] }

// Counts are requests by surface and outcome.
type Counts [nSurfaces][nOutcomes]int64

// Add adds o's counts to c.
func (c *Counts) Add(o *Counts) {
	for s := range c {
		for k := range c[s] {
			c[s][k] += o[s][k]
		}
	}
}

// Zero reports whether c counts nothing.
func (c *Counts) Zero() bool { return *c == Counts{} }

// Resolution is a bucket's length.
type Resolution uint8

// Resolutions.
const (
	Minute Resolution = iota
	Hour
)

// Duration is the bucket length of r.
func (r Resolution) Duration() time.Duration {
	if r == Hour {
		return time.Hour
	}
	return time.Minute
}

func (r Resolution) String() string {
	if r == Hour {
		return "hour"
	}
	return "minute"
}

// Retention is how long a stored bucket is kept: a week's chart and a day's margin.
const Retention = 8 * 24 * time.Hour

// Bucket is the requests that ended in [Start, Start+Res.Duration()).
type Bucket struct {
	Res   Resolution
	Start time.Time // UTC, a multiple of Res.Duration()
	N     Counts
}

// Expires is when a bucket's stored row may be removed.
func (b Bucket) Expires() time.Time { return b.Start.Add(b.Res.Duration() + Retention) }

// Store keeps the buckets. Both implementations run the contract in internal/testkit/storetest.
type Store interface {
	// AddRequestStats adds each bucket's counts to the stored bucket of the same resolution and
	// start (creating it), so concurrent adds from several processes sum exactly. On an error some
	// buckets may have been added: a *PartialError names those that were not (any other error:
	// none was).
	AddRequestStats(ctx context.Context, bs []Bucket) error
	// RequestStats returns the stored buckets of resolution res starting in [from, to), oldest
	// first; a bucket nothing was added to is absent.
	RequestStats(ctx context.Context, res Resolution, from, to time.Time) ([]Bucket, error)
}

// PartialError is AddRequestStats' error when only some buckets were added.
type PartialError struct {
	Failed []Bucket // the buckets not added
	Err    error
}

func (e *PartialError) Error() string {
	return "reqstats: some buckets were not added: " + e.Err.Error()
}
func (e *PartialError) Unwrap() error { return e.Err }

// Range is a chart's span: how far back it reaches and its buckets' resolution.
type Range struct {
	Name string
	Res  Resolution
	N    int // buckets
}

// Ranges are the spans the admin route serves.
var Ranges = []Range{{"hour", Minute, 60}, {"day", Hour, 24}, {"week", Hour, 168}}

// Series returns the range's buckets ending with the one holding now, oldest first, every one
// present (zero where nothing was stored).
func Series(ctx context.Context, st Store, rg Range, now time.Time) ([]Bucket, error) {
	d := rg.Res.Duration()
	last := now.UTC().Truncate(d)
	from := last.Add(-time.Duration(rg.N-1) * d)
	stored, err := st.RequestStats(ctx, rg.Res, from, last.Add(d))
	if err != nil {
		return nil, err
	}
	out := make([]Bucket, rg.N)
	for i := range out {
		out[i] = Bucket{Res: rg.Res, Start: from.Add(time.Duration(i) * d)}
	}
	for _, b := range stored {
		if i := int(b.Start.Sub(from) / d); i >= 0 && i < rg.N {
			out[i].N.Add(&b.N)
		}
	}
	return out, nil
}
