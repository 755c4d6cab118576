package keyadmin_test

import (
	"context"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/keyadmin"
)

// operator stores an admin key (with body's other fields) and returns it as the store has it.
func (e *env) operator(t *testing.T, body map[string]any) *apikey.Key {
	t.Helper()
	body["admin"] = true
	id, _, _ := e.create(t, body)
	k, err := e.store.KeyByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// session opens a console session for op, as the console does at sign-in.
func (e *env) session(t *testing.T, op *apikey.Key) keyadmin.Created {
	t.Helper()
	c, err := e.svc.StartSession(context.Background(), op, now.Add(8*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Issue 34 item 1: a session cannot rename or extend itself — nor can anyone else — while its other
// fields stay an admin's to change (demoting it ends it).
func TestASessionsNameAndExpiryCannotChange(t *testing.T) {
	e := newEnv(t)
	s := e.session(t, e.operator(t, map[string]any{"name": "ops"}))
	for _, caller := range []*apikey.Key{s.Key, e.admin} {
		for _, tc := range []struct{ param, body string }{
			{"expiresAt", `{"expiresAt":null}`},
			{"expiresAt", `{"expiresAt":"` + now.Add(1000*time.Hour).Format(time.RFC3339) + `"}`},
			{"name", `{"name":"mine"}`},
			{"name", `{"dailyLimit":5,"name":"console session: ops"}`},
		} {
			if code, out := e.do(t, caller, "PATCH", "/admin/api-keys/"+s.Key.ID, tc.body); code != 400 || out["param"] != tc.param {
				t.Errorf("%s patching a session with %s: %d %v, want 400 naming %s", caller.ID, tc.body, code, out, tc.param)
			}
		}
	}
	k, err := e.store.KeyByID(context.Background(), s.Key.ID)
	if err != nil || k.Name != "console session: ops" || k.ExpiresAt == nil || !k.ExpiresAt.Equal(now.Add(8*time.Hour)) || k.DailyLimit != apikey.NoLimit {
		t.Fatalf("the session after refused patches: %+v %v", k, err)
	}
	if code, out := e.do(t, e.admin, "PATCH", "/admin/api-keys/"+s.Key.ID, `{"admin":false}`); code != 200 {
		t.Errorf("an admin demoting a session: %d %v, want 200", code, out)
	}
}

// Issue 34 item 6: a session is no admin key of its own, so the key that opened it is still the
// last admin key, which cannot be revoked or demoted, even by its session.
func TestASessionNeverCountsAsAnotherAdmin(t *testing.T) {
	e := newEnv(t)
	op := e.operator(t, map[string]any{"name": "ops"})
	s := e.session(t, op)
	if code, out := e.do(t, s.Key, "DELETE", "/admin/api-keys/"+op.ID, nil); code != 409 || out["error"] != "Conflict" {
		t.Errorf("a session revoking the last admin key, its own operator's: %d %v, want 409", code, out)
	}
	if code, out := e.do(t, s.Key, "PATCH", "/admin/api-keys/"+op.ID, map[string]any{"admin": false}); code != 409 {
		t.Errorf("a session demoting the last admin key: %d %v, want 409", code, out)
	}
	// Its own session can always be ended: it is no admin key to keep.
	if code, out := e.do(t, s.Key, "DELETE", "/admin/api-keys/"+s.Key.ID, nil); code != 200 {
		t.Errorf("a session revoking itself: %d %v, want 200", code, out)
	}
}

// Issue 34 item 1: a session acts only while the key that opened it is usable and still an admin
// key, read from the store at each use: revoking, demoting or expiring that key ends it.
func TestASessionEndsWithItsOperatorsKey(t *testing.T) {
	for _, tc := range []struct {
		name         string
		method, body string    // the admin call that ends op
		at           time.Time // when the session is used next
	}{
		{"revoked", "DELETE", "", now},
		{"demoted", "PATCH", `{"admin":false}`, now},
		// Brought forward, so that it expires before the session does.
		{"expired", "PATCH", `{"expiresAt":"` + now.Add(30*time.Minute).Format(time.RFC3339) + `"}`, now.Add(45 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.operator(t, map[string]any{"name": "another admin"}) // so that op can be revoked and demoted
			op := e.operator(t, map[string]any{"name": "ops", "expiresAt": now.Add(time.Hour)})
			s := e.session(t, op)
			if !s.Key.ExpiresAt.Equal(now.Add(time.Hour)) {
				t.Errorf("the session expires at %v, want its operator's key's expiry %v", s.Key.ExpiresAt, now.Add(time.Hour))
			}
			if got, err := e.svc.Operator(context.Background(), s.Key); err != nil || got.ID != op.ID {
				t.Fatalf("Operator of a live session: %v, %v", got, err)
			}
			if code, out := e.do(t, e.admin, tc.method, "/admin/api-keys/"+op.ID, tc.body); code != 200 {
				t.Fatalf("%s %s: %d %v", tc.method, op.ID, code, out)
			}
			e.svc.Now = func() time.Time { return tc.at }
			if _, err := e.svc.Operator(context.Background(), s.Key); fault.KindOf(err) != fault.Unauthenticated {
				t.Errorf("Operator after the operator's key was %s: %v, want an Unauthenticated fault", tc.name, err)
			}
		})
	}
}

// Only a usable admin API key opens a session; a session opens none.
func TestOnlyAnAdminKeyOpensASession(t *testing.T) {
	e := newEnv(t)
	id, _, _ := e.create(t, map[string]any{"name": "app"})
	normal, _ := e.store.KeyByID(context.Background(), id)
	s := e.session(t, e.operator(t, map[string]any{"name": "ops"}))
	for _, k := range []*apikey.Key{normal, s.Key} {
		if _, err := e.svc.StartSession(context.Background(), k, now.Add(time.Hour)); fault.KindOf(err) != fault.Forbidden {
			t.Errorf("StartSession(%s): %v, want a Forbidden fault", k.Name, err)
		}
	}
	if _, err := apikey.SessionHash(s.Secret); err != nil || s.Key.SessionOf == "" {
		t.Errorf("a session's secret %q (%v) and SessionOf %q", s.Secret, err, s.Key.SessionOf)
	}
}
