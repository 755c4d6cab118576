package chain

import (
	"sync"
	"time"
)

// Health remembers which models are failing — each deployment of a model served by several on
// its own — so a chain with skip_unhealthy passes over a model that is down instead of waiting out
// its failure on every request. It is per process — per warm
// function instance in the cloud — so each new instance learns again. Safe for concurrent use.
type Health struct {
	// Threshold consecutive failures (for a reason in the chain's `on`) within Window open a
	// cool-down of Cooldown, after which one probe request is let through; its success closes it.
	Threshold int
	Window    time.Duration
	Cooldown  time.Duration
	Now       func() time.Time

	mu     sync.Mutex
	models map[string]*modelHealth
}

type modelHealth struct {
	fails     int
	firstFail time.Time
	openUntil time.Time // zero: healthy
	probeAt   time.Time // when the current probe was let through; zero: none in flight
}

// NewHealth returns a tracker with the documented defaults: 3 failures within 60 s open a 30 s
// cool-down.
func NewHealth(now func() time.Time) *Health {
	return &Health{Threshold: 3, Window: time.Minute, Cooldown: 30 * time.Second, Now: now}
}

// allow reports whether model may be tried now: healthy, or cooled down and nobody is probing it
// (a probe whose result never came back frees its slot after another cool-down).
func (h *Health) allow(model string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.models[model]
	if m == nil || m.openUntil.IsZero() {
		return true
	}
	now := h.Now()
	if now.Before(m.openUntil) || (!m.probeAt.IsZero() && now.Sub(m.probeAt) < h.Cooldown) {
		return false
	}
	m.probeAt = now
	return true
}

// record notes an attempt's result; counted is false for a failure whose reason the chain does
// not fail over on (it says nothing about the model's health).
func (h *Health) record(model string, ok, counted bool) {
	if !ok && !counted {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.models[model]
	if ok {
		if m != nil {
			delete(h.models, model)
		}
		return
	}
	if h.models == nil {
		h.models = map[string]*modelHealth{}
	}
	if m == nil {
		m = &modelHealth{}
		h.models[model] = m
	}
	now := h.Now()
	if m.fails == 0 || now.Sub(m.firstFail) > h.Window {
		m.fails, m.firstFail = 0, now
	}
	m.fails++
	if m.fails >= h.Threshold || !m.probeAt.IsZero() {
		m.openUntil, m.probeAt = now.Add(h.Cooldown), time.Time{}
	}
}
