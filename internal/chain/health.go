package chain

import (
	"context"
	"sync"
	"time"
)

// Health remembers which models are failing — each deployment of a model served by several on
// its own — so a chain with skip_unhealthy passes over a model that is down instead of waiting out
// its failure on every request. It counts what this process sees; with Shared it also hears what
// every other process (every warm function instance in the cloud) reports, and tells them what it
// sees, so a model failing everywhere is skipped everywhere once any of them has counted enough.
// Safe for concurrent use.
type Health struct {
	// Threshold consecutive failures (for a reason in the chain's `on`) within Window open a
	// cool-down of Cooldown, after which one probe request is let through; its success closes it.
	Threshold int
	Window    time.Duration
	Cooldown  time.Duration
	Now       func() time.Time
	// Shared, when set, is where this process's counts meet the other processes' (internal/sharedhealth).
	// nil: the counts are this process's alone.
	Shared SharedHealth

	mu     sync.Mutex
	models map[string]*modelHealth
}

// SharedHealth carries health between processes: each publishes its own report of a model (a
// HealthReport) and reads the others'. Health calls it outside its lock.
type SharedHealth interface {
	// Prefetch starts reading the others' reports of keys, so the read runs beside the request's
	// other work; it never blocks.
	Prefetch(ctx context.Context, keys []string)
	// Peers returns the other processes' current reports of key. It may wait for a read that
	// Prefetch started or that is due, never for long; what it cannot read, it leaves out.
	Peers(ctx context.Context, key string) []HealthReport
	// Publish makes r this process's report of key (a zero r withdraws it), in the background:
	// it never blocks.
	Publish(ctx context.Context, key string, r HealthReport)
}

// HealthReport is one process's account of a model (a deployment): its counted failures since its
// last success, the latest of them, and the cool-down they opened.
type HealthReport struct {
	Fails int
	Last  time.Time // the latest counted failure
	Until time.Time // the end of the cool-down this process opened; zero: none
	// Expires is when the report stops saying anything: its failures are past Window and its
	// cool-down over.
	Expires time.Time
}

type modelHealth struct {
	fails     int
	firstFail time.Time
	lastFail  time.Time
	openUntil time.Time // zero: healthy
	probeAt   time.Time // when the current probe was let through; zero: none in flight
	// okAt is this process's latest success after failures (kept only with Shared): the other
	// processes' reports from before it are older news than its own, and are not counted.
	okAt time.Time
}

// NewHealth returns a tracker with the documented defaults: 3 failures within 60 s open a 30 s
// cool-down.
func NewHealth(now func() time.Time) *Health {
	return &Health{Threshold: 3, Window: time.Minute, Cooldown: 30 * time.Second, Now: now}
}

// Prefetch starts reading what the other processes report of the models p may pass over (all but
// its last, with skip_unhealthy), so that read runs beside the request's checks and admission
// instead of before its first attempt. It never blocks.
func (h *Health) Prefetch(ctx context.Context, p Plan) {
	if h == nil || h.Shared == nil || !p.SkipUnhealthy || len(p.Targets) < 2 {
		return
	}
	keys := make([]string, 0, len(p.Targets)-1)
	for _, t := range p.Targets[:len(p.Targets)-1] {
		if k := t.healthKey(); t.Skip == "" && !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		h.Shared.Prefetch(ctx, keys)
	}
}

func contains(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// allow reports whether model may be tried now: no other process reports it failing, and here it
// is healthy, or cooled down and nobody is probing it (a probe whose result never came back frees
// its slot after another cool-down).
func (h *Health) allow(ctx context.Context, model string) bool {
	var peers []HealthReport
	if h.Shared != nil {
		peers = h.Shared.Peers(ctx, model)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.models[model]
	now := h.Now()
	if h.Shared != nil && h.failingElsewhere(m, peers, now) {
		return false
	}
	if m == nil || m.openUntil.IsZero() {
		return true
	}
	if now.Before(m.openUntil) || (!m.probeAt.IsZero() && now.Sub(m.probeAt) < h.Cooldown) {
		return false
	}
	m.probeAt = now
	return true
}

// failingElsewhere reports whether the other processes' reports, newer than this process's last
// success, keep model closed at now: one of them opened a cool-down still running, or their
// failures within Window, with this process's own, reach Threshold and the latest is less than
// Cooldown ago. h.mu is held.
func (h *Health) failingElsewhere(m *modelHealth, peers []HealthReport, now time.Time) bool {
	var okAt, last time.Time
	fails := 0
	if m != nil {
		okAt = m.okAt
		if m.fails > 0 && now.Sub(m.firstFail) <= h.Window {
			fails, last = m.fails, m.lastFail
		}
	}
	counted := false
	for _, p := range peers {
		if !p.Last.After(okAt) {
			continue
		}
		if now.Before(p.Until) {
			return true
		}
		if now.Sub(p.Last) > h.Window {
			continue
		}
		fails, counted = fails+p.Fails, true
		if p.Last.After(last) {
			last = p.Last
		}
	}
	return counted && fails >= h.Threshold && now.Before(last.Add(h.Cooldown))
}

// record notes an attempt's result; counted is false for a failure whose reason the chain does
// not fail over on (it says nothing about the model's health). With Shared, a change of this
// process's report is published: each counted failure, and the first success after failures.
func (h *Health) record(ctx context.Context, model string, ok, counted bool) {
	if !ok && !counted {
		return
	}
	report, publish := h.update(model, ok)
	if publish {
		h.Shared.Publish(ctx, model, report)
	}
}

// update applies an attempt's result to model's state and returns this process's report when
// Shared should hear of it.
func (h *Health) update(model string, ok bool) (HealthReport, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.models[model]
	now := h.Now()
	if ok {
		if h.Shared == nil {
			delete(h.models, model)
			return HealthReport{}, false
		}
		if m == nil {
			return HealthReport{}, false
		}
		if m.fails > 0 || !m.openUntil.IsZero() {
			*m = modelHealth{okAt: now}
			return HealthReport{}, true // withdraw the report of the failures it ends
		}
		if now.Sub(m.okAt) > max(h.Window, h.Cooldown) {
			delete(h.models, model) // no report it could outdate is still counted
		}
		return HealthReport{}, false
	}
	if m == nil {
		m = h.entry(model)
	}
	if m.fails == 0 || now.Sub(m.firstFail) > h.Window {
		m.fails, m.firstFail = 0, now
	}
	m.fails++
	m.lastFail = now
	if m.fails >= h.Threshold || !m.probeAt.IsZero() {
		m.openUntil, m.probeAt = now.Add(h.Cooldown), time.Time{}
	}
	if h.Shared == nil {
		return HealthReport{}, false
	}
	r := HealthReport{Fails: m.fails, Last: now, Expires: now.Add(max(h.Window, h.Cooldown))}
	if now.Before(m.openUntil) {
		r.Until = m.openUntil
		r.Expires = later(r.Expires, m.openUntil)
	}
	return r, true
}

func (h *Health) entry(model string) *modelHealth {
	if h.models == nil {
		h.models = map[string]*modelHealth{}
	}
	m := &modelHealth{}
	h.models[model] = m
	return m
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
