package verify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestMemoryReplayCache(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c := NewMemoryReplayCache(2)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	use := func(jti string, exp time.Time) bool {
		t.Helper()
		fresh, err := c.Use(ctx, jti, exp)
		if err != nil {
			t.Fatal(err)
		}
		return fresh
	}
	if !use("a", now.Add(time.Minute)) || use("a", now.Add(time.Minute)) {
		t.Fatal("a jti must be fresh once, then spent")
	}
	use("b", now.Add(2*time.Minute))
	if _, err := c.Use(ctx, "c", now.Add(time.Minute)); !errors.Is(err, ErrReplayCacheFull) {
		t.Errorf("a full cache of live ids: err %v, want ErrReplayCacheFull", err)
	}
	now = now.Add(90 * time.Second) // a has expired: its slot is reused
	if !use("c", now.Add(time.Minute)) || use("b", now.Add(time.Minute)) {
		t.Error("an expired id must make room, and a live one stay spent")
	}
}

func TestRemoteJWKSRefetchesUnknownKidAtMostOncePerMinRefresh(t *testing.T) {
	fetches := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		_, _ = w.Write([]byte(`{"keys":[]}`))
	}))
	defer srv.Close()
	keys := NewRemoteJWKS(srv.URL, srv.Client())
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	keys.Now = func() time.Time { return now }
	ctx := context.Background()
	for range 5 {
		if _, err := keys.Key(ctx, "forged"); err == nil {
			t.Fatal("an unknown kid was found")
		}
	}
	now = now.Add(31 * time.Second)
	_, _ = keys.Key(ctx, "forged")
	if fetches != 2 {
		t.Errorf("%d fetches, want 2 (first use, then one after MinRefresh)", fetches)
	}
}
