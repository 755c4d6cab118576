package chain_test

import (
	"reflect"
	"testing"

	"github.com/secureai-gateway/gateway/internal/chain"
)

func TestNormalizeDefaults_Accepts(t *testing.T) {
	tests := []struct {
		name string
		in   chain.Defaults
		want chain.Defaults
	}{
		{"3.2 defaults: timeout_ms below range clamped to 1000",
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 10},
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 1000}},
		{"3.2 defaults: negative timeout_ms clamped to 1000",
			chain.Defaults{Models: []string{"a"}, TimeoutMS: -5},
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 1000}},
		{"3.2 defaults: timeout_ms above range clamped to 300000",
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 999999},
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 300000}},
		{"3.2 defaults: first_token_timeout_ms below range clamped to 500",
			chain.Defaults{Models: []string{"a"}, FirstTokenTimeoutMS: 1},
			chain.Defaults{Models: []string{"a"}, FirstTokenTimeoutMS: 500}},
		{"3.2 defaults: first_token_timeout_ms above range clamped to 60000",
			chain.Defaults{Models: []string{"a"}, FirstTokenTimeoutMS: 60001},
			chain.Defaults{Models: []string{"a"}, FirstTokenTimeoutMS: 60000}},
		{"3.2 defaults: in-range values kept, boundaries inclusive",
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 300000, FirstTokenTimeoutMS: 500},
			chain.Defaults{Models: []string{"a"}, TimeoutMS: 300000, FirstTokenTimeoutMS: 500}},
		{"3.2 defaults: unset timeouts stay unset",
			chain.Defaults{Models: []string{"a", "b"}},
			chain.Defaults{Models: []string{"a", "b"}}},
		{"3.2 defaults: at most 3 distinct models after dedupe",
			chain.Defaults{Models: []string{"a", "b", "a", "c", "b"}},
			chain.Defaults{Models: []string{"a", "b", "c"}}},
		{"3.2 defaults: on normalized to canonical order",
			chain.Defaults{Models: []string{"a"}, On: []chain.Reason{chain.Timeout, chain.ConnectionError, chain.Timeout}},
			chain.Defaults{Models: []string{"a"}, On: []chain.Reason{chain.ConnectionError, chain.Timeout}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chain.NormalizeDefaults(tc.in)
			if err != nil {
				t.Fatalf("NormalizeDefaults: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestNormalizeDefaults_Rejects(t *testing.T) {
	tests := []struct {
		name  string
		in    chain.Defaults
		field string
	}{
		{"3.2 defaults: more than 3 distinct models", chain.Defaults{Models: []string{"a", "b", "c", "d"}}, "failoverDefaults.models"},
		{"3.2 defaults: more than 3 distinct models with duplicates", chain.Defaults{Models: []string{"a", "a", "b", "c", "d"}}, "failoverDefaults.models"},
		{"3.2 defaults: unknown trigger", chain.Defaults{Models: []string{"a"}, On: []chain.Reason{"timeout", "bad_request"}}, "failoverDefaults.on"},
		{"3.2 defaults: rejected is not a trigger", chain.Defaults{Models: []string{"a"}, On: []chain.Reason{chain.Rejected}}, "failoverDefaults.on"},
		{"3.2 defaults: empty model name", chain.Defaults{Models: []string{"a", ""}}, "failoverDefaults.models[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chain.NormalizeDefaults(tc.in)
			wantInputError(t, err, tc.field)
		})
	}
}

// A normalized payload resolves as the contract says: the chain starts at model's position and
// uses the (clamped) defaults' timeouts.
func TestNormalizeDefaults_FeedsResolve(t *testing.T) {
	d, err := chain.NormalizeDefaults(chain.Defaults{Models: []string{"a", "b", "b", "c"}, TimeoutMS: 500000, FirstTokenTimeoutMS: 100})
	if err != nil {
		t.Fatal(err)
	}
	p, err := chain.Resolve(chain.Spec{Model: "b"}, &d, project)
	if err != nil {
		t.Fatal(err)
	}
	want := []chain.Target{{Model: "b", Timeout: ms(300000), FirstTokenTimeout: ms(500)}, {Model: "c", Timeout: ms(300000), FirstTokenTimeout: ms(500)}}
	if !reflect.DeepEqual(p.Targets, want) || p.Source != chain.FromKeyDefaults || p.On != chain.AllTriggers {
		t.Fatalf("plan = %+v, want targets %v from key defaults with all triggers", p, want)
	}
}
