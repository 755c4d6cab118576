package storetest

// The signing keyset contract (signing.Store).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/signing"
)

// RunSigningKeys runs the keyset store contract. newStore must return an empty store.
func RunSigningKeys(t *testing.T, newStore func(t *testing.T) signing.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s signing.Store)
	}{
		{"an empty store has no keyset", signingEmpty},
		{"the first rotation creates a keyset that reads back equal", signingFirstRotation},
		{"a rotation promotes next and retires current", signingRotation},
		{"a failing update writes nothing", signingUpdateAborts},
		{"ensure creates once and then returns the stored keyset", signingEnsure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

var signingNow = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func signingEmpty(t *testing.T, s signing.Store) {
	if _, err := s.Keyset(context.Background()); !errors.Is(err, signing.ErrNoKeyset) {
		t.Errorf("Keyset() err = %v, want ErrNoKeyset", err)
	}
}

func signingFirstRotation(t *testing.T, s signing.Store) {
	ctx := context.Background()
	ks, err := signing.Rotate(ctx, s, signingNow, signing.DefaultKeepPrevious)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Keyset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signingSame(t, got, ks)
	if len(got.Previous) != 0 || got.Current.ID == got.Next.ID || !got.Current.Created.Equal(signingNow) {
		t.Errorf("first keyset %+v", got)
	}
}

func signingRotation(t *testing.T, s signing.Store) {
	ctx := context.Background()
	first, err := signing.Rotate(ctx, s, signingNow, 2)
	if err != nil {
		t.Fatal(err)
	}
	ks := first
	for i := range 3 {
		prev := ks
		if ks, err = signing.Rotate(ctx, s, signingNow.Add(time.Duration(i+1)*time.Hour), 2); err != nil {
			t.Fatal(err)
		}
		if ks.Current.ID != prev.Next.ID || ks.Previous[0].ID != prev.Current.ID {
			t.Fatalf("rotation %d: current %s (want %s), previous[0] %s (want %s)", i, ks.Current.ID, prev.Next.ID, ks.Previous[0].ID, prev.Current.ID)
		}
	}
	if len(ks.Previous) != 2 {
		t.Errorf("kept %d previous keys, want 2", len(ks.Previous))
	}
	got, err := s.Keyset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signingSame(t, got, ks)
}

func signingUpdateAborts(t *testing.T, s signing.Store) {
	ctx := context.Background()
	want, err := signing.Rotate(ctx, s, signingNow, 2)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateKeyset(ctx, func(signing.Keyset, bool) (signing.Keyset, error) { return signing.Keyset{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("UpdateKeyset err = %v, want the update's error", err)
	}
	got, err := s.Keyset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signingSame(t, got, want)
}

func signingEnsure(t *testing.T, s signing.Store) {
	ctx := context.Background()
	a, err := signing.Ensure(ctx, s, signingNow)
	if err != nil {
		t.Fatal(err)
	}
	b, err := signing.Ensure(ctx, s, signingNow.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	signingSame(t, b, a)
}

func signingSame(t *testing.T, got, want signing.Keyset) {
	t.Helper()
	ids := func(ks signing.Keyset) []string {
		out := []string{ks.Current.ID, ks.Next.ID}
		for _, k := range ks.Previous {
			out = append(out, k.ID)
		}
		return out
	}
	g, w := ids(got), ids(want)
	if len(g) != len(w) {
		t.Fatalf("keyset ids %v, want %v", g, w)
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("keyset ids %v, want %v", g, w)
		}
	}
	if !got.Current.Private.Equal(want.Current.Private) || !got.Current.Created.Equal(want.Current.Created) {
		t.Error("the current private key or its creation time did not round-trip")
	}
}
