package storetest

// The circuit breaker store contract (breaker.Store).

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/breaker"
)

// RunBreakers runs the breaker store contract. newStore must return an empty store.
func RunBreakers(t *testing.T, newStore func(t *testing.T) breaker.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s breaker.Store)
	}{
		{"a breaker round-trips exactly", breakersRoundTrip},
		{"a breaker without an end stays without one", breakersNoUntil},
		{"delete removes only the breaker opened at that time", breakersDeleteGuarded},
		{"list returns every breaker", breakersList},
		{"violations count per subject and window", breakersViolations},
		{"concurrent violations are all counted", breakersViolationsConcurrent},
		{"a batch read returns exactly the subjects' stored breakers", breakersBatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

var breakerBase = time.Date(2026, 12, 1, 2, 3, 4, 567891234, time.UTC)

func breakerFixture(kind, id string) breaker.State {
	return breaker.State{Subject: breaker.Subject{Kind: kind, ID: id}, Reason: "leaking data", OpenedBy: "admin:key_ops",
		OpenedAt: breakerBase, Until: breakerBase.Add(time.Hour)}
}

func breakersSame(t *testing.T, got, want breaker.State) {
	t.Helper()
	if got.Subject != want.Subject || got.Reason != want.Reason || got.OpenedBy != want.OpenedBy ||
		!got.OpenedAt.Equal(want.OpenedAt) || !got.Until.Equal(want.Until) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func breakersRoundTrip(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	want := breakerFixture(breaker.KindKey, "key_1")
	if err := s.PutBreaker(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, found, err := s.Breaker(ctx, want.Subject)
	if err != nil || !found {
		t.Fatalf("found %v, err %v", found, err)
	}
	breakersSame(t, got, want)
	if _, found, _ := s.Breaker(ctx, breaker.Subject{Kind: breaker.KindUser, ID: "key_1"}); found {
		t.Error("a user breaker was found under a key's id")
	}
}

func breakersNoUntil(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	want := breakerFixture(breaker.KindUser, "u1")
	want.Until = time.Time{}
	if err := s.PutBreaker(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Breaker(ctx, want.Subject)
	if err != nil {
		t.Fatal(err)
	}
	breakersSame(t, got, want)
}

func breakersDeleteGuarded(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	st := breakerFixture(breaker.KindKey, "key_2")
	if err := s.PutBreaker(ctx, st); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteBreaker(ctx, st.Subject, st.OpenedAt.Add(time.Nanosecond)); ok || err != nil {
		t.Fatalf("deleted a breaker opened at another time: %v %v", ok, err)
	}
	if ok, err := s.DeleteBreaker(ctx, st.Subject, st.OpenedAt); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.DeleteBreaker(ctx, st.Subject, time.Time{}); ok || err != nil {
		t.Errorf("deleted a missing breaker: %v %v", ok, err)
	}
	if _, found, _ := s.Breaker(ctx, st.Subject); found {
		t.Error("still there after delete")
	}
}

func breakersList(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	if _, err := s.AddViolation(ctx, breaker.Subject{Kind: breaker.KindKey, ID: "key_a"}, breakerBase, breakerBase.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"key_a", "key_b"} {
		if err := s.PutBreaker(ctx, breakerFixture(breaker.KindKey, id)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ListBreakers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("listed %+v, want the two breakers (and no violation counts)", all)
	}
}

func breakersViolations(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	a, b := breaker.Subject{Kind: breaker.KindKey, ID: "key_v"}, breaker.Subject{Kind: breaker.KindUser, ID: "key_v"}
	next := breakerBase.Add(10 * time.Minute)
	steps := []struct {
		subject breaker.Subject
		window  time.Time
		want    int
	}{{a, breakerBase, 1}, {a, breakerBase, 2}, {b, breakerBase, 1}, {a, next, 1}, {a, breakerBase, 3}}
	for i, st := range steps {
		n, err := s.AddViolation(ctx, st.subject, st.window, st.window.Add(time.Hour))
		if err != nil || n != st.want {
			t.Errorf("step %d: count %d, %v; want %d", i, n, err, st.want)
		}
	}
}

func breakersViolationsConcurrent(t *testing.T, s breaker.Store) {
	ctx := context.Background()
	subj := breaker.Subject{Kind: breaker.KindKey, ID: "key_c"}
	const n = 20
	seen := make([]bool, n+1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := s.AddViolation(ctx, subj, breakerBase, breakerBase.Add(time.Hour))
			if err != nil || c < 1 || c > n {
				t.Errorf("count %d, %v", c, err)
				return
			}
			mu.Lock()
			seen[c] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	for c := 1; c <= n; c++ {
		if !seen[c] {
			t.Errorf("no violation saw count %d: counts are not atomic (a threshold could be skipped)", c)
		}
	}
}

// breakersBatch runs on stores that read in batches (breaker.BatchReader): the breakers asked for
// and stored, exactly as one-by-one reads return them, and nothing for the others (a violation
// count under the same subject is not a breaker).
func breakersBatch(t *testing.T, s breaker.Store) {
	br, ok := s.(breaker.BatchReader)
	if !ok {
		t.Skip("the store reads one breaker at a time")
	}
	ctx := context.Background()
	open := breakerFixture(breaker.KindKey, "key_batch")
	noUntil := breakerFixture(breaker.KindUser, "u_batch")
	noUntil.Until = time.Time{}
	for _, st := range []breaker.State{open, noUntil, breakerFixture(breaker.KindKey, "key_not_asked")} {
		if err := s.PutBreaker(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	none := breaker.Subject{Kind: breaker.KindUser, ID: "u_none"}
	if _, err := s.AddViolation(ctx, none, breakerBase, breakerBase.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := br.Breakers(ctx, []breaker.Subject{open.Subject, noUntil.Subject, none})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %+v, want the two stored breakers asked for", got)
	}
	breakersSame(t, got[open.Subject], open)
	breakersSame(t, got[noUntil.Subject], noUntil)
}
