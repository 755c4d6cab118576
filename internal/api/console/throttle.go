package console

import (
	"sync"
	"time"
)

// Failed sign-ins are throttled per client address: after DefaultSignInFailures failed attempts
// within DefaultSignInWindow, that address's sign-ins are refused (429 with Retry-After) until the
// window ends — whatever key they carry, so the refusal says nothing about a key either. A key's
// 256 bits cannot be guessed anyway; the throttle keeps a flood of guesses from costing a store
// lookup and an audit entry each. It is per process: per warm function instance in the cloud.
const (
	DefaultSignInFailures = 5
	DefaultSignInWindow   = time.Minute
	// maxTracked bounds the addresses remembered at once; past it, expired windows are dropped
	// first, then the oldest.
	maxTracked = 10_000
)

// throttle counts failed sign-ins per client address in fixed windows.
type throttle struct {
	max    int
	window time.Duration

	mu    sync.Mutex
	addrs map[string]*failures
}

// failures are one address's failed sign-ins in the window starting at start; told says the
// throttling of this window has been reported (logged and audited) once already.
type failures struct {
	start time.Time
	n     int
	told  bool
}

func newThrottle(max int, window time.Duration) *throttle {
	return &throttle{max: max, window: window, addrs: map[string]*failures{}}
}

// blocked reports how long addr must wait before it may try again (0: it may now), and whether
// this is the first refusal of its window (report it; later ones are only counted).
func (t *throttle) blocked(addr string, now time.Time) (wait time.Duration, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.addrs[addr]
	if f == nil || now.Sub(f.start) >= t.window || f.n < t.max {
		return 0, false
	}
	first, f.told = !f.told, true
	return f.start.Add(t.window).Sub(now), first
}

// failed counts a failed sign-in from addr.
func (t *throttle) failed(addr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.addrs[addr]
	if f == nil || now.Sub(f.start) >= t.window {
		if f == nil && len(t.addrs) >= maxTracked {
			t.evict(now)
		}
		t.addrs[addr] = &failures{start: now, n: 1}
		return
	}
	f.n++
}

// evict drops every expired window, or, when none has expired, the oldest one.
func (t *throttle) evict(now time.Time) {
	var oldest string
	for a, f := range t.addrs {
		if now.Sub(f.start) >= t.window {
			delete(t.addrs, a)
		} else if oldest == "" || f.start.Before(t.addrs[oldest].start) {
			oldest = a
		}
	}
	if len(t.addrs) >= maxTracked {
		delete(t.addrs, oldest)
	}
}
