package storetest

// The key contract. Helpers here are prefixed by "key" because other suites share the package.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
)

// KeyStore is what the gateway needs of a key store: identity.KeyFinder, localserver.KeyCreator and
// the admin API's reads and updates.
type KeyStore interface {
	CreateKey(ctx context.Context, k *apikey.Key) error
	KeyByHash(ctx context.Context, hash string) (*apikey.Key, error)
	KeyByID(ctx context.Context, id string) (*apikey.Key, error)
	ListKeys(ctx context.Context) ([]*apikey.Key, error)
	UpdateKey(ctx context.Context, id string, update func(*apikey.Key) error) (*apikey.Key, error)
	CountKeys(ctx context.Context) (int, error)
}

// RunKeys runs the key contract. newStore must return an empty store, isolated from every other
// call's, and register its own cleanup.
func RunKeys(t *testing.T, newStore func(t *testing.T) KeyStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s KeyStore)
	}{
		{"every field round-trips exactly", keysRoundTrip},
		{"unset fields come back unset", keysZeroFields},
		{"a lifted limit comes back lifted, not unset", keysNoLimit},
		{"a key is found by id", keysByID},
		{"unknown hash or id is ErrNotFound", keysNotFound},
		{"a second key with the same secret is refused", keysDuplicate},
		{"list is every key, oldest first", keysList},
		{"the admin listing's search pages through the matches only", keysSearch},
		{"count follows creates", keysCount},
		{"update changes and clears fields", keysUpdate},
		{"a failing update writes nothing", keysUpdateAborts},
		{"update cannot change id or hash", keysUpdateImmutable},
		{"concurrent updates are not lost", keysUpdateConcurrent},
		{"returned keys are copies", keysCopies},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newStore(t))
		})
	}
}

// keyBase is a fixed instant with nanoseconds, so a store that drops precision is caught.
var keyBase = time.Date(2026, 11, 3, 9, 30, 15, 123456789, time.UTC)

// keyFixture returns a key with a fresh secret, created n seconds after keyBase.
func keyFixture(t *testing.T, n int) *apikey.Key {
	t.Helper()
	secret := apikey.NewSecret()
	hash, err := apikey.Hash(secret)
	if err != nil {
		t.Fatal(err)
	}
	return &apikey.Key{
		ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: fmt.Sprintf("key %d", n),
		CreatedAt: keyBase.Add(time.Duration(n) * time.Second),
	}
}

// fullKeyFixture sets every field, nested failover defaults included.
func fullKeyFixture(t *testing.T) *apikey.Key {
	k := keyFixture(t, 0)
	expires, revoked := keyBase.Add(30*24*time.Hour), keyBase.Add(time.Hour+time.Millisecond)
	k.UserID, k.Admin, k.SessionOf = "user-42", true, "key_parent"
	k.AllowedModels = []string{"openai/gpt-5-nano", "anthropic/claude-sonnet-4"}
	k.BillingMode, k.DailyLimit, k.MonthlyLimit = apikey.UsageByModel, 250, 7000
	k.RateLimit = apikey.RateLimit{RequestsPerMinute: 1000, RequestsPerHour: 9999}
	k.AllowedSMLTPPolicies = []string{"public", "confidential"}
	k.FailoverDefaults = &chain.Defaults{
		Models:    []string{"openai/gpt-5-nano", "google/gemini-2.5-flash", "bedrock/amazon.nova-lite-v1:0"},
		TimeoutMS: 20000, FirstTokenTimeoutMS: 4000,
		On: []chain.Reason{chain.RateLimit, chain.Timeout},
	}
	k.ExpiresAt, k.RevokedAt = &expires, &revoked
	return k
}

func keysNoLimit(t *testing.T, s KeyStore) {
	k := keyFixture(t, 0)
	k.DailyLimit, k.MonthlyLimit = apikey.NoLimit, 50
	k.RateLimit = apikey.RateLimit{RequestsPerMinute: apikey.NoLimit}
	mustCreateKey(t, s, k)
	got := mustKeyByHash(t, s, k.Hash)
	if got.DailyLimit != apikey.NoLimit || got.MonthlyLimit != 50 || got.RateLimit.RequestsPerMinute != apikey.NoLimit || got.RateLimit.RequestsPerHour != 0 {
		t.Errorf("stored limits: daily %d, monthly %d, rate %+v; want no limit, 50, {no limit, unset}",
			got.DailyLimit, got.MonthlyLimit, got.RateLimit)
	}
}

func mustCreateKey(t *testing.T, s KeyStore, k *apikey.Key) {
	t.Helper()
	if err := s.CreateKey(context.Background(), k); err != nil {
		t.Fatalf("CreateKey(%s): %v", k.ID, err)
	}
}

func mustKeyByHash(t *testing.T, s KeyStore, hash string) *apikey.Key {
	t.Helper()
	k, err := s.KeyByHash(context.Background(), hash)
	if err != nil {
		t.Fatalf("KeyByHash: %v", err)
	}
	return k
}

// sameKey compares keys field by field; times compare as instants, since a store may hand back
// an equal time in another *Location.
func sameKey(t *testing.T, what string, got, want *apikey.Key) {
	t.Helper()
	if !reflect.DeepEqual(normalizeKey(got), normalizeKey(want)) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, describeKey(got), describeKey(want))
	}
}

func normalizeKey(k *apikey.Key) *apikey.Key {
	if k == nil {
		return nil
	}
	c := *k
	c.CreatedAt = c.CreatedAt.UTC()
	for _, p := range []**time.Time{&c.ExpiresAt, &c.RevokedAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return &c
}

// describeKey prints pointers' targets, so a failure shows what differs.
func describeKey(k *apikey.Key) string {
	if k == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v defaults=%+v expires=%v revoked=%v", *k, k.FailoverDefaults, k.ExpiresAt, k.RevokedAt)
}

func keysRoundTrip(t *testing.T, s KeyStore) {
	want := fullKeyFixture(t)
	mustCreateKey(t, s, want)
	sameKey(t, "KeyByHash", mustKeyByHash(t, s, want.Hash), want)
}

func keysZeroFields(t *testing.T, s KeyStore) {
	want := keyFixture(t, 0)
	mustCreateKey(t, s, want)
	got := mustKeyByHash(t, s, want.Hash)
	sameKey(t, "KeyByHash", got, want)
	if got.AllowedModels != nil || got.AllowedSMLTPPolicies != nil || got.FailoverDefaults != nil || got.IsSession() ||
		got.ExpiresAt != nil || got.RevokedAt != nil || got.BillingMode != "" || got.Limits() != apikey.DefaultLimits {
		t.Errorf("unset fields came back set: %s", describeKey(got))
	}
}

func keysByID(t *testing.T, s KeyStore) {
	want, other := fullKeyFixture(t), keyFixture(t, 1)
	mustCreateKey(t, s, want)
	mustCreateKey(t, s, other)
	got, err := s.KeyByID(context.Background(), want.ID)
	if err != nil {
		t.Fatalf("KeyByID: %v", err)
	}
	sameKey(t, "KeyByID", got, want)
}

func keysNotFound(t *testing.T, s KeyStore) {
	ctx := context.Background()
	mustCreateKey(t, s, keyFixture(t, 0))
	missing := keyFixture(t, 1)
	if _, err := s.KeyByHash(ctx, missing.Hash); !errors.Is(err, apikey.ErrNotFound) {
		t.Errorf("KeyByHash(unknown) = %v, want apikey.ErrNotFound", err)
	}
	if _, err := s.KeyByID(ctx, missing.ID); !errors.Is(err, apikey.ErrNotFound) {
		t.Errorf("KeyByID(unknown) = %v, want apikey.ErrNotFound", err)
	}
	_, err := s.UpdateKey(ctx, missing.ID, func(*apikey.Key) error { return nil })
	if !errors.Is(err, apikey.ErrNotFound) {
		t.Errorf("UpdateKey(unknown) = %v, want apikey.ErrNotFound", err)
	}
}

func keysDuplicate(t *testing.T, s KeyStore) {
	ctx := context.Background()
	first := fullKeyFixture(t)
	mustCreateKey(t, s, first)
	dup := keyFixture(t, 1)
	dup.Hash = first.Hash
	if err := s.CreateKey(ctx, dup); !errors.Is(err, apikey.ErrExists) {
		t.Fatalf("CreateKey with an existing hash = %v, want apikey.ErrExists", err)
	}
	sameKey(t, "the first key after the refused create", mustKeyByHash(t, s, first.Hash), first)
	if _, err := s.KeyByID(ctx, dup.ID); !errors.Is(err, apikey.ErrNotFound) {
		t.Errorf("KeyByID(refused key) = %v, want apikey.ErrNotFound", err)
	}
	if n, err := s.CountKeys(ctx); err != nil || n != 1 {
		t.Errorf("CountKeys = %d, %v; want 1", n, err)
	}
}

func keysList(t *testing.T, s KeyStore) {
	ctx := context.Background()
	got, err := s.ListKeys(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("ListKeys on an empty store = %v, %v; want none", got, err)
	}
	// Created out of order, so a store that lists in insertion or hash order is caught.
	keys := []*apikey.Key{keyFixture(t, 2), keyFixture(t, 0), fullKeyFixture(t), keyFixture(t, 1)}
	keys[2].CreatedAt = keyBase.Add(3 * time.Second)
	for _, k := range keys {
		mustCreateKey(t, s, k)
	}
	got, err = s.ListKeys(ctx)
	if err != nil {
		t.Fatalf("ListKeys: %v", err)
	}
	want := []*apikey.Key{keys[1], keys[3], keys[0], keys[2]}
	if len(got) != len(want) {
		t.Fatalf("ListKeys returned %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		sameKey(t, fmt.Sprintf("ListKeys[%d]", i), got[i], want[i])
	}
}

// keysSearch runs the admin listing's name and user filters (keyadmin.Service.List) over the
// store: case-insensitive substring, combined with the user, and a cursor that pages through the
// matches whatever the store's listing holds between them.
func keysSearch(t *testing.T, s KeyStore) {
	ctx := context.Background()
	names := []string{"Billing prod", "other", "billing-staging", "PROD billing", "unrelated", "Billing batch"}
	for i, name := range names {
		k := keyFixture(t, len(names)-i) // created newest first, listed oldest first
		k.Name = name
		if i == 3 {
			k.UserID = "team-x"
		}
		mustCreateKey(t, s, k)
	}
	svc := &keyadmin.Service{Keys: s}
	pages := func(f keyadmin.Filter, limit int) (got [][]string) {
		t.Helper()
		for cursor := ""; ; {
			p, err := svc.List(ctx, cursor, limit, f)
			if err != nil {
				t.Fatalf("List(%+v): %v", f, err)
			}
			var page []string
			for _, k := range p.Keys {
				page = append(page, k.Name)
			}
			got = append(got, page)
			if cursor = p.Next; cursor == "" {
				return got
			}
		}
	}
	for _, tc := range []struct {
		f     keyadmin.Filter
		limit int
		want  [][]string
	}{
		{keyadmin.Filter{Name: "BILLING"}, 2, [][]string{{"Billing batch", "PROD billing"}, {"billing-staging", "Billing prod"}}},
		{keyadmin.Filter{Name: "billing"}, 4, [][]string{{"Billing batch", "PROD billing", "billing-staging", "Billing prod"}}},
		{keyadmin.Filter{Name: "prod"}, 1, [][]string{{"PROD billing"}, {"Billing prod"}}},
		{keyadmin.Filter{Name: "billing", UserID: "team-x"}, 2, [][]string{{"PROD billing"}}},
		{keyadmin.Filter{Name: "nothing like it"}, 2, [][]string{nil}},
		{keyadmin.Filter{}, 6, [][]string{{"Billing batch", "unrelated", "PROD billing", "billing-staging", "other", "Billing prod"}}},
	} {
		if got := pages(tc.f, tc.limit); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("List(%+v) by %d = %q, want %q", tc.f, tc.limit, got, tc.want)
		}
	}
}

func keysCount(t *testing.T, s KeyStore) {
	ctx := context.Background()
	for i := range 3 {
		if n, err := s.CountKeys(ctx); err != nil || n != i {
			t.Fatalf("CountKeys = %d, %v; want %d", n, err, i)
		}
		mustCreateKey(t, s, keyFixture(t, i))
	}
	if n, err := s.CountKeys(ctx); err != nil || n != 3 {
		t.Fatalf("CountKeys = %d, %v; want 3", n, err)
	}
}

func keysUpdate(t *testing.T, s KeyStore) {
	ctx := context.Background()
	k := keyFixture(t, 0)
	mustCreateKey(t, s, k)
	revoked := keyBase.Add(2 * time.Hour)
	want := *k
	want.Name, want.AllowedModels, want.RevokedAt = "renamed", []string{"demo/fast"}, &revoked
	want.FailoverDefaults = &chain.Defaults{Models: []string{"demo/fast", "demo/slow"}, On: []chain.Reason{chain.ServerError}}
	got, err := s.UpdateKey(ctx, k.ID, func(k *apikey.Key) error {
		k.Name, k.AllowedModels, k.RevokedAt = want.Name, want.AllowedModels, want.RevokedAt
		k.FailoverDefaults = &chain.Defaults{Models: []string{"demo/fast", "demo/slow"}, On: []chain.Reason{chain.ServerError}}
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateKey: %v", err)
	}
	sameKey(t, "UpdateKey's result", got, &want)
	sameKey(t, "KeyByHash after update", mustKeyByHash(t, s, k.Hash), &want)

	// Clearing: fields set back to nil must disappear, not keep their old values.
	got, err = s.UpdateKey(ctx, k.ID, func(k *apikey.Key) error {
		k.AllowedModels, k.FailoverDefaults, k.RevokedAt = nil, nil, nil
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateKey (clear): %v", err)
	}
	want.Name, want.AllowedModels, want.FailoverDefaults, want.RevokedAt = "renamed", nil, nil, nil
	sameKey(t, "UpdateKey's result after clearing", got, &want)
	byID, err := s.KeyByID(ctx, k.ID)
	if err != nil {
		t.Fatalf("KeyByID after update: %v", err)
	}
	sameKey(t, "KeyByID after clearing", byID, &want)
}

func keysUpdateAborts(t *testing.T, s KeyStore) {
	want := fullKeyFixture(t)
	mustCreateKey(t, s, want)
	errNo := errors.New("admin said no")
	_, err := s.UpdateKey(context.Background(), want.ID, func(k *apikey.Key) error {
		k.Name, k.AllowedModels = "half-done", nil
		return errNo
	})
	if !errors.Is(err, errNo) {
		t.Fatalf("UpdateKey = %v, want the update's own error", err)
	}
	sameKey(t, "the key after an aborted update", mustKeyByHash(t, s, want.Hash), want)
}

func keysUpdateImmutable(t *testing.T, s KeyStore) {
	want := fullKeyFixture(t)
	mustCreateKey(t, s, want)
	other := keyFixture(t, 1)
	for name, change := range map[string]func(*apikey.Key){
		"id":   func(k *apikey.Key) { k.ID = other.ID },
		"hash": func(k *apikey.Key) { k.Hash = other.Hash },
	} {
		_, err := s.UpdateKey(context.Background(), want.ID, func(k *apikey.Key) error { change(k); return nil })
		if err == nil {
			t.Errorf("UpdateKey changing the %s succeeded, want an error", name)
		}
	}
	sameKey(t, "the key after refused updates", mustKeyByHash(t, s, want.Hash), want)
	if n, err := s.CountKeys(context.Background()); err != nil || n != 1 {
		t.Errorf("CountKeys = %d, %v; want 1", n, err)
	}
}

// keysUpdateConcurrent has several admins each add a model at once; every addition must survive
// (an admin revoking a key while another edits it must not be undone).
func keysUpdateConcurrent(t *testing.T, s KeyStore) {
	k := keyFixture(t, 0)
	mustCreateKey(t, s, k)
	const writers = 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			_, err := s.UpdateKey(context.Background(), k.ID, func(k *apikey.Key) error {
				k.AllowedModels = append(k.AllowedModels, fmt.Sprintf("demo/m%d", i))
				return nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent UpdateKey: %v", err)
		}
	}
	if got := mustKeyByHash(t, s, k.Hash).AllowedModels; len(got) != writers {
		t.Errorf("after %d concurrent additions allowedModels = %v", writers, got)
	}
}

// keysCopies: callers (and keycache) may hold a returned key while others read it, so a store
// must never hand out its own state.
func keysCopies(t *testing.T, s KeyStore) {
	want := fullKeyFixture(t)
	mustCreateKey(t, s, want)
	got := mustKeyByHash(t, s, want.Hash)
	got.Name, got.AllowedModels[0], got.FailoverDefaults.Models[0] = "mutated", "mutated", "mutated"
	sameKey(t, "a key re-read after mutating an earlier result", mustKeyByHash(t, s, want.Hash), want)
}
