package emit

import (
	"sync"
	"time"
)

// quotaWindow is how long a points or budget refusal, which names no reset of its own, keeps
// its key from emitting another.
const quotaWindow = time.Hour

// maxLimitWindows bounds the keys remembered; past it the memory starts over (a few keys may
// emit once more).
const maxLimitWindows = 10000

// LimitWindows lets a key's refusals by one limit emit one api:limit_reached per window — the
// first — instead of one per refused request: a key hammering a full limit would otherwise fill
// the audit log and every webhook subscriber with copies. Each event carries how many refusals it
// stands for: itself and those not emitted since the last one. The 429s themselves are
// unchanged. One per process: in the cloud each warm instance emits at most once per window.
type LimitWindows struct {
	mu   sync.Mutex
	seen map[string]*limitWindow // key id + limit name
}

type limitWindow struct {
	until      time.Time // the window the last event was emitted in ends here
	suppressed int64     // refusals since then that emitted nothing
}

// admit reports whether the refusal of key's limit at now, in a window ending at reset (zero:
// none known), emits an event, and how many refusals that event stands for.
func (w *LimitWindows) admit(key, limit string, reset, now time.Time) (emit bool, refusals int64) {
	if reset.IsZero() || !reset.After(now) {
		reset = now.Add(quotaWindow)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil || len(w.seen) >= maxLimitWindows {
		w.seen = make(map[string]*limitWindow)
	}
	id := key + "\x00" + limit
	s := w.seen[id]
	if s != nil && now.Before(s.until) {
		s.suppressed++
		return false, 0
	}
	refusals = 1
	if s != nil {
		refusals += s.suppressed
	}
	w.seen[id] = &limitWindow{until: reset}
	return true, refusals
}
