package chain_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// provErr is a provider error that knows its failover reason ("" = final, e.g. a 400).
type provErr struct{ r chain.Reason }

func (e *provErr) Error() string                { return "provider: " + string(e.r) }
func (e *provErr) FailoverReason() chain.Reason { return e.r }

// behavior is what a fake provider does for one model.
type behavior func(ctx context.Context) (string, error)

func serve(ctx context.Context) (string, error) { return "ok", nil }

func fail(r chain.Reason) behavior {
	return func(context.Context) (string, error) { return "", &provErr{r} }
}

// hang blocks until the attempt's context ends, like an upstream that never answers but honors
// cancellation; it then fails as a provider would (connection cut).
func hang(ctx context.Context) (string, error) {
	<-ctx.Done()
	return "", &provErr{chain.ConnectionError}
}

// fake records calls, the contexts it saw and when each attempt noticed ctx.Done.
type fake struct {
	mu       sync.Mutex
	by       map[string]behavior
	calls    []string
	ctxs     map[string]context.Context
	targets  []chain.Target
	sawDone  map[string]time.Duration
	started  time.Time
	failures []chain.Transition
}

func newFake(by map[string]behavior) *fake {
	return &fake{by: by, ctxs: map[string]context.Context{}, sawDone: map[string]time.Duration{}, started: time.Now()}
}

func (f *fake) try(ctx context.Context, t chain.Target) (string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, t.Model)
	f.targets = append(f.targets, t)
	f.ctxs[t.Model] = ctx
	b := f.by[t.Model]
	f.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.sawDone[t.Model] = time.Since(f.started)
			f.mu.Unlock()
		case <-time.After(30 * time.Second):
		}
	}()
	if b == nil {
		panic("fake: unexpected model " + t.Model)
	}
	return b(ctx)
}

func (f *fake) engine() chain.Engine {
	return chain.Engine{OnFailover: func(_ context.Context, tr chain.Transition) {
		f.mu.Lock()
		f.failures = append(f.failures, tr)
		f.mu.Unlock()
	}}
}

func (f *fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fake) Transitions() []chain.Transition {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chain.Transition(nil), f.failures...)
}

// waitDone waits (loosely) for the fake to observe ctx.Done for model.
func (f *fake) waitDone(t *testing.T, model string) time.Duration {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		f.mu.Lock()
		d, ok := f.sawDone[model]
		f.mu.Unlock()
		if ok {
			return d
		}
	}
	t.Fatalf("attempt %s never saw its context canceled", model)
	return 0
}

func plan(on chain.Triggers, timeout, firstToken time.Duration, models ...string) chain.Plan {
	p := chain.Plan{On: on, Source: chain.FromModels}
	for _, m := range models {
		p.Targets = append(p.Targets, chain.Target{Model: m, Timeout: timeout, FirstTokenTimeout: firstToken})
	}
	return p
}

// attempts strips latencies so reports compare by model/status/reason.
func attempts(r chain.Report) []chain.Attempt {
	out := make([]chain.Attempt, len(r.Attempts))
	for i, a := range r.Attempts {
		a.LatencyMS = 0
		out[i] = a
	}
	return out
}

func failed(m string, r chain.Reason) chain.Attempt {
	return chain.Attempt{Model: m, Status: chain.Failed, Reason: r}
}
func served(m string) chain.Attempt { return chain.Attempt{Model: m, Status: chain.Served} }

func wantExhausted(t *testing.T, err error, cause chain.StopCause) *chain.Exhausted {
	t.Helper()
	var ex *chain.Exhausted
	if !errors.As(err, &ex) {
		t.Fatalf("error = %v (%T), want *chain.Exhausted", err, err)
	}
	if ex.Cause != cause {
		t.Fatalf("Exhausted.Cause = %v, want %v (%v)", ex.Cause, cause, err)
	}
	return ex
}

const long = 10 * time.Second

func TestRun_FirstServed(t *testing.T) {
	f := newFake(map[string]behavior{"a": serve, "b": serve})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	if res.Served != "a" || res.Value != "ok" {
		t.Errorf("Served=%q Value=%q, want a/ok", res.Served, res.Value)
	}
	if res.Report.Occurred {
		t.Errorf("3.6 report.occurred = true, want false when the first model served")
	}
	if got := attempts(res.Report); !reflect.DeepEqual(got, []chain.Attempt{served("a")}) {
		t.Errorf("3.6 attempts = %v, want one served attempt", got)
	}
	if got := f.Calls(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("calls = %v, want [a]", got)
	}
	if len(f.Transitions()) != 0 {
		t.Errorf("OnFailover called without a failover")
	}
	res.Release()
}

func TestRun_FailoverOnEachReasonInOn(t *testing.T) {
	for _, r := range chain.AllTriggers.List() {
		t.Run("3.3 fails over on "+string(r), func(t *testing.T) {
			f := newFake(map[string]behavior{"a": fail(r), "b": serve})
			res, err := chain.Run(context.Background(), f.engine(), plan(triggers(r), long, long, "a", "b"), false, f.try)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			defer res.Release()
			if res.Served != "b" {
				t.Fatalf("Served = %q, want b", res.Served)
			}
			if !res.Report.Occurred {
				t.Errorf("3.6 occurred = false after a failover")
			}
			if got, want := attempts(res.Report), []chain.Attempt{failed("a", r), served("b")}; !reflect.DeepEqual(got, want) {
				t.Errorf("attempts = %v, want %v", got, want)
			}
			tr := f.Transitions()
			if len(tr) != 1 || tr[0].Failed != "a" || tr[0].Reason != r || tr[0].Next != "b" {
				t.Errorf("OnFailover transitions = %+v, want one a -%s-> b", tr, r)
			}
		})
	}
}

func TestRun_ReasonNotInOnStops(t *testing.T) {
	for _, r := range chain.AllTriggers.List() {
		t.Run("3.3 no failover when "+string(r)+" not in on", func(t *testing.T) {
			f := newFake(map[string]behavior{"a": fail(r), "b": serve})
			on := chain.AllTriggers &^ triggers(r)
			res, err := chain.Run(context.Background(), f.engine(), plan(on, long, long, "a", "b"), false, f.try)
			ex := wantExhausted(t, err, chain.NotTriggered)
			if got, want := attempts(res.Report), []chain.Attempt{failed("a", r)}; !reflect.DeepEqual(got, want) {
				t.Errorf("attempts = %v, want %v", got, want)
			}
			if len(ex.Attempts) != 1 {
				t.Errorf("Exhausted.Attempts = %v, want the one attempt", ex.Attempts)
			}
			if got := f.Calls(); !reflect.DeepEqual(got, []string{"a"}) {
				t.Errorf("calls = %v, want only a", got)
			}
			if len(f.Transitions()) != 0 {
				t.Errorf("OnFailover called though the reason does not trigger")
			}
		})
	}
	t.Run("3.2 empty on never fails over", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": fail(chain.ServerError), "b": serve})
		_, err := chain.Run(context.Background(), f.engine(), plan(0, long, long, "a", "b"), false, f.try)
		wantExhausted(t, err, chain.NotTriggered)
		if got := f.Calls(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("calls = %v, want only a", got)
		}
	})
}

func TestRun_FinalErrorEndsAtOnce(t *testing.T) {
	plain := errors.New("gateway: budget exhausted")
	badRequest := &provErr{""}
	weird := &provErr{"content_filter"} // not a failover reason: final
	tests := []struct {
		name  string
		by    map[string]behavior
		err   error
		want  []chain.Attempt
		calls []string
	}{
		{"3.3 unclassified error is final", map[string]behavior{"a": func(context.Context) (string, error) { return "", plain }, "b": serve},
			plain, []chain.Attempt{failed("a", chain.Rejected)}, []string{"a"}},
		{"3.3 provider 4xx (no reason) is final", map[string]behavior{"a": func(context.Context) (string, error) { return "", badRequest }, "b": serve},
			badRequest, []chain.Attempt{failed("a", chain.Rejected)}, []string{"a"}},
		{"3.3 error with a non-failover reason is final", map[string]behavior{"a": func(context.Context) (string, error) { return "", weird }, "b": serve},
			weird, []chain.Attempt{failed("a", chain.Rejected)}, []string{"a"}},
		{"3.3 final error after a failover keeps the attempts so far", map[string]behavior{"a": fail(chain.ServerError), "b": func(context.Context) (string, error) { return "", plain }, "c": serve},
			plain, []chain.Attempt{failed("a", chain.ServerError), failed("b", chain.Rejected)}, []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(tc.by)
			res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b", "c"), false, f.try)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v (%T), want the final error %v", err, err, tc.err)
			}
			if got := chain.AttemptsOf(err); !reflect.DeepEqual(got, res.Report.Attempts) {
				t.Errorf("the error carries attempts %v, want the report's %v", got, res.Report.Attempts)
			}
			if got := attempts(res.Report); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("attempts = %v, want %v", got, tc.want)
			}
			if got := f.Calls(); !reflect.DeepEqual(got, tc.calls) {
				t.Errorf("calls = %v, want %v", got, tc.calls)
			}
		})
	}
}

func TestRun_EngineTimerMakesTimeout(t *testing.T) {
	tests := []struct {
		name       string
		streaming  bool
		timeout    time.Duration
		firstToken time.Duration
	}{
		{"3.3 timeout: attempt passed timeout_ms", false, 50 * time.Millisecond, long},
		{"3.5 streaming uses first_token_timeout_ms when shorter", true, long, 50 * time.Millisecond},
		{"3.5 streaming uses timeout_ms when shorter", true, 50 * time.Millisecond, long},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(map[string]behavior{"a": hang, "b": serve})
			start := time.Now()
			res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, tc.timeout, tc.firstToken, "a", "b"), tc.streaming, f.try)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			defer res.Release()
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("chain took %v; the 50ms bound was not applied", el)
			}
			// The provider reported a connection error when cut; the engine's timer decides.
			if got, want := attempts(res.Report), []chain.Attempt{failed("a", chain.Timeout), served("b")}; !reflect.DeepEqual(got, want) {
				t.Errorf("attempts = %v, want %v", got, want)
			}
			if d := f.waitDone(t, "a"); d > 2*time.Second {
				t.Errorf("attempt ctx canceled after %v, want promptly", d)
			}
			if lat := res.Report.Attempts[0].LatencyMS; lat < 40 || lat > 2000 {
				t.Errorf("timed-out attempt latency_ms = %d, want about 50", lat)
			}
		})
	}
}

func TestRun_NonStreamingIgnoresFirstTokenTimeout(t *testing.T) {
	slow := func(ctx context.Context) (string, error) {
		select {
		case <-time.After(150 * time.Millisecond):
			return "ok", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f := newFake(map[string]behavior{"a": slow, "b": serve})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, 20*time.Millisecond, "a", "b"), false, f.try)
	if err != nil {
		t.Fatalf("3.5 a non-streaming attempt was bound by first_token_timeout_ms: %v", err)
	}
	defer res.Release()
	if res.Served != "a" {
		t.Fatalf("Served = %q, want a", res.Served)
	}
}

func TestRun_AnswerAfterTimerFiredIsTimeout(t *testing.T) {
	// A Try that returns success only after its context was cut by the engine's timer.
	late := func(ctx context.Context) (string, error) { <-ctx.Done(); return "stale", nil }
	f := newFake(map[string]behavior{"a": late, "b": serve})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, 30*time.Millisecond, long, "a", "b"), false, f.try)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer res.Release()
	if res.Served != "b" || res.Value != "ok" {
		t.Fatalf("Served=%q Value=%q, want b/ok: the engine's timer decides timeouts", res.Served, res.Value)
	}
	if got, want := attempts(res.Report), []chain.Attempt{failed("a", chain.Timeout), served("b")}; !reflect.DeepEqual(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
}

func TestRun_Deadlines(t *testing.T) {
	t.Run("3.4 attempt cut to the request deadline; chain stops without trying the next model", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": hang, "b": serve})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		res, err := chain.Run(ctx, f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("chain ran %v under a 100ms deadline", el)
		}
		ex := wantExhausted(t, err, chain.DeadlineReached)
		if got, want := attempts(res.Report), []chain.Attempt{failed("a", chain.Timeout)}; !reflect.DeepEqual(got, want) {
			t.Errorf("attempts = %v, want %v", got, want)
		}
		if got := f.Calls(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("calls = %v, want only a", got)
		}
		if len(f.Transitions()) != 0 {
			t.Errorf("OnFailover announced a failover that never started: %+v", f.Transitions())
		}
		if !strings.Contains(ex.Error(), "deadline") {
			t.Errorf("message %q does not say the deadline stopped the chain", ex.Error())
		}
	})

	t.Run("3.4 Reserve is kept back from the deadline", func(t *testing.T) {
		var parentAlive bool
		a := func(ctx context.Context) (string, error) {
			<-ctx.Done()
			parentAlive = context.Cause(ctx) != context.DeadlineExceeded
			return "", ctx.Err()
		}
		f := newFake(map[string]behavior{"a": a, "b": serve})
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		e := f.engine()
		e.Reserve = 1300 * time.Millisecond
		res, err := chain.Run(ctx, e, plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
		wantExhausted(t, err, chain.DeadlineReached)
		if ctx.Err() != nil || !parentAlive {
			t.Errorf("the attempt ran into the request deadline; Reserve was not kept back")
		}
		if lat := res.Report.Attempts[0].LatencyMS; lat > 1300 {
			t.Errorf("attempt latency %dms, want about 200ms (deadline minus reserve)", lat)
		}
		if got := f.Calls(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("calls = %v, want only a", got)
		}
		if len(f.Transitions()) != 0 {
			t.Errorf("OnFailover announced a failover that never started: %+v", f.Transitions())
		}
	})

	t.Run("3.4 Reserve larger than the time left: no attempt", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": serve})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		e := f.engine()
		e.Reserve = 5 * time.Second
		res, err := chain.Run(ctx, e, plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
		ex := wantExhausted(t, err, chain.DeadlineReached)
		if len(f.Calls()) != 0 || len(res.Report.Attempts) != 0 || len(ex.Attempts) != 0 {
			t.Errorf("attempts made without time for them: calls=%v report=%v", f.Calls(), res.Report.Attempts)
		}
	})

	t.Run("3.4 deadline already passed: no attempt, honest message", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": serve})
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		res, err := chain.Run(ctx, f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
		ex := wantExhausted(t, err, chain.DeadlineReached)
		if len(f.Calls()) != 0 || len(res.Report.Attempts) != 0 || len(ex.Attempts) != 0 {
			t.Errorf("attempts made after the deadline: calls=%v", f.Calls())
		}
		msg := ex.Error()
		if !strings.Contains(msg, "deadline") || strings.Contains(msg, "failed (last:") {
			t.Errorf("message %q: want it to say no attempt was made because of the deadline", msg)
		}
		if ex.RateLimitedOnly() {
			t.Errorf("every failure was a rate limit; want a 502 exhaustion")
		}
	})

	t.Run("3.4 failure with time left still fails over", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": fail(chain.ServerError), "b": serve})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := chain.Run(ctx, f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
		if err != nil || res.Served != "b" {
			t.Fatalf("Served=%q err=%v, want b", res.Served, err)
		}
		res.Release()
	})
}

func TestRun_CallerCancel(t *testing.T) {
	t.Run("3.4 caller cancel during an attempt: ErrCanceled, no failover", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": hang, "b": serve})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		_, err := chain.Run(ctx, f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
		if !errors.Is(err, chain.ErrCanceled) {
			t.Fatalf("error = %v, want ErrCanceled", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("cancel took %v to end the chain", el)
		}
		f.waitDone(t, "a")
		if got := f.Calls(); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("calls = %v, want only a", got)
		}
		if len(f.Transitions()) != 0 {
			t.Errorf("OnFailover called after the caller left: %+v", f.Transitions())
		}
	})
	t.Run("3.4 caller already gone: no attempt", func(t *testing.T) {
		f := newFake(map[string]behavior{"a": serve})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := chain.Run(ctx, f.engine(), plan(chain.AllTriggers, long, long, "a"), false, f.try)
		if !errors.Is(err, chain.ErrCanceled) {
			t.Fatalf("error = %v, want ErrCanceled", err)
		}
		if len(f.Calls()) != 0 {
			t.Errorf("calls = %v, want none", f.Calls())
		}
	})
}

func TestRun_OnFailoverOncePerTransition(t *testing.T) {
	f := newFake(map[string]behavior{"a": fail(chain.ServerError), "b": fail(chain.RateLimit), "c": serve})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b", "c"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	tr := f.Transitions()
	want := []chain.Transition{{Failed: "a", Reason: chain.ServerError, Next: "b"}, {Failed: "b", Reason: chain.RateLimit, Next: "c"}}
	if len(tr) != len(want) {
		t.Fatalf("transitions = %+v, want %+v", tr, want)
	}
	for i := range tr {
		if tr[i].Latency < 0 {
			t.Errorf("transition %d latency %v < 0", i, tr[i].Latency)
		}
		tr[i].Latency = 0
	}
	if !reflect.DeepEqual(tr, want) {
		t.Errorf("transitions = %+v, want %+v", tr, want)
	}
	if got, want := attempts(res.Report), []chain.Attempt{failed("a", chain.ServerError), failed("b", chain.RateLimit), served("c")}; !reflect.DeepEqual(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
	if !res.Report.Occurred || res.Served != "c" {
		t.Errorf("occurred=%v served=%q, want true/c", res.Report.Occurred, res.Served)
	}
}

func TestRun_EndOfChain(t *testing.T) {
	f := newFake(map[string]behavior{"a": fail(chain.ServerError), "b": fail(chain.Timeout), "c": fail(chain.ConnectionError)})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b", "c"), false, f.try)
	ex := wantExhausted(t, err, chain.EndOfChain)
	want := []chain.Attempt{failed("a", chain.ServerError), failed("b", chain.Timeout), failed("c", chain.ConnectionError)}
	if got := attempts(res.Report); !reflect.DeepEqual(got, want) {
		t.Errorf("attempts = %v, want %v", got, want)
	}
	if len(ex.Attempts) != 3 || len(f.Transitions()) != 2 || ex.RateLimitedOnly() {
		t.Errorf("Exhausted = %+v (rate-limited only %v), transitions %d; want 3 attempts, 502, 2 transitions", ex.Attempts, ex.RateLimitedOnly(), len(f.Transitions()))
	}
}

func TestRun_ReleaseCancelsServedAttempt(t *testing.T) {
	f := newFake(map[string]behavior{"a": serve})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, 30*time.Millisecond, 30*time.Millisecond, "a"), true, f.try)
	if err != nil {
		t.Fatal(err)
	}
	actx := f.ctxs["a"]
	// A served stream keeps reading under its attempt's context: the attempt timer must not cut it.
	time.Sleep(100 * time.Millisecond)
	if actx.Err() != nil {
		t.Fatalf("3.5 served attempt's context ended before Release: %v", context.Cause(actx))
	}
	res.Release()
	if actx.Err() == nil {
		t.Fatalf("Release did not cancel the served attempt's context")
	}
	f.waitDone(t, "a")
}

func TestRun_LatencyRecorded(t *testing.T) {
	slowFail := func(context.Context) (string, error) {
		time.Sleep(60 * time.Millisecond)
		return "", &provErr{chain.ServerError}
	}
	slowServe := func(context.Context) (string, error) { time.Sleep(60 * time.Millisecond); return "ok", nil }
	f := newFake(map[string]behavior{"a": slowFail, "b": slowServe})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	for _, a := range res.Report.Attempts {
		if a.LatencyMS < 60 || a.LatencyMS > 2000 {
			t.Errorf("%s latency_ms = %d, want about 60", a.Model, a.LatencyMS)
		}
	}
	if tr := f.Transitions(); len(tr) != 1 || tr[0].Latency < 60*time.Millisecond {
		t.Errorf("transition latency = %+v, want >= 60ms", tr)
	}
}

func TestRun_TryGetsItsTarget(t *testing.T) {
	f := newFake(map[string]behavior{"a": fail(chain.Timeout), "b": serve})
	p := chain.Plan{On: chain.AllTriggers, Targets: []chain.Target{{Model: "a", Timeout: long, FirstTokenTimeout: 5 * time.Second}, {Model: "b", Timeout: 2 * time.Second, FirstTokenTimeout: time.Second}}}
	res, err := chain.Run(context.Background(), f.engine(), p, false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if !reflect.DeepEqual(f.targets, p.Targets) {
		t.Errorf("Try saw targets %v, want %v", f.targets, p.Targets)
	}
}

// rateLimited is a 429 that says when to come back.
type rateLimited struct{ after time.Duration }

func (e *rateLimited) Error() string                 { return "provider: rate limited" }
func (e *rateLimited) FailoverReason() chain.Reason  { return chain.RateLimit }
func (e *rateLimited) RetryAfterHint() time.Duration { return e.after }

func TestRun_AllRateLimitedSaysWhenToRetry(t *testing.T) {
	after := func(d time.Duration) behavior {
		return func(context.Context) (string, error) { return "", &rateLimited{d} }
	}
	for _, tc := range []struct {
		name string
		by   map[string]behavior
		want time.Duration
	}{
		{"3.7 the soonest Retry-After of the rate-limited models", map[string]behavior{"a": after(30 * time.Second), "b": after(5 * time.Second), "c": fail(chain.RateLimit)}, 5 * time.Second},
		{"3.7 no hint when no provider gave one", map[string]behavior{"a": fail(chain.RateLimit), "b": fail(chain.RateLimit), "c": fail(chain.RateLimit)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(tc.by)
			_, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b", "c"), false, f.try)
			ex := wantExhausted(t, err, chain.EndOfChain)
			if !ex.RateLimitedOnly() || ex.RetryAfter != tc.want {
				t.Errorf("rate-limited only %v, RetryAfter %v; want 429, %v", ex.RateLimitedOnly(), ex.RetryAfter, tc.want)
			}
		})
	}
}
