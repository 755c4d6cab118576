package limits

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Memory is an exact Counter for one process: one mutex, one map entry per key and period, no
// I/O per request. It is the local server's counter; the embedded store is locked to one process,
// so no other process counts the same keys.
//
// Durability: Persist writes every live count to a Persister, and PersistEvery does so on a
// timer and once more when its context ends (a clean shutdown). A restart restores them, so after
// a clean shutdown no count is lost, and after a crash at most the requests admitted in the last
// persist interval are forgotten (the counts are then that much low, never high).
type Memory struct {
	mu     sync.Mutex
	counts map[slot]count
}

type slot struct {
	keyID  string
	period Period
}

type count struct {
	start time.Time
	n     int
}

// NewMemory returns an empty counter.
func NewMemory() *Memory { return &Memory{counts: make(map[slot]count)} }

// TakeRequestWith counts one request like TakeRequest, but only if with (when not nil) succeeds:
// it runs under the counter's lock once every window is known to have room, and its error is
// returned with nothing counted. The local ledger charges a request's reservation there, so the
// request is counted and charged together or not at all, and no concurrent request sees a window
// count a request that is then refused.
func (m *Memory) TakeRequestWith(_ context.Context, keyID string, ws []Window, with func() error) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, w := range ws {
		if w.Limit.Refuses(m.countLocked(keyID, w)) {
			return i, nil
		}
	}
	if with != nil {
		if err := with(); err != nil {
			return -1, err
		}
	}
	for _, w := range ws {
		s := slot{keyID, w.Period}
		m.counts[s] = count{start: w.Start, n: m.countLocked(keyID, w) + 1}
	}
	return -1, nil
}

// RequestCounts implements Counter.
func (m *Memory) RequestCounts(_ context.Context, keyID string, ws []Window) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = m.countLocked(keyID, w)
	}
	return out, nil
}

// countLocked is the count of w; an entry for an earlier window is stale and counts as zero (and
// is overwritten by the next request), so no sweeper is needed.
func (m *Memory) countLocked(keyID string, w Window) int {
	c, ok := m.counts[slot{keyID, w.Period}]
	if !ok || !c.start.Equal(w.Start) {
		return 0
	}
	return c.n
}

// Record is one persisted count.
type Record struct {
	KeyID  string    `json:"keyId"`
	Period string    `json:"period"`
	Start  time.Time `json:"start"`
	Count  int       `json:"count"`
}

// Persister keeps the counts of a Memory across restarts: each save replaces the last.
type Persister interface {
	SaveRequestCounts(ctx context.Context, rs []Record) error
	LoadRequestCounts(ctx context.Context) ([]Record, error)
}

// Restore loads the counts p saved; windows that have ended by now are dropped.
func (m *Memory) Restore(ctx context.Context, p Persister, now time.Time) error {
	rs, err := p.LoadRequestCounts(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		period, err := ParsePeriod(r.Period)
		if err != nil {
			return err
		}
		if period.End(r.Start).After(now) {
			m.counts[slot{r.KeyID, period}] = count{start: r.Start.UTC(), n: r.Count}
		}
	}
	return nil
}

// Persist saves every count whose window is still open at now, and forgets the rest.
func (m *Memory) Persist(ctx context.Context, p Persister, now time.Time) error {
	m.mu.Lock()
	rs := make([]Record, 0, len(m.counts))
	for s, c := range m.counts {
		if !s.period.End(c.start).After(now) {
			delete(m.counts, s)
			continue
		}
		rs = append(rs, Record{KeyID: s.keyID, Period: s.period.String(), Start: c.start, Count: c.n})
	}
	m.mu.Unlock()
	return p.SaveRequestCounts(ctx, rs)
}

// DefaultPersistInterval is the suggested PersistEvery interval: a crash forgets at most this
// long's admissions, at the cost of one small bolt commit per interval.
const DefaultPersistInterval = 5 * time.Second

// PersistEvery persists the counts every interval until ctx ends, then once more so a clean
// shutdown loses nothing. Failures are logged and retried at the next tick: counting goes on in
// memory either way.
func (m *Memory) PersistEvery(ctx context.Context, p Persister, interval time.Duration, now func() time.Time, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := m.Persist(context.WithoutCancel(ctx), p, now()); err != nil {
				log.Error("limits: saving request counts at shutdown", "err", err)
			}
			return
		case <-t.C:
			if err := m.Persist(ctx, p, now()); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("limits: saving request counts", "err", err)
			}
		}
	}
}
