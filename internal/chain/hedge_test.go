package chain_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// after answers after d unless the attempt's context ends first (then a connection error).
func after(d time.Duration, answer string) behavior {
	return func(ctx context.Context) (string, error) {
		select {
		case <-time.After(d):
			return answer, nil
		case <-ctx.Done():
			return "", &provErr{chain.ConnectionError}
		}
	}
}

func failAfter(d time.Duration, r chain.Reason) behavior {
	return func(ctx context.Context) (string, error) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return "", &provErr{r}
	}
}

func hedgePlan(hedge time.Duration, models ...string) chain.Plan {
	p := plan(chain.AllTriggers, long, long, models...)
	p.HedgeAfter = hedge
	return p
}

func cancelled(m string) chain.Attempt {
	return chain.Attempt{Model: m, Status: chain.Cancelled, Reason: chain.HedgeLost}
}

// hedged is the line of an attempt started as a hedge.
func hedged(a chain.Attempt) chain.Attempt {
	a.Hedge = true
	return a
}

func TestHedge_SlowPrimaryStillWinsWhenFirst(t *testing.T) {
	// The primary answers at 600 ms; the hedge starts at 300 ms and would answer 900 ms later.
	f := newFake(map[string]behavior{"a": after(600*time.Millisecond, "from a"), "b": after(900*time.Millisecond, "from b")})
	res, err := chain.Run(context.Background(), f.engine(), hedgePlan(300*time.Millisecond, "a", "b"), true, f.try)
	if err != nil {
		t.Fatal(err)
	}
	if res.Served != "a" || res.Value != "from a" {
		t.Fatalf("served %s (%q), want a", res.Served, res.Value)
	}
	if got, want := attempts(res.Report), []chain.Attempt{served("a"), hedged(cancelled("b"))}; !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
	if !res.Report.Occurred {
		t.Fatal("a hedged request reports occurred")
	}
	f.waitDone(t, "b") // the loser's context was cancelled: its connection closes
	tr := f.Transitions()
	if len(tr) != 1 || tr[0].Failed != "a" || tr[0].Next != "b" || tr[0].Reason != chain.HedgeAfter {
		t.Fatalf("transitions = %+v, want one a → b hedge_after", tr)
	}
	if tr[0].Latency < 250*time.Millisecond {
		t.Fatalf("the hedge started after %s, before hedge_after_ms", tr[0].Latency)
	}
}

func TestHedge_HangingPrimaryLosesToHedge(t *testing.T) {
	f := newFake(map[string]behavior{"a": hang, "b": after(100*time.Millisecond, "from b"), "c": serve})
	start := time.Now()
	res, err := chain.Run(context.Background(), f.engine(), hedgePlan(200*time.Millisecond, "a", "b", "c"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	if res.Served != "b" {
		t.Fatalf("served %s, want b", res.Served)
	}
	// Lines in start order: the primary is cancelled, the third model never started.
	if got, want := attempts(res.Report), []chain.Attempt{cancelled("a"), hedged(served("b"))}; !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("took %s, want about hedge_after_ms + b's 100 ms", took)
	}
	f.waitDone(t, "a")
	if calls := f.Calls(); !reflect.DeepEqual(calls, []string{"a", "b"}) {
		t.Fatalf("calls = %v", calls)
	}
}

func TestHedge_BothSlowThirdStartsInThePrimarysPlace(t *testing.T) {
	// a and b both draw the slow tail; hedge_after_ms after b started, a (the longest waiting) is
	// cancelled and c starts beside b — still two at a time — and serves at about
	// 2 × hedge_after_ms + its own 100 ms.
	f := newFake(map[string]behavior{"a": after(time.Minute, "from a"), "b": after(time.Minute, "from b"), "c": after(100*time.Millisecond, "from c")})
	start := time.Now()
	res, err := chain.Run(context.Background(), f.engine(), hedgePlan(200*time.Millisecond, "a", "b", "c"), true, f.try)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); res.Served != "c" || took < 500*time.Millisecond || took > 10*time.Second {
		t.Fatalf("served %s after %s, want c after about 500 ms", res.Served, took)
	}
	want := []chain.Attempt{cancelled("a"), hedged(cancelled("b")), hedged(served("c"))}
	if got := attempts(res.Report); !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
	f.waitDone(t, "a")
	f.waitDone(t, "b")
	tr := f.Transitions()
	if len(tr) != 2 || tr[0].Failed != "a" || tr[0].Next != "b" || tr[1].Failed != "b" || tr[1].Next != "c" ||
		tr[0].Reason != chain.HedgeAfter || tr[1].Reason != chain.HedgeAfter {
		t.Fatalf("transitions = %+v, want a → b and b → c, both hedge_after", tr)
	}
}

func TestHedge_DroppedAttemptIsReportedWhenTheChainEnds(t *testing.T) {
	// a hangs and is dropped for c; b and c then fail: the chain is exhausted, and a — cancelled
	// for c — is in the report as hedge_lost, not as a failure.
	f := newFake(map[string]behavior{"a": hang, "b": failAfter(150*time.Millisecond, chain.ServerError), "c": fail(chain.ServerError)})
	_, err := chain.Run(context.Background(), f.engine(), hedgePlan(100*time.Millisecond, "a", "b", "c"), false, f.try)
	ex := wantExhausted(t, err, chain.EndOfChain)
	want := []chain.Attempt{cancelled("a"), hedged(failed("b", chain.ServerError)), hedged(failed("c", chain.ServerError))}
	if got := attempts(chain.Report{Attempts: ex.Attempts}); !reflect.DeepEqual(got, want) {
		t.Fatalf("attempts = %+v, want %+v", got, want)
	}
}

func TestHedge_UnaffordableSecondHedgeKeepsBoth(t *testing.T) {
	// The key can pay for one hedge, not two: a is not dropped, and the first of a and b serves.
	f := newFake(map[string]behavior{"a": after(600*time.Millisecond, "from a"), "b": after(time.Minute, "from b"), "c": serve})
	e := f.engine()
	e.Hedge = func(_ context.Context, _, next chain.Target) bool { return next.Model == "b" }
	res, err := chain.Run(context.Background(), e, hedgePlan(100*time.Millisecond, "a", "b", "c"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	want := []chain.Attempt{served("a"), {Model: "b", Status: chain.Cancelled, Reason: chain.HedgeLost, Hedge: true, HedgeSkipped: chain.HedgeUnaffordable}}
	if got := attempts(res.Report); res.Served != "a" || !reflect.DeepEqual(got, want) {
		t.Fatalf("served %s, report = %+v, want a and %+v", res.Served, got, want)
	}
	if calls := f.Calls(); !reflect.DeepEqual(calls, []string{"a", "b"}) {
		t.Fatalf("calls = %v, want a and b", calls)
	}
}

func TestHedge_FailureOfOneLetsTheOtherRun(t *testing.T) {
	// The hedge b fails at once; a goes on and serves. An attempt is hedged once: c does not
	// start beside a after b's failure.
	f := newFake(map[string]behavior{"a": after(500*time.Millisecond, "from a"), "b": fail(chain.ServerError), "c": hang})
	res, err := chain.Run(context.Background(), f.engine(), hedgePlan(100*time.Millisecond, "a", "b", "c"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	if res.Served != "a" {
		t.Fatalf("served %s, want a", res.Served)
	}
	if got, want := attempts(res.Report), []chain.Attempt{served("a"), hedged(failed("b", chain.ServerError))}; !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
}

func TestHedge_BothFailChainMovesOn(t *testing.T) {
	f := newFake(map[string]behavior{
		"a": failAfter(300*time.Millisecond, chain.ServerError),
		"b": failAfter(50*time.Millisecond, chain.RateLimit),
		"c": serve,
	})
	res, err := chain.Run(context.Background(), f.engine(), hedgePlan(100*time.Millisecond, "a", "b", "c"), true, f.try)
	if err != nil {
		t.Fatal(err)
	}
	want := []chain.Attempt{failed("a", chain.ServerError), hedged(failed("b", chain.RateLimit)), served("c")}
	if got := attempts(res.Report); res.Served != "c" || !reflect.DeepEqual(got, want) {
		t.Fatalf("served %s, report = %+v, want c and %+v", res.Served, got, want)
	}
	tr := f.Transitions()
	// b started later, so c follows b (as the report's order tells), though a failed last.
	if len(tr) != 2 || tr[0].Reason != chain.HedgeAfter || tr[1].Failed != "b" || tr[1].Reason != chain.RateLimit || tr[1].Next != "c" {
		t.Fatalf("transitions = %+v, want a hedge then a failover b → c", tr)
	}
}

func TestHedge_AllFailIsExhausted(t *testing.T) {
	f := newFake(map[string]behavior{"a": failAfter(200*time.Millisecond, chain.ServerError), "b": fail(chain.ServerError)})
	_, err := chain.Run(context.Background(), f.engine(), hedgePlan(100*time.Millisecond, "a", "b"), false, f.try)
	ex := wantExhausted(t, err, chain.EndOfChain)
	if len(ex.Attempts) != 2 || ex.Attempts[0].Model != "a" || ex.Attempts[1].Model != "b" {
		t.Fatalf("attempts = %+v", ex.Attempts)
	}
}

func TestHedge_FirstTokenTimeoutKeepsItsMeaning(t *testing.T) {
	// The primary's first-token timeout (500 ms) passes while its hedge still runs: it is a
	// timeout failure, and the hedge serves.
	p := hedgePlan(100*time.Millisecond, "a", "b")
	p.Targets[0].FirstTokenTimeout = 500 * time.Millisecond
	f := newFake(map[string]behavior{"a": hang, "b": after(time.Second, "from b")})
	res, err := chain.Run(context.Background(), f.engine(), p, true, f.try)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := attempts(res.Report), []chain.Attempt{failed("a", chain.Timeout), hedged(served("b"))}; !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
}

func TestHedge_UnaffordableHedgeWaits(t *testing.T) {
	f := newFake(map[string]behavior{"a": after(400*time.Millisecond, "from a"), "b": serve})
	e := f.engine()
	asked := 0
	e.Hedge = func(_ context.Context, running, next chain.Target) bool {
		asked++
		if running.Model != "a" || next.Model != "b" {
			t.Errorf("asked about %s beside %s", next.Model, running.Model)
		}
		return false
	}
	res, err := chain.Run(context.Background(), e, hedgePlan(100*time.Millisecond, "a", "b"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	want := []chain.Attempt{{Model: "a", Status: chain.Served, HedgeSkipped: chain.HedgeUnaffordable}}
	if got := attempts(res.Report); asked != 1 || res.Served != "a" || !reflect.DeepEqual(got, want) {
		t.Fatalf("asked %d, served %s, report = %+v, want %+v", asked, res.Served, got, want)
	}
	if calls := f.Calls(); !reflect.DeepEqual(calls, []string{"a"}) {
		t.Fatalf("calls = %v, want only a", calls)
	}
}

func TestHedge_UnaffordableHedgeStillFailsOver(t *testing.T) {
	f := newFake(map[string]behavior{"a": failAfter(300*time.Millisecond, chain.ServerError), "b": serve})
	e := f.engine()
	e.Hedge = func(context.Context, chain.Target, chain.Target) bool { return false }
	res, err := chain.Run(context.Background(), e, hedgePlan(100*time.Millisecond, "a", "b"), false, f.try)
	if err != nil {
		t.Fatal(err)
	}
	want := []chain.Attempt{{Model: "a", Status: chain.Failed, Reason: chain.ServerError, HedgeSkipped: chain.HedgeUnaffordable}, served("b")}
	if got := attempts(res.Report); !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
}

func TestHedge_CallerCancelEndsBoth(t *testing.T) {
	f := newFake(map[string]behavior{"a": hang, "b": hang})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := chain.Run(ctx, f.engine(), hedgePlan(100*time.Millisecond, "a", "b"), true, f.try)
	if err != chain.ErrCanceled {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
	f.waitDone(t, "a")
	f.waitDone(t, "b")
}

func TestHedge_FinalErrorLetsTheOtherServe(t *testing.T) {
	f := newFake(map[string]behavior{"a": after(300*time.Millisecond, "from a"), "b": fail("")})
	res, err := chain.Run(context.Background(), f.engine(), hedgePlan(100*time.Millisecond, "a", "b"), false, f.try)
	if err != nil || res.Served != "a" {
		t.Fatalf("served %q, err %v; want a", res.Served, err)
	}
	if got, want := attempts(res.Report), []chain.Attempt{served("a"), hedged(failed("b", chain.Rejected))}; !reflect.DeepEqual(got, want) {
		t.Fatalf("report = %+v, want %+v", got, want)
	}
}

func TestHedge_FinalErrorStopsWhenAlone(t *testing.T) {
	f := newFake(map[string]behavior{"a": failAfter(300*time.Millisecond, chain.ServerError), "b": fail(""), "c": serve})
	_, err := chain.Run(context.Background(), f.engine(), hedgePlan(100*time.Millisecond, "a", "b", "c"), false, f.try)
	var st *chain.Stopped
	if !asStopped(err, &st) || len(st.Attempts) != 2 {
		t.Fatalf("err = %v, want Stopped after a and b", err)
	}
	if calls := f.Calls(); len(calls) != 2 {
		t.Fatalf("calls = %v, c must not start after a final refusal", calls)
	}
}

func asStopped(err error, st **chain.Stopped) bool {
	s, ok := err.(*chain.Stopped)
	*st = s
	return ok
}

func TestHedge_OffRunsOneAtATime(t *testing.T) {
	// Without hedge_after_ms nothing starts beside a slow attempt.
	f := newFake(map[string]behavior{"a": after(300*time.Millisecond, "from a"), "b": serve})
	res, err := chain.Run(context.Background(), f.engine(), plan(chain.AllTriggers, long, long, "a", "b"), false, f.try)
	if err != nil || res.Served != "a" {
		t.Fatalf("served %q, err %v", res.Served, err)
	}
	if calls := f.Calls(); !reflect.DeepEqual(calls, []string{"a"}) || res.Report.Occurred {
		t.Fatalf("calls = %v, occurred %v", calls, res.Report.Occurred)
	}
}

func TestParseHedgeAfter(t *testing.T) {
	s, err := chain.ParseSpec([]byte(`{"model":"a","fallback_models":["b"],"redundancy":{"hedge_after_ms":300}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := chain.Resolve(s, nil, chain.ProjectSettings)
	if err != nil || p.HedgeAfter != 300*time.Millisecond {
		t.Fatalf("plan %+v, err %v; want hedge after 300 ms", p, err)
	}
	// The request's value wins over the key's; the key's applies when the request sets none.
	keyDefaults := &chain.Defaults{Models: []string{"a", "b"}, HedgeAfterMS: 900}
	if p, _ := chain.Resolve(s, keyDefaults, chain.ProjectSettings); p.HedgeAfter != 300*time.Millisecond {
		t.Errorf("request over key: hedge after %s", p.HedgeAfter)
	}
	if p, _ := chain.Resolve(chain.Spec{Model: "a"}, keyDefaults, chain.ProjectSettings); p.HedgeAfter != 900*time.Millisecond {
		t.Errorf("key defaults: hedge after %s", p.HedgeAfter)
	}
	if plain, _ := chain.Resolve(chain.Spec{Model: "a"}, nil, chain.ProjectSettings); plain.HedgeAfter != 0 {
		t.Errorf("hedging is on by default: %s", plain.HedgeAfter)
	}
	d, err := chain.NormalizeDefaults(chain.Defaults{Models: []string{"a"}, HedgeAfterMS: 5})
	if err != nil || d.HedgeAfterMS != chain.MinHedgeAfterMS {
		t.Errorf("admin hedge_after_ms clamped to %d (%v)", d.HedgeAfterMS, err)
	}
	_, err = chain.NormalizeDefaults(chain.Defaults{Models: []string{"a"}, HedgeAfterMS: 500, Retry: &chain.RetryOptions{Attempts: 1}})
	wantInputError(t, err, "failoverDefaults.hedge_after_ms")
	for _, tc := range []struct{ body, field string }{
		{`{"model":"a","redundancy":{"hedge_after_ms":99}}`, "redundancy.hedge_after_ms"},
		{`{"model":"a","redundancy":{"hedge_after_ms":60001}}`, "redundancy.hedge_after_ms"},
		{`{"model":"a","redundancy":{"hedge_after_ms":"300"}}`, "redundancy.hedge_after_ms"},
		{`{"model":"a","redundancy":{"hedge_after_ms":300.5}}`, "redundancy.hedge_after_ms"},
	} {
		_, err := chain.ParseSpec([]byte(tc.body))
		wantInputError(t, err, tc.field)
	}
	s, err = chain.ParseSpec([]byte(`{"model":"a","redundancy":{"hedge_after_ms":300,"retry":{"attempts":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = chain.Resolve(s, nil, chain.ProjectSettings)
	wantInputError(t, err, "redundancy.hedge_after_ms")
}
