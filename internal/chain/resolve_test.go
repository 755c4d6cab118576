package chain_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
)

// Distinct values at every level so a test shows which level won.
var (
	project = chain.Settings{Timeout: 61 * time.Second, FirstTokenTimeout: 16 * time.Second}
	keyDefs = &chain.Defaults{
		Models:              []string{"a", "b", "c"},
		TimeoutMS:           20000,
		FirstTokenTimeoutMS: 4000,
		On:                  []chain.Reason{chain.RateLimit},
	}
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func mustParse(t *testing.T, body string) chain.Spec {
	t.Helper()
	s, err := chain.ParseSpec([]byte(body))
	if err != nil {
		t.Fatalf("ParseSpec(%s): %v", body, err)
	}
	return s
}

func TestResolve_PrecedenceOrder(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		defs   *chain.Defaults
		models []string
		source chain.Source
	}{
		{"3.1.1 models gives exactly that chain", `{"models":["x","y","z"]}`, nil, []string{"x", "y", "z"}, chain.FromModels},
		{"3.1.1 models overrides model", `{"model":"a","models":["x","y"]}`, keyDefs, []string{"x", "y"}, chain.FromModels},
		{"3.1.1 models of one model", `{"models":["x"]}`, nil, []string{"x"}, chain.FromModels},
		{"3.1.2 model plus fallback_models", `{"model":"a","fallback_models":["b","c"]}`, nil, []string{"a", "b", "c"}, chain.FromFallbacks},
		{"3.1.2 fallback_models win over key defaults", `{"model":"a","fallback_models":["y"]}`, keyDefs, []string{"a", "y"}, chain.FromFallbacks},
		{"3.1 fallback_models [] is as if absent", `{"model":"z","fallback_models":[]}`, keyDefs, []string{"z"}, chain.FromSingleModel},
		{"3.1 fallback_models [] still reaches the key defaults", `{"model":"b","fallback_models":[]}`, keyDefs, []string{"b", "c"}, chain.FromKeyDefaults},
		{"3.1.3 model in defaults, first position", `{"model":"a"}`, keyDefs, []string{"a", "b", "c"}, chain.FromKeyDefaults},
		{"3.1.3 model in defaults, middle position", `{"model":"b"}`, keyDefs, []string{"b", "c"}, chain.FromKeyDefaults},
		{"3.1.3 model in defaults, last position", `{"model":"c"}`, keyDefs, []string{"c"}, chain.FromKeyDefaults},
		{"3.1.3 model not in defaults is one attempt", `{"model":"z"}`, keyDefs, []string{"z"}, chain.FromSingleModel},
		{"3.1.3 model with no key defaults is one attempt", `{"model":"a"}`, nil, []string{"a"}, chain.FromSingleModel},
		{"3.1.3 model with empty key defaults is one attempt", `{"model":"a"}`, &chain.Defaults{}, []string{"a"}, chain.FromSingleModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chain.Resolve(mustParse(t, tc.body), tc.defs, project)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got := p.Models(); !reflect.DeepEqual(got, tc.models) {
				t.Errorf("chain = %v, want %v", got, tc.models)
			}
			if p.Source != tc.source {
				t.Errorf("Source = %q, want %q", p.Source, tc.source)
			}
		})
	}
}

func TestResolve_Rejects(t *testing.T) {
	tests := []struct {
		name  string
		spec  chain.Spec
		field string
	}{
		{"3.1 no model at all names model", chain.Spec{}, "model"},
		{"3.1 fallback_models without model names model", chain.Spec{Fallbacks: []chain.Entry{{Model: "b"}}}, "model"},
		{"3.1 more than 3 distinct models", chain.Spec{Models: []chain.Entry{{Model: "a"}, {Model: "b"}, {Model: "c"}, {Model: "d"}}}, "models"},
		{"3.1 more than 3 distinct models after dedupe", chain.Spec{Models: []chain.Entry{{Model: "a"}, {Model: "b"}, {Model: "a"}, {Model: "c"}, {Model: "d"}}}, "models"},
		{"3.1 model plus 3 fallbacks is 4 distinct", chain.Spec{Model: "a", Fallbacks: []chain.Entry{{Model: "b"}, {Model: "c"}, {Model: "d"}}}, "fallback_models"},
		{"3.1 empty models built by hand is no chain", chain.Spec{Models: []chain.Entry{}}, "models"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chain.Resolve(tc.spec, keyDefs, project)
			wantInputError(t, err, tc.field)
		})
	}
}

func TestResolve_DuplicatesCollapse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		targets []chain.Target
	}{
		{"3.1 duplicates collapse before counting (4 entries, 3 distinct)", `{"models":["a","b","a","c"]}`,
			[]chain.Target{{Model: "a", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "b", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "c", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}}},
		{"3.1 first occurrence keeps its place", `{"models":["b","a","b"]}`,
			[]chain.Target{{Model: "b", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "a", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}}},
		{"3.1 first occurrence keeps its timeouts", `{"models":[{"model":"a","timeout_ms":2000},"b",{"model":"a","timeout_ms":9000,"first_token_timeout_ms":900}]}`,
			[]chain.Target{{Model: "a", Timeout: ms(2000), FirstTokenTimeout: ms(16000)}, {Model: "b", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}}},
		{"3.1 bare first occurrence keeps chain-wide timeouts", `{"models":["a",{"model":"a","timeout_ms":9000}]}`,
			[]chain.Target{{Model: "a", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}}},
		{"3.1 fallback repeating model collapses", `{"model":"a","fallback_models":["a","b","a","c"]}`,
			[]chain.Target{{Model: "a", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "b", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "c", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}}},
		{"3.1 key defaults with duplicates collapse", `{"model":"a"}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var defs *chain.Defaults
			want := tc.targets
			if want == nil { // un-normalized key defaults
				defs = &chain.Defaults{Models: []string{"a", "b", "a", "c", "b"}}
				want = []chain.Target{{Model: "a", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "b", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}, {Model: "c", Timeout: ms(61000), FirstTokenTimeout: ms(16000)}}
			}
			p, err := chain.Resolve(mustParse(t, tc.body), defs, project)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if !reflect.DeepEqual(p.Targets, want) {
				t.Fatalf("Targets = %v, want %v", p.Targets, want)
			}
		})
	}
}

func TestResolve_TimeoutPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		defs       *chain.Defaults
		timeout    time.Duration
		firstToken time.Duration
	}{
		{"3.2 project default when nobody set one", `{"models":["a"]}`, nil, ms(61000), ms(16000)},
		{"3.2 project default when key defaults set no timeouts", `{"models":["a"]}`, &chain.Defaults{Models: []string{"a"}}, ms(61000), ms(16000)},
		{"3.2 key default over project default", `{"models":["a"]}`, keyDefs, ms(20000), ms(4000)},
		{"3.2 key default timeout only", `{"models":["a"]}`, &chain.Defaults{TimeoutMS: 7000}, ms(7000), ms(16000)},
		{"3.2 key default first token only", `{"models":["a"]}`, &chain.Defaults{FirstTokenTimeoutMS: 700}, ms(61000), ms(700)},
		{"3.1.3 key default chain uses the defaults' timeouts", `{"model":"b"}`, keyDefs, ms(20000), ms(4000)},
		{"3.2 redundancy over key default", `{"models":["a"],"redundancy":{"timeout_ms":30000,"first_token_timeout_ms":5000}}`, keyDefs, ms(30000), ms(5000)},
		{"3.2 redundancy over project default", `{"models":["a"],"redundancy":{"timeout_ms":30000,"first_token_timeout_ms":5000}}`, nil, ms(30000), ms(5000)},
		{"3.2 redundancy timeout only keeps key first token", `{"models":["a"],"redundancy":{"timeout_ms":30000}}`, keyDefs, ms(30000), ms(4000)},
		{"3.2 redundancy over key default for a key default chain", `{"model":"a","redundancy":{"timeout_ms":1000}}`, keyDefs, ms(1000), ms(4000)},
		{"3.2 entry over redundancy", `{"models":[{"model":"a","timeout_ms":2000,"first_token_timeout_ms":600}],"redundancy":{"timeout_ms":30000,"first_token_timeout_ms":5000}}`, keyDefs, ms(2000), ms(600)},
		{"3.2 entry over key default", `{"models":[{"model":"a","timeout_ms":2000,"first_token_timeout_ms":600}]}`, keyDefs, ms(2000), ms(600)},
		{"3.2 entry over project default", `{"models":[{"model":"a","timeout_ms":2000,"first_token_timeout_ms":600}]}`, nil, ms(2000), ms(600)},
		{"3.2 entry first token only keeps redundancy timeout", `{"models":[{"model":"a","first_token_timeout_ms":600}],"redundancy":{"timeout_ms":30000}}`, keyDefs, ms(30000), ms(600)},
		{"3.2 fallback entry over redundancy", `{"model":"z","fallback_models":[{"model":"a","timeout_ms":2000}],"redundancy":{"timeout_ms":30000}}`, nil, ms(2000), ms(16000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chain.Resolve(mustParse(t, tc.body), tc.defs, project)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			var got *chain.Target
			for i := range p.Targets {
				if p.Targets[i].Model == "a" || p.Targets[i].Model == "b" {
					got = &p.Targets[i]
					break
				}
			}
			if got == nil {
				t.Fatalf("no target a/b in %v", p.Targets)
			}
			if got.Timeout != tc.timeout || got.FirstTokenTimeout != tc.firstToken {
				t.Fatalf("%s: Timeout=%v FirstTokenTimeout=%v, want %v %v", got.Model, got.Timeout, got.FirstTokenTimeout, tc.timeout, tc.firstToken)
			}
		})
	}
}

func TestResolve_EntryTimeoutsApplyToThatAttemptOnly(t *testing.T) {
	p, err := chain.Resolve(mustParse(t, `{"models":["a",{"model":"b","timeout_ms":2000},"c"],"redundancy":{"timeout_ms":30000}}`), nil, project)
	if err != nil {
		t.Fatal(err)
	}
	want := []chain.Target{{Model: "a", Timeout: ms(30000), FirstTokenTimeout: ms(16000)}, {Model: "b", Timeout: ms(2000), FirstTokenTimeout: ms(16000)}, {Model: "c", Timeout: ms(30000), FirstTokenTimeout: ms(16000)}}
	if !reflect.DeepEqual(p.Targets, want) {
		t.Fatalf("Targets = %v, want %v", p.Targets, want)
	}
}

func TestResolve_OnPrecedence(t *testing.T) {
	tests := []struct {
		name string
		body string
		defs *chain.Defaults
		want chain.Triggers
	}{
		{"3.2 on defaults to all four", `{"models":["a","b"]}`, nil, chain.AllTriggers},
		{"3.2 on defaults to all four when key sets none", `{"models":["a","b"]}`, &chain.Defaults{Models: []string{"a"}}, chain.AllTriggers},
		{"3.2 key defaults on over all four", `{"models":["a","b"]}`, keyDefs, triggers(chain.RateLimit)},
		{"3.1.3 key default chain uses the defaults' triggers", `{"model":"a"}`, keyDefs, triggers(chain.RateLimit)},
		{"3.2 request on over key defaults", `{"model":"a","redundancy":{"on":["timeout","server_error"]}}`, keyDefs, triggers(chain.Timeout, chain.ServerError)},
		{"3.2 request on over all four", `{"models":["a","b"],"redundancy":{"on":["connection_error"]}}`, nil, triggers(chain.ConnectionError)},
		{"3.2 request empty on disables failover", `{"models":["a","b"],"redundancy":{"on":[]}}`, keyDefs, 0},
		{"3.2 redundancy without on keeps key defaults on", `{"models":["a","b"],"redundancy":{"timeout_ms":5000}}`, keyDefs, triggers(chain.RateLimit)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := chain.Resolve(mustParse(t, tc.body), tc.defs, project)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if p.On != tc.want {
				t.Fatalf("On = %v, want %v", p.On.List(), tc.want.List())
			}
		})
	}
}

func triggers(rs ...chain.Reason) chain.Triggers {
	var names []string
	for _, r := range rs {
		names = append(names, string(r))
	}
	t, err := chain.ParseTriggers("on", names)
	if err != nil {
		panic(err)
	}
	return t
}

func TestTriggers(t *testing.T) {
	if got := chain.AllTriggers.List(); !reflect.DeepEqual(got, []chain.Reason{chain.ConnectionError, chain.ServerError, chain.RateLimit, chain.Timeout}) {
		t.Errorf("AllTriggers = %v, want all four in canonical order", got)
	}
	for _, r := range []chain.Reason{"", chain.Rejected, "bad_request"} {
		if chain.AllTriggers.Has(r) {
			t.Errorf("AllTriggers.Has(%q) = true; only the four reasons trigger failover", r)
		}
	}
	_, err := chain.ParseTriggers("redundancy.on", []string{"timeout", "nope"})
	wantInputError(t, err, "redundancy.on")
}

// Issue 34 item 9: hedging and same-model retries cannot be combined; the refusal names the field
// the request sent and says the way out — when the retry is the key's default, that a request
// turns it off with "retry": {"attempts": 0} and then may hedge.
func TestResolve_HedgeWithRetrySaysTheWayOut(t *testing.T) {
	retrying := &chain.Defaults{Models: []string{"a", "b"}, Retry: &chain.RetryOptions{Attempts: 2}}
	hedging := &chain.Defaults{Models: []string{"a", "b"}, HedgeAfterMS: 400}
	for _, tc := range []struct {
		name, body string
		defaults   *chain.Defaults
		field      string
		says       []string
	}{
		{"the key's retry, the request's hedge", `{"models":["a","b"],"redundancy":{"hedge_after_ms":300}}`, retrying,
			"redundancy.hedge_after_ms", []string{"failoverDefaults", `"retry": {"attempts": 0}`}},
		{"both the request's", `{"models":["a","b"],"redundancy":{"hedge_after_ms":300,"retry":{"attempts":1}}}`, nil,
			"redundancy.hedge_after_ms", []string{"redundancy.retry", `"attempts": 0`}},
		{"the key's hedge, the request's retry", `{"models":["a","b"],"redundancy":{"retry":{"attempts":1}}}`, hedging,
			"redundancy.retry", []string{"failoverDefaults", "hedge_after_ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chain.Resolve(mustParse(t, tc.body), tc.defaults, project)
			wantInputError(t, err, tc.field)
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %s", err, s)
				}
			}
		})
	}
	// The way out works: the key's retry turned off, the request hedges.
	p, err := chain.Resolve(mustParse(t, `{"models":["a","b"],"redundancy":{"hedge_after_ms":300,"retry":{"attempts":0}}}`), retrying, project)
	if err != nil || p.HedgeAfter != ms(300) || p.Retry.Attempts != 0 {
		t.Errorf("retry off and a hedge: %+v, %v", p, err)
	}
	// A null hedge_after_ms is unset: the key's retry applies and nothing is refused.
	p, err = chain.Resolve(mustParse(t, `{"models":["a","b"],"redundancy":{"hedge_after_ms":null}}`), retrying, project)
	if err != nil || p.HedgeAfter != 0 || p.Retry.Attempts != 2 {
		t.Errorf("hedge_after_ms null: %+v, %v", p, err)
	}
}
