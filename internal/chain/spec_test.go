package chain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/tidwall/gjson"
)

// wantInputError asserts err is an *chain.InputError naming field.
func wantInputError(t *testing.T, err error, field string) {
	t.Helper()
	var ie *chain.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error = %v (%T), want *chain.InputError naming %q", err, err, field)
	}
	if ie.Field != field {
		t.Fatalf("InputError.Field = %q, want %q (error: %v)", ie.Field, field, err)
	}
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("error text %q does not name the field %q", err.Error(), field)
	}
}

func TestParseSpec_Accepts(t *testing.T) {
	tests := []struct {
		name string
		body string
		want chain.Spec
	}{
		{"3.1 no chain fields at all", `{"messages":[]}`, chain.Spec{}},
		{"3.1 model alone", `{"model":"openai/gpt-5-nano"}`, chain.Spec{Model: "openai/gpt-5-nano"}},
		{"3.1 null fields mean absent", `{"model":null,"models":null,"fallback_models":null,"redundancy":null}`, chain.Spec{}},
		{"3.1.1 models as strings", `{"models":["a","b","c"]}`,
			chain.Spec{Models: []chain.Entry{{Model: "a"}, {Model: "b"}, {Model: "c"}}}},
		{"3.1.1 models as objects", `{"models":[{"model":"a","timeout_ms":30000,"first_token_timeout_ms":5000},{"model":"b"}]}`,
			chain.Spec{Models: []chain.Entry{{Model: "a", TimeoutMS: 30000, FirstTokenTimeoutMS: 5000}, {Model: "b"}}}},
		{"3.1.1 models mixed strings and objects", `{"models":["a",{"model":"b","timeout_ms":2000},"c"]}`,
			chain.Spec{Models: []chain.Entry{{Model: "a"}, {Model: "b", TimeoutMS: 2000}, {Model: "c"}}}},
		{"3.1.1 models overrides model (both kept for Resolve)", `{"model":"x","models":["a"]}`,
			chain.Spec{Model: "x", Models: []chain.Entry{{Model: "a"}}}},
		{"3.1.2 model plus fallback_models", `{"model":"a","fallback_models":["b",{"model":"c","first_token_timeout_ms":500}]}`,
			chain.Spec{Model: "a", Fallbacks: []chain.Entry{{Model: "b"}, {Model: "c", FirstTokenTimeoutMS: 500}}}},
		{"3.1 duplicates are parsed and left to Resolve", `{"models":["a","b","a","c"]}`,
			chain.Spec{Models: []chain.Entry{{Model: "a"}, {Model: "b"}, {Model: "a"}, {Model: "c"}}}},
		{"3.2 redundancy all fields", `{"model":"a","redundancy":{"timeout_ms":30000,"first_token_timeout_ms":5000,"on":["timeout","rate_limit"]}}`,
			chain.Spec{Model: "a", Redundancy: chain.Options{TimeoutMS: 30000, FirstTokenTimeoutMS: 5000, On: []chain.Reason{chain.RateLimit, chain.Timeout}}}},
		{"3.2 redundancy on all four", `{"model":"a","redundancy":{"on":["connection_error","server_error","rate_limit","timeout"]}}`,
			chain.Spec{Model: "a", Redundancy: chain.Options{On: []chain.Reason{chain.ConnectionError, chain.ServerError, chain.RateLimit, chain.Timeout}}}},
		{"3.2 redundancy on empty set is a valid subset", `{"model":"a","redundancy":{"on":[]}}`,
			chain.Spec{Model: "a", Redundancy: chain.Options{On: []chain.Reason{}}}},
		{"3.2 redundancy empty object", `{"model":"a","redundancy":{}}`, chain.Spec{Model: "a"}},
		{"3.2 integral number written with exponent", `{"model":"a","redundancy":{"timeout_ms":1e3}}`,
			chain.Spec{Model: "a", Redundancy: chain.Options{TimeoutMS: 1000}}},
		// Issue 34 item 9: null means unset inside redundancy and an entry too, as it does for the
		// chain fields themselves (SDKs send a None as null).
		{"3.5a redundancy members null are unset", `{"model":"a","redundancy":{"timeout_ms":null,"first_token_timeout_ms":null,"on":null,"retry":null,"on_interrupt":null,"skip_unhealthy":null,"hedge_after_ms":null}}`,
			chain.Spec{Model: "a"}},
		{"3.5a hedge_after_ms null beside a set member", `{"model":"a","redundancy":{"hedge_after_ms":null,"timeout_ms":2000}}`,
			chain.Spec{Model: "a", Redundancy: chain.Options{TimeoutMS: 2000}}},
		{"3.1 entry timeouts null are unset", `{"models":[{"model":"a","timeout_ms":null,"first_token_timeout_ms":null}]}`,
			chain.Spec{Models: []chain.Entry{{Model: "a"}}}},
		{"3.5a retry members null are unset", `{"model":"a","redundancy":{"retry":{"attempts":1,"max_wait_ms":null}}}`,
			chain.Spec{Model: "a", Redundancy: chain.Options{Retry: &chain.RetryOptions{Attempts: 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chain.ParseSpec([]byte(tc.body))
			if err != nil {
				t.Fatalf("ParseSpec(%s) error: %v", tc.body, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseSpec(%s)\n got %#v\nwant %#v", tc.body, got, tc.want)
			}
		})
	}
}

func TestParseSpec_Rejects(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string
	}{
		// 3.1 rules: entry shape.
		{"3.1 unknown entry field", `{"models":["a",{"model":"b","foo":1}]}`, "models[1].foo"},
		{"3.1 unknown entry field in fallback_models", `{"model":"a","fallback_models":[{"model":"b","retries":2}]}`, "fallback_models[0].retries"},
		{"3.1 entry object without model", `{"models":[{"timeout_ms":2000}]}`, "models[0].model"},
		{"3.1 entry model not a string", `{"models":[{"model":42}]}`, "models[0].model"},
		{"3.1 entry model empty", `{"models":[{"model":""}]}`, "models[0].model"},
		{"3.1 entry empty string", `{"models":["a",""]}`, "models[1]"},
		{"3.1 entry a number", `{"models":[1]}`, "models[0]"},
		{"3.1 entry null", `{"models":["a",null]}`, "models[1]"},
		{"3.1 entry an array", `{"models":[["a"]]}`, "models[0]"},
		{"3.1 models not an array", `{"models":"a"}`, "models"},
		{"3.1 models an object", `{"models":{"model":"a"}}`, "models"},
		{"3.1 models empty array", `{"models":[]}`, "models"},
		{"3.1 fallback_models not an array", `{"model":"a","fallback_models":"b"}`, "fallback_models"},
		{"3.1 duplicate key inside a models entry", `{"models":[{"model":"a","model":"b"}]}`, "models[0].model"},
		{"3.1 duplicate key inside a fallback entry", `{"model":"a","fallback_models":[{"model":"b","timeout_ms":1000,"timeout_ms":2000}]}`, "fallback_models[0].timeout_ms"},
		{"3.2 duplicate key inside redundancy", `{"model":"a","redundancy":{"on":["timeout"],"on":["server_error"]}}`, "redundancy.on"},
		{"3.2 duplicate key inside redundancy, one null", `{"model":"a","redundancy":{"hedge_after_ms":null,"hedge_after_ms":500}}`, "redundancy.hedge_after_ms"},
		{"3.1 entry model null", `{"models":[{"model":null}]}`, "models[0].model"},
		{"3.1 model not a string", `{"model":["a"]}`, "model"},
		{"3.1 models with fallback_models", `{"models":["a"],"fallback_models":["b"]}`, "fallback_models"},
		{"3.1 models with fallback_models and model", `{"model":"a","models":["a","b"],"fallback_models":["c"]}`, "fallback_models"},

		// 3.2 ranges on entries (inclusive bounds accepted elsewhere).
		{"3.2 entry timeout_ms 999", `{"models":[{"model":"a","timeout_ms":999}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms 300001", `{"models":[{"model":"a","timeout_ms":300001}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms 0", `{"models":[{"model":"a","timeout_ms":0}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms negative", `{"models":[{"model":"a","timeout_ms":-1000}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms huge", `{"models":[{"model":"a","timeout_ms":1e30}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms fractional", `{"models":[{"model":"a","timeout_ms":1000.5}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms string", `{"models":[{"model":"a","timeout_ms":"1000"}]}`, "models[0].timeout_ms"},
		{"3.2 entry timeout_ms bool", `{"models":[{"model":"a","timeout_ms":true}]}`, "models[0].timeout_ms"},
		{"3.2 entry first_token_timeout_ms 499", `{"models":[{"model":"a","first_token_timeout_ms":499}]}`, "models[0].first_token_timeout_ms"},
		{"3.2 entry first_token_timeout_ms 60001", `{"models":[{"model":"a","first_token_timeout_ms":60001}]}`, "models[0].first_token_timeout_ms"},
		{"3.2 entry first_token_timeout_ms fractional", `{"models":[{"model":"a","first_token_timeout_ms":500.1}]}`, "models[0].first_token_timeout_ms"},
		{"3.2 fallback entry first_token_timeout_ms 60001", `{"model":"a","fallback_models":[{"model":"b","first_token_timeout_ms":60001}]}`, "fallback_models[0].first_token_timeout_ms"},

		// 3.2 ranges on redundancy.
		{"3.2 redundancy timeout_ms 999", `{"model":"a","redundancy":{"timeout_ms":999}}`, "redundancy.timeout_ms"},
		{"3.2 redundancy timeout_ms 300001", `{"model":"a","redundancy":{"timeout_ms":300001}}`, "redundancy.timeout_ms"},
		{"3.2 redundancy timeout_ms fractional", `{"model":"a","redundancy":{"timeout_ms":30000.25}}`, "redundancy.timeout_ms"},
		{"3.2 redundancy timeout_ms string", `{"model":"a","redundancy":{"timeout_ms":"30000"}}`, "redundancy.timeout_ms"},
		{"3.2 redundancy first_token_timeout_ms 499", `{"model":"a","redundancy":{"first_token_timeout_ms":499}}`, "redundancy.first_token_timeout_ms"},
		{"3.2 redundancy first_token_timeout_ms 60001", `{"model":"a","redundancy":{"first_token_timeout_ms":60001}}`, "redundancy.first_token_timeout_ms"},
		{"3.2 redundancy first_token_timeout_ms fractional", `{"model":"a","redundancy":{"first_token_timeout_ms":999.9}}`, "redundancy.first_token_timeout_ms"},
		{"3.2 redundancy unknown field", `{"model":"a","redundancy":{"retries":2}}`, "redundancy.retries"},
		{"3.2 redundancy not an object", `{"model":"a","redundancy":[1]}`, "redundancy"},
		{"3.2 redundancy on unknown trigger", `{"model":"a","redundancy":{"on":["timeout","bad_request"]}}`, "redundancy.on"},
		{"3.2 redundancy on not an array", `{"model":"a","redundancy":{"on":"timeout"}}`, "redundancy.on"},
		{"3.2 redundancy on entry not a string", `{"model":"a","redundancy":{"on":[1]}}`, "redundancy.on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chain.ParseSpec([]byte(tc.body))
			wantInputError(t, err, tc.field)
		})
	}
}

// Issue 34.3: a model name is bounded at validation, for every provider (an any_model provider
// admits any name): too long, or a character outside ASCII letters, digits and / . _ - : @ +, is
// a 400 naming the field, wherever the name is sent.
func TestParseSpec_ModelNamesAreBounded(t *testing.T) {
	bad := map[string]string{
		"a megabyte":               "loose/" + strings.Repeat("a", 1<<20),
		"one byte over":            "loose/" + strings.Repeat("a", chain.MaxModelName-len("loose/")+1),
		"a NUL":                    "loose/a\x00b",
		"a right-to-left override": "loose/\u202egpt",
		"a space":                  "loose/gpt 5",
		"a newline":                "loose/gpt\n5",
		"a non-ASCII letter":       "loose/gpt-é",
		"a quote":                  `loose/gpt"5`,
	}
	for what, name := range bad {
		q, _ := json.Marshal(name) // as a client sends it: NUL, newline and quote escaped
		for _, tc := range []struct{ body, field string }{
			{`{"model":` + string(q) + `}`, "model"},
			{`{"models":["a",` + string(q) + `]}`, "models[1]"},
			{`{"models":[{"model":` + string(q) + `}]}`, "models[0].model"},
			{`{"model":"a","fallback_models":["b","c",` + string(q) + `]}`, "fallback_models[2]"},
			{`{"model":"a","fallback_models":[{"model":` + string(q) + `,"timeout_ms":1000}]}`, "fallback_models[0].model"},
		} {
			t.Run(what+" in "+tc.field, func(t *testing.T) {
				_, err := chain.ParseSpec([]byte(tc.body))
				wantInputError(t, err, tc.field)
				if len(err.Error()) > 200 {
					t.Errorf("the error quotes the name back: %.300s", err)
				}
			})
		}
	}
	for _, name := range []string{
		"loose/" + strings.Repeat("a", chain.MaxModelName-len("loose/")),
		"bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0",
		"bedrock/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0",
		"openrouter/anthropic/claude-3.5-sonnet:beta",
		"ollama/llama3.2:latest",
		"together/meta-llama/Llama-3.3-70B-Instruct-Turbo",
		"openai/ft:gpt-4o-mini-2024-07-18:acme::AbC123",
		"vertex/claude-3-5-sonnet@20240620",
		"hf/org/model+lora",
	} {
		if !chain.ValidModelName(name) {
			t.Errorf("%q is refused; it is a real provider's id", name)
		}
		s, err := chain.ParseSpec([]byte(`{"model":"` + name + `","fallback_models":["` + name + `"]}`))
		if err != nil || s.Model != name || s.Fallbacks[0].Model != name {
			t.Errorf("%q: %+v, %v", name, s, err)
		}
	}
}

func TestParseSpec_HugeValueReportsTheRange(t *testing.T) {
	for _, v := range []string{"1e30", "-1e30", "9223372036854775808", "18446744073709551616000"} {
		_, err := chain.ParseSpec([]byte(`{"model":"a","redundancy":{"timeout_ms":` + v + `}}`))
		wantInputError(t, err, "redundancy.timeout_ms")
		if !strings.Contains(err.Error(), "between 1000 and 300000") {
			t.Errorf("timeout_ms %s: message %q, want the allowed range", v, err)
		}
	}
}

func TestParseSpec_RangeBoundariesInclusive(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		entry chain.Entry
		opts  chain.Options
	}{
		{"3.2 entry timeout_ms 1000", `{"models":[{"model":"a","timeout_ms":1000}]}`, chain.Entry{Model: "a", TimeoutMS: 1000}, chain.Options{}},
		{"3.2 entry timeout_ms 300000", `{"models":[{"model":"a","timeout_ms":300000}]}`, chain.Entry{Model: "a", TimeoutMS: 300000}, chain.Options{}},
		{"3.2 entry first_token_timeout_ms 500", `{"models":[{"model":"a","first_token_timeout_ms":500}]}`, chain.Entry{Model: "a", FirstTokenTimeoutMS: 500}, chain.Options{}},
		{"3.2 entry first_token_timeout_ms 60000", `{"models":[{"model":"a","first_token_timeout_ms":60000}]}`, chain.Entry{Model: "a", FirstTokenTimeoutMS: 60000}, chain.Options{}},
		{"3.2 redundancy timeout_ms 1000", `{"models":["a"],"redundancy":{"timeout_ms":1000}}`, chain.Entry{Model: "a"}, chain.Options{TimeoutMS: 1000}},
		{"3.2 redundancy timeout_ms 300000", `{"models":["a"],"redundancy":{"timeout_ms":300000}}`, chain.Entry{Model: "a"}, chain.Options{TimeoutMS: 300000}},
		{"3.2 redundancy first_token_timeout_ms 500", `{"models":["a"],"redundancy":{"first_token_timeout_ms":500}}`, chain.Entry{Model: "a"}, chain.Options{FirstTokenTimeoutMS: 500}},
		{"3.2 redundancy first_token_timeout_ms 60000", `{"models":["a"],"redundancy":{"first_token_timeout_ms":60000}}`, chain.Entry{Model: "a"}, chain.Options{FirstTokenTimeoutMS: 60000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := chain.ParseSpec([]byte(tc.body))
			if err != nil {
				t.Fatalf("ParseSpec: %v", err)
			}
			if len(s.Models) != 1 || s.Models[0] != tc.entry {
				t.Fatalf("Models = %#v, want [%#v]", s.Models, tc.entry)
			}
			if !reflect.DeepEqual(s.Redundancy, tc.opts) {
				t.Fatalf("Redundancy = %#v, want %#v", s.Redundancy, tc.opts)
			}
		})
	}
}

// FuzzParseSpec: ParseSpec never panics, and whatever it accepts satisfies the chain rules.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		`{"model":"openai/gpt-5-nano"}`,
		`{"models":["a",{"model":"b","timeout_ms":30000,"first_token_timeout_ms":5000},"c"]}`,
		`{"model":"a","fallback_models":["b","c"],"redundancy":{"timeout_ms":1000,"first_token_timeout_ms":500,"on":["timeout"]}}`,
		`{"models":[{"model":"a","foo":1}]}`,
		`{"models":[],"redundancy":{"on":"x"}}`,
		`{"models":[{"model":"a","timeout_ms":1e400}]}`,
		`{"models":["a"],"fallback_models":["b"]}`,
		`[1,2,3]`,
		`{"models":[`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := chain.ParseSpec(body)
		if err != nil {
			var ie *chain.InputError
			if !errors.As(err, &ie) || ie.Field == "" {
				t.Fatalf("error %v (%T) is not an *InputError naming a field", err, err)
			}
			return
		}
		if s.Models != nil && s.Fallbacks != nil {
			t.Fatalf("accepted both models and fallback_models: %#v", s)
		}
		for _, list := range [][]chain.Entry{s.Models, s.Fallbacks} {
			if list != nil && len(list) == 0 {
				t.Fatalf("accepted an empty chain list: %#v", s)
			}
			for _, e := range list {
				if e.Model == "" {
					t.Fatalf("accepted an entry without a model: %#v", s)
				}
				checkMS(t, "entry timeout_ms", e.TimeoutMS, chain.MinTimeoutMS, chain.MaxTimeoutMS)
				checkMS(t, "entry first_token_timeout_ms", e.FirstTokenTimeoutMS, chain.MinFirstTokenTimeoutMS, chain.MaxFirstTokenTimeoutMS)
			}
		}
		checkMS(t, "redundancy.timeout_ms", s.Redundancy.TimeoutMS, chain.MinTimeoutMS, chain.MaxTimeoutMS)
		checkMS(t, "redundancy.first_token_timeout_ms", s.Redundancy.FirstTokenTimeoutMS, chain.MinFirstTokenTimeoutMS, chain.MaxFirstTokenTimeoutMS)
		for _, r := range s.Redundancy.On {
			if !chain.AllTriggers.Has(r) {
				t.Fatalf("accepted unknown trigger %q", r)
			}
		}
	})
}

func checkMS(t *testing.T, what string, v, lo, hi int) {
	t.Helper()
	if v != 0 && (v < lo || v > hi) {
		t.Fatalf("accepted %s = %d outside %d..%d", what, v, lo, hi)
	}
}

// Clients that can set headers but not body members name their chain in X-SecureAI-Models or
// X-SecureAI-Fallback-Models; a chain in the body wins, and bad names are refused naming the
// header.
func TestChainFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, body, models, fallbacks string
		wantModels, wantFallbacks     []string
		wantErr                       string
	}{
		{name: "fallbacks", body: `{"model":"a/x"}`, fallbacks: "b/y, c/z", wantFallbacks: []string{"b/y", "c/z"}},
		{name: "models", body: `{"model":"a/x"}`, models: "b/y,c/z", wantModels: []string{"b/y", "c/z"}},
		{name: "the body wins", body: `{"model":"a/x","fallback_models":["d/w"]}`, fallbacks: "b/y", wantFallbacks: []string{"d/w"}},
		{name: "both headers", body: `{"model":"a/x"}`, models: "b/y", fallbacks: "c/z", wantErr: chain.HeaderFallbackModels},
		{name: "bad name", body: `{"model":"a/x"}`, fallbacks: "b/y,\u202ebad", wantErr: chain.HeaderFallbackModels + "[1]"},
		{name: "empty entry", body: `{"model":"a/x"}`, fallbacks: "b/y,", wantErr: chain.HeaderFallbackModels + "[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := chain.ParseSpec([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			err = s.FromHeaders(tc.models, tc.fallbacks)
			if tc.wantErr != "" {
				var ie *chain.InputError
				if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := func(es []chain.Entry) (out []string) {
				for _, e := range es {
					out = append(out, e.Model)
				}
				return out
			}
			if !slices.Equal(names(s.Models), tc.wantModels) || !slices.Equal(names(s.Fallbacks), tc.wantFallbacks) {
				t.Errorf("models %v fallbacks %v, want %v %v", names(s.Models), names(s.Fallbacks), tc.wantModels, tc.wantFallbacks)
			}
		})
	}
}

// LiteLLM's fallbacks member is this gateway's fallback_models when it is a list of names;
// anything else, or beside a chain of the gateway's own, is refused naming it.
func TestLiteLLMFallbacks(t *testing.T) {
	for _, tc := range []struct {
		body    string
		want    []string
		wantErr bool
	}{
		{body: `{"model":"a/x","fallbacks":["b/y","c/z"]}`, want: []string{"b/y", "c/z"}},
		{body: `{"model":"a/x","fallbacks":null}`},
		{body: `{"model":"a/x","fallbacks":[{"a/x":["b/y"]}]}`, wantErr: true},
		{body: `{"model":"a/x","fallbacks":"b/y"}`, wantErr: true},
		{body: `{"model":"a/x","fallback_models":["b/y"],"fallbacks":["c/z"]}`, wantErr: true},
	} {
		s, err := chain.ParseSpec([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		err = s.LiteLLMFallbacks(gjson.Get(tc.body, "fallbacks"))
		if tc.wantErr {
			wantInputError(t, err, "fallbacks")
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		var got []string
		for _, e := range s.Fallbacks {
			got = append(got, e.Model)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: fallbacks %v, want %v", tc.body, got, tc.want)
		}
	}
}

// An alias stands for its chain and its options; the request's own options win.
func TestAliasExpands(t *testing.T) {
	a := &chain.Defaults{Models: []string{"a/x", "b/y"}, FirstTokenTimeoutMS: 20000, TimeoutMS: 90000}
	s, err := chain.ParseSpec([]byte(`{"model":"claude-sonnet-4-5","redundancy":{"timeout_ms":5000}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := chain.Resolve(a.Expand(s), nil, chain.ProjectSettings)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Models(); !slices.Equal(got, []string{"a/x", "b/y"}) {
		t.Errorf("chain %v, want the alias's", got)
	}
	if tgt := p.Targets[0]; tgt.Timeout.Milliseconds() != 5000 || tgt.FirstTokenTimeout.Milliseconds() != 20000 {
		t.Errorf("timeouts %v / %v, want the request's 5 s and the alias's 20 s", tgt.Timeout, tgt.FirstTokenTimeout)
	}
}
