// Package limits enforces a key's request limits: requests per minute, hour, day and month, each a
// fixed calendar window in UTC. A request is counted in every window at once and only if every
// window has room, so a refused request costs the caller nothing and counts stay exact under any
// concurrency. This package holds the windows, their refusal (Refuse) and the counts a key's
// usage shows (Limiter, over a Counter); a request is counted by internal/ledger, in the same
// atomic step that holds its reservation: under Memory's lock for the single local process
// (persisted to the embedded store), in one DynamoDB transaction in the cloud (fleet-wide).
package limits

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// Period is the length of a window.
type Period uint8

// The four windows of SPEC 7, shortest first: a refusal names the shortest full window, whose
// reset comes soonest.
const (
	Minute Period = iota
	Hour
	Day
	Month
)

var periodNames = [...]string{Minute: "minute", Hour: "hour", Day: "day", Month: "month"}

func (p Period) String() string {
	if int(p) < len(periodNames) {
		return periodNames[p]
	}
	return "period(" + strconv.Itoa(int(p)) + ")"
}

// ParsePeriod is the inverse of String.
func ParsePeriod(s string) (Period, error) {
	for i, n := range periodNames {
		if n == s {
			return Period(i), nil
		}
	}
	return 0, fmt.Errorf("limits: unknown period %q", s)
}

// Start is the start of the window of this period that contains t (UTC calendar windows).
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	switch p {
	case Minute:
		return t.Truncate(time.Minute)
	case Hour:
		return t.Truncate(time.Hour)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	default:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
}

// End is when the window starting at start ends.
func (p Period) End(start time.Time) time.Time {
	switch p {
	case Minute:
		return start.Add(time.Minute)
	case Hour:
		return start.Add(time.Hour)
	case Day:
		return start.AddDate(0, 0, 1)
	default:
		return start.AddDate(0, 1, 0)
	}
}

// Window is one counted window of one key.
type Window struct {
	Period Period
	Start  time.Time
	Limit  apikey.Limit // apikey.NoLimit: counted, never full
}

// End is when the window resets.
func (w Window) End() time.Time { return w.Period.End(w.Start) }

// ID names the window's record for keyID: the window start is part of it, so a new window starts
// at zero with no reset, and an old record is simply never read again (DynamoDB's TTL removes it).
func (w Window) ID(keyID string) string {
	return keyID + "#" + w.Period.String() + "#" + strconv.FormatInt(w.Start.Unix(), 10)
}

// Windows returns the key's four windows at now, shortest first, with its effective limits.
func Windows(key *apikey.Key, now time.Time) []Window {
	l := key.Limits()
	limit := [...]apikey.Limit{Minute: l.PerMinute, Hour: l.PerHour, Day: l.PerDay, Month: l.PerMonth}
	ws := make([]Window, len(limit))
	for p := range ws {
		ws[p] = Window{Period: Period(p), Start: Period(p).Start(now), Limit: limit[p]}
	}
	return ws
}

// Counter reads the requests counted per window. Requests are counted by a completion's
// admission (internal/ledger), in the same atomic write as its reservation.
type Counter interface {
	// RequestCounts returns each window's count, 0 for a window never counted.
	RequestCounts(ctx context.Context, keyID string, ws []Window) ([]int, error)
}

// Limiter reports keys' limits through a Counter.
type Limiter struct {
	Counter Counter
}

// Exceeded is the cause inside Refuse's *fault.Error: which window is full and when it resets.
// Surfaces read it with errors.As for the body's reset_time.
type Exceeded struct {
	Period    Period
	Limit     int
	ResetTime time.Time
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("limits: %d requests per %s reached until %s", e.Limit, e.Period, e.ResetTime.Format(time.RFC3339))
}

// Refuse is a counter's answer as the caller sees it: nil for an admitted request (full < 0), a
// *fault.Error of kind Unavailable for a counter that failed, and for ws[full] full a *fault.Error
// of kind RateLimited (title "Rate limit exceeded: too many requests per <period>", Retry-After
// until the window resets, cause *Exceeded).
func Refuse(ws []Window, full int, err error, now time.Time) error {
	if err != nil {
		return fault.Dependency("the request limit store", "The request limit store cannot be reached; try again", err)
	}
	if full < 0 {
		return nil
	}
	w := ws[full]
	ex := &Exceeded{Period: w.Period, Limit: int(w.Limit), ResetTime: w.End()}
	title := "Rate limit exceeded: too many requests per " + w.Period.String()
	msg := fmt.Sprintf("This API key may make %d requests per %s; the limit resets at %s",
		w.Limit, w.Period, ex.ResetTime.Format(time.RFC3339))
	retry := time.Duration(math.Ceil(ex.ResetTime.Sub(now).Seconds())) * time.Second
	f := fault.New(fault.RateLimited, title, msg).WithCode("rate_limit_exceeded").WithRetryAfter(max(retry, time.Second)).Wrap(ex)
	f.ResetAt = ex.ResetTime
	return f
}

// Full is the refusal admission would give key at now (Refuse's error) when one of its windows
// is full, nil when every window has room; it reads the counts and counts nothing.
func (l *Limiter) Full(ctx context.Context, key *apikey.Key, now time.Time) error {
	ws := Windows(key, now)
	counts, err := l.Counter.RequestCounts(ctx, key.ID, ws)
	if err != nil {
		return Refuse(ws, -1, err, now)
	}
	for i, w := range ws {
		if w.Limit.Refuses(counts[i]) {
			return Refuse(ws, i, nil, now)
		}
	}
	return nil
}

// WindowUsage is one window as GET /usage shows it.
type WindowUsage struct {
	Period    Period
	Limit     apikey.Limit
	Used      int
	ResetTime time.Time
}

// Remaining is how many more requests the window admits; false for a window with no limit.
func (u WindowUsage) Remaining() (int, bool) {
	if u.Limit == apikey.NoLimit {
		return 0, false
	}
	return max(0, int(u.Limit)-u.Used), true
}

// Usage returns the key's windows at now with their counts, shortest first.
func (l *Limiter) Usage(ctx context.Context, key *apikey.Key, now time.Time) ([]WindowUsage, error) {
	ws := Windows(key, now)
	counts, err := l.Counter.RequestCounts(ctx, key.ID, ws)
	if err != nil {
		return nil, Refuse(ws, -1, err, now) // an outage to retry, or the deployment's to fix
	}
	out := make([]WindowUsage, len(ws))
	for i, w := range ws {
		out[i] = WindowUsage{Period: w.Period, Limit: w.Limit, Used: counts[i], ResetTime: w.End()}
	}
	return out, nil
}
