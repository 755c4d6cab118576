// Package breaker contains a misbehaving API key or user: while a circuit breaker is open, every
// call of its subject is refused with 503 and Retry-After — a deliberate block, so it never
// triggers failover. An admin opens and closes breakers; a subject is also opened automatically
// after Threshold policy violations within Window, and such a breaker closes on its own after
// Cooldown. Opening and closing are reported to an audit hook.
//
// Check runs before a chain and before each of its attempts, so a warm instance keeps what it
// read for CacheTTL (default 5 s) and never longer: a breaker opened on any instance (or in the
// store directly) stops the calls of every warm instance within CacheTTL, and at once on the
// instance that opened it. Past half of CacheTTL a check answers from memory at once while one
// background read renews the entry (internal/store/swr), so a warm caller — the next attempt of a chain
// — never waits on the store; a failed renewal keeps the entry until CacheTTL, after which a check
// reads the store itself and fails as it does. The breakers of a key and of its user are read
// together: one call where the store can (BatchReader).
package breaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/store/swr"
)

// Subject kinds.
const (
	KindKey  = "key"
	KindUser = "user"
)

// Subject is what a breaker contains: one API key or one user (all of its keys).
type Subject struct {
	Kind string // KindKey or KindUser
	ID   string
}

func (s Subject) String() string { return s.Kind + ":" + s.ID }

// MaxSubjectID bounds a subject id.
const MaxSubjectID = 128

// Validate reports a subject an admin could not have meant.
func (s Subject) Validate() error {
	if s.Kind != KindKey && s.Kind != KindUser {
		return fmt.Errorf("subject type %q must be %q or %q", s.Kind, KindKey, KindUser)
	}
	if s.ID == "" || len(s.ID) > MaxSubjectID || strings.ContainsFunc(s.ID, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Errorf("subject id must be 1-%d visible characters", MaxSubjectID)
	}
	return nil
}

// Who opened or closed a breaker, besides "admin:<key id>".
const (
	ActorAuto     = "auto"     // opened after repeated policy violations
	ActorCooldown = "cooldown" // closed because its cooldown ended
)

// State is an open breaker.
type State struct {
	Subject  Subject
	Reason   string
	OpenedBy string // "admin:<key id>" or ActorAuto
	OpenedAt time.Time
	Until    time.Time // when it closes on its own; zero: when an admin closes it
}

// OpenAt reports whether the breaker is still open at now.
func (s State) OpenAt(now time.Time) bool { return s.Until.IsZero() || now.Before(s.Until) }

// ErrNotOpen is closing a breaker that is not open.
var ErrNotOpen = errors.New("breaker: no open circuit breaker for this subject")

// Store keeps breakers and violation counts: internal/store/boltstore locally, internal/store/dynamostore in
// the cloud. Contract: internal/testkit/storetest.RunBreakers.
type Store interface {
	// Breaker returns the subject's breaker as stored, even one past its Until.
	Breaker(ctx context.Context, subject Subject) (State, bool, error)
	// PutBreaker opens (or replaces) the subject's breaker.
	PutBreaker(ctx context.Context, s State) error
	// DeleteBreaker removes the subject's breaker if it is the one opened at openedAt (zero: any),
	// so a cooldown close never removes a breaker re-opened meanwhile; it reports whether it did.
	DeleteBreaker(ctx context.Context, subject Subject, openedAt time.Time) (bool, error)
	// ListBreakers returns every stored breaker, even ones past their Until.
	ListBreakers(ctx context.Context) ([]State, error)
	// AddViolation atomically counts one violation of subject in the window starting at window
	// and returns the window's count; the count may be forgotten after expires.
	AddViolation(ctx context.Context, subject Subject, window, expires time.Time) (int, error)
}

// BatchReader is a Store that reads several subjects' breakers in one call (internal/store/dynamostore:
// one BatchGetItem). A check reads a key's and its user's breakers through it; a Store without it
// is read one subject at a time (the embedded store, where a read is no round trip).
type BatchReader interface {
	// Breakers returns the stored breakers of subjects, by subject, even ones past their Until;
	// a subject without one is absent.
	Breakers(ctx context.Context, subjects []Subject) (map[Subject]State, error)
}

// Config tunes the breakers. Zero fields take the defaults.
type Config struct {
	// Threshold policy violations within Window open a subject's breaker. Default 5.
	Threshold int
	// Window is the fixed counting window. Default 10 minutes.
	Window time.Duration
	// Cooldown is how long an automatically opened breaker stays open. Default 15 minutes.
	Cooldown time.Duration
	// CacheTTL bounds how stale a warm instance's view of a breaker may be; past half of it a
	// check renews the entry in the background. Default 5 s; negative turns the cache off.
	CacheTTL time.Duration
	Now      func() time.Time
}

// Defaults.
const (
	DefaultThreshold = 5
	DefaultWindow    = 10 * time.Minute
	DefaultCooldown  = 15 * time.Minute
	DefaultCacheTTL  = 5 * time.Second
)

// Event is an opening or closing, for the audit log.
type Event struct {
	Action string // "open" or "close"
	State  State
	Actor  string // "admin:<key id>", ActorAuto or ActorCooldown
	At     time.Time
}

// Breakers checks, opens and closes breakers. Build it with New; it is safe for concurrent use.
type Breakers struct {
	store Store
	cfg   Config
	audit func(context.Context, Event)
	cache *swr.Cache[Subject, cached]
}

// cached is what a warm instance knows of a subject: its breaker, if one is stored and not past
// its cooldown when read.
type cached struct {
	state State
	open  bool
}

// New returns breakers over store. audit receives every open and close (nil: none).
func New(store Store, cfg Config, audit func(context.Context, Event)) *Breakers {
	if cfg.Threshold <= 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCooldown
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if audit == nil {
		audit = func(context.Context, Event) {}
	}
	b := &Breakers{store: store, cfg: cfg, audit: audit}
	b.cache = swr.New(b.load, swr.Options[cached]{MaxAge: func(cached) time.Duration { return cfg.CacheTTL }, Now: cfg.Now})
	return b
}

// subjects are the breakers that contain k.
func subjects(k *apikey.Key) []Subject {
	out := []Subject{{KindKey, k.ID}}
	if k.UserID != "" {
		out = append(out, Subject{KindUser, k.UserID})
	}
	return out
}

// Check returns a 503 *fault.Error (kind CircuitOpen, code "circuit_open", with RetryAfter when
// the breaker closes on its own) when a breaker containing k is open, nil otherwise.
func (b *Breakers) Check(ctx context.Context, k *apikey.Key) error {
	all, err := b.cache.Get(ctx, subjects(k)...)
	if err != nil {
		return fault.Dependency("the circuit breaker store", "circuit breakers cannot be read now", err)
	}
	now := b.cfg.Now()
	for _, c := range all {
		if c.open && c.state.OpenAt(now) {
			return openError(c.state, now)
		}
	}
	return nil
}

func openError(st State, now time.Time) error {
	who := "an admin"
	if st.OpenedBy == ActorAuto {
		who = "the gateway after repeated policy violations"
	}
	subject := "API key " + st.Subject.ID
	if st.Subject.Kind == KindUser {
		subject = "user " + st.Subject.ID
	}
	msg := fmt.Sprintf("calls of %s are blocked: a circuit breaker was opened by %s at %s", subject, who, st.OpenedAt.UTC().Format(time.RFC3339))
	if st.Reason != "" {
		msg += " (" + st.Reason + ")"
	}
	e := fault.New(fault.CircuitOpen, "Circuit breaker open", "").WithCode("circuit_open")
	if st.Until.IsZero() {
		e.Message = msg + "; it stays open until an admin closes it"
		return e
	}
	e.Message = msg + "; it closes at " + st.Until.UTC().Format(time.RFC3339)
	return e.WithRetryAfter(max(st.Until.Sub(now), time.Second))
}

// load reads subjects' breakers for the cache, in one call when the store can. A stored breaker
// past its cooldown is removed here, once, and its closing audited.
func (b *Breakers) load(ctx context.Context, subjects []Subject) (map[Subject]cached, error) {
	stored, err := b.read(ctx, subjects)
	if err != nil {
		return nil, err
	}
	now := b.cfg.Now()
	out := make(map[Subject]cached, len(subjects))
	for _, s := range subjects {
		st, found := stored[s]
		if found && !st.OpenAt(now) {
			if closed, err := b.store.DeleteBreaker(ctx, s, st.OpenedAt); err == nil && closed {
				b.audit(ctx, Event{Action: "close", State: st, Actor: ActorCooldown, At: st.Until})
			}
			found = false
		}
		out[s] = cached{state: st, open: found}
	}
	return out, nil
}

func (b *Breakers) read(ctx context.Context, subjects []Subject) (map[Subject]State, error) {
	if br, ok := b.store.(BatchReader); ok {
		return br.Breakers(ctx, subjects)
	}
	out := make(map[Subject]State, len(subjects))
	for _, s := range subjects {
		st, found, err := b.store.Breaker(ctx, s)
		if err != nil {
			return nil, err
		}
		if found {
			out[s] = st
		}
	}
	return out, nil
}

// Open opens a breaker for st.Subject (OpenedAt is set to now) and audits it.
func (b *Breakers) Open(ctx context.Context, st State) (State, error) {
	if err := st.Subject.Validate(); err != nil {
		return State{}, fault.Invalid("subjectId", err.Error())
	}
	st.OpenedAt = b.cfg.Now().UTC()
	if err := b.store.PutBreaker(ctx, st); err != nil {
		return State{}, err
	}
	b.cache.Set(st.Subject, cached{state: st, open: true})
	b.audit(ctx, Event{Action: "open", State: st, Actor: st.OpenedBy, At: st.OpenedAt})
	return st, nil
}

// Close closes the subject's breaker on behalf of actor and audits it; ErrNotOpen (a 404
// *fault.Error) when none is open.
func (b *Breakers) Close(ctx context.Context, s Subject, actor string) (State, error) {
	st, found, err := b.store.Breaker(ctx, s)
	if err != nil {
		return State{}, err
	}
	now := b.cfg.Now()
	notOpen := fault.New(fault.NotFound, "Not found", "no open circuit breaker for "+s.String()).Wrap(ErrNotOpen)
	if !found || !st.OpenAt(now) {
		return State{}, notOpen
	}
	deleted, err := b.store.DeleteBreaker(ctx, s, st.OpenedAt)
	if err != nil {
		return State{}, err
	}
	if !deleted {
		return State{}, notOpen
	}
	b.cache.Set(s, cached{})
	b.audit(ctx, Event{Action: "close", State: st, Actor: actor, At: now.UTC()})
	return st, nil
}

// List returns the open breakers.
func (b *Breakers) List(ctx context.Context) ([]State, error) {
	all, err := b.store.ListBreakers(ctx)
	if err != nil {
		return nil, err
	}
	now := b.cfg.Now()
	open := []State{}
	for _, st := range all {
		if st.OpenAt(now) {
			open = append(open, st)
		}
	}
	return open, nil
}

// RecordViolation counts one policy violation (an enforced denial or a monitor-mode breach) of k
// and of its user, and opens the breaker of a subject that reaches Threshold within the window.
func (b *Breakers) RecordViolation(ctx context.Context, k *apikey.Key) error {
	now := b.cfg.Now().UTC()
	window := now.Truncate(b.cfg.Window)
	for _, s := range subjects(k) {
		n, err := b.store.AddViolation(ctx, s, window, window.Add(b.cfg.Window))
		if err != nil {
			return err
		}
		// Only the violation that reaches the threshold opens it, so racing instances open once.
		if n != b.cfg.Threshold {
			continue
		}
		_, err = b.Open(ctx, State{Subject: s, OpenedBy: ActorAuto, Until: now.Add(b.cfg.Cooldown),
			Reason: fmt.Sprintf("%d policy violations within %s", n, b.cfg.Window)})
		if err != nil {
			return err
		}
	}
	return nil
}
