package storetest

// The provider health store contract (sharedhealth.Store).

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/sharedhealth"
)

// RunHealth runs the provider health store contract. newStore must return an empty store.
func RunHealth(t *testing.T, newStore func(t *testing.T) sharedhealth.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s sharedhealth.Store)
	}{
		{"a report round-trips exactly", healthRoundTrip},
		{"each instance keeps its own report of a model, replaced by its next", healthPerInstance},
		{"a read returns the reports of the keys asked for, by key", healthByKey},
		{"an expired report is not returned", healthExpired},
		{"a delete removes only that instance's report", healthDelete},
		{"instances writing at once each keep their report", healthConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

var healthBase = time.Date(2026, 12, 5, 10, 0, 0, 123456789, time.UTC)

// deployedKey is how chain.Health names a deployment: the model and its provider apart.
const deployedKey = "demo/deployed east"

func healthReport(key, env string, fails int) sharedhealth.Report {
	return sharedhealth.Report{Key: key, Env: env, Fails: fails, Last: healthBase, Expires: healthBase.Add(time.Minute)}
}

func readHealth(t *testing.T, s sharedhealth.Store, keys ...string) map[string][]sharedhealth.Report {
	t.Helper()
	got, err := s.Health(context.Background(), keys, healthBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range got {
		slices.SortFunc(rs, func(a, b sharedhealth.Report) int { return strings.Compare(a.Env, b.Env) })
	}
	return got
}

func putHealth(t *testing.T, s sharedhealth.Store, rs ...sharedhealth.Report) {
	t.Helper()
	for _, r := range rs {
		if err := s.PutHealth(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func healthSame(t *testing.T, got, want []sharedhealth.Report) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key != w.Key || g.Env != w.Env || g.Fails != w.Fails || !g.Last.Equal(w.Last) || !g.Until.Equal(w.Until) || !g.Expires.Equal(w.Expires) {
			t.Errorf("report %d: got %+v, want %+v", i, g, w)
		}
	}
}

func healthRoundTrip(t *testing.T, s sharedhealth.Store) {
	open := healthReport(deployedKey, "env-a", 3)
	open.Until = healthBase.Add(30 * time.Second)
	putHealth(t, s, open)
	healthSame(t, readHealth(t, s, deployedKey)[deployedKey], []sharedhealth.Report{open})
	if got := readHealth(t, s, "demo/deployed"); len(got) != 0 {
		t.Errorf("the model's key read its deployment's report: %+v", got)
	}
}

func healthPerInstance(t *testing.T, s sharedhealth.Store) {
	a, b := healthReport("m", "env-a", 1), healthReport("m", "env-b", 2)
	putHealth(t, s, a, b)
	a.Fails, a.Last = 2, healthBase.Add(time.Second)
	putHealth(t, s, a)
	healthSame(t, readHealth(t, s, "m")["m"], []sharedhealth.Report{a, b})
}

func healthByKey(t *testing.T, s sharedhealth.Store) {
	x, y, z := healthReport("x", "env-a", 1), healthReport("y", "env-a", 2), healthReport("z", "env-b", 1)
	putHealth(t, s, x, y, z)
	got := readHealth(t, s, "x", "y", "absent")
	if !reflect.DeepEqual(slices.Sorted(mapKeys(got)), []string{"x", "y"}) {
		t.Fatalf("read keys %v, want x and y only", slices.Sorted(mapKeys(got)))
	}
	healthSame(t, got["x"], []sharedhealth.Report{x})
	healthSame(t, got["y"], []sharedhealth.Report{y})
}

func mapKeys(m map[string][]sharedhealth.Report) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func healthExpired(t *testing.T, s sharedhealth.Store) {
	live, gone := healthReport("m", "env-live", 1), healthReport("m", "env-gone", 5)
	gone.Expires = healthBase // expired at the read's now
	putHealth(t, s, live, gone)
	healthSame(t, readHealth(t, s, "m")["m"], []sharedhealth.Report{live})
}

func healthDelete(t *testing.T, s sharedhealth.Store) {
	a, b := healthReport("m", "env-a", 1), healthReport("m", "env-b", 1)
	putHealth(t, s, a, b)
	ctx := context.Background()
	if err := s.DeleteHealth(ctx, "m", "env-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteHealth(ctx, "m", "env-never"); err != nil {
		t.Fatalf("deleting a report never written: %v", err)
	}
	healthSame(t, readHealth(t, s, "m")["m"], []sharedhealth.Report{b})
}

func healthConcurrent(t *testing.T, s sharedhealth.Store) {
	const n = 10
	var wg sync.WaitGroup
	var want []sharedhealth.Report
	for i := range n {
		r := healthReport("m", "env-"+string(rune('a'+i)), i+1)
		want = append(want, r)
		wg.Go(func() {
			if err := s.PutHealth(context.Background(), r); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	healthSame(t, readHealth(t, s, "m")["m"], want)
}
