package keyadmin

import (
	"context"
	"errors"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// A console session is a record of the key store (an apikey.Key whose SessionOf names the admin
// key that opened it, its operator), so both deployments keep it where they keep keys, with
// nothing of their own, and the admin API lists and revokes it like a key. Its secret is a
// session secret (apikey.SessionHash), which only the console reads: the API's authentication
// refuses it, so the cookie that holds it is no bearer credential anywhere. It acts only while
// its operator's key may (Operator, on every use), never renames or extends itself (Update), and
// is never counted as an admin key of its own (keepAnAdmin).

// sessionName starts a session's name, so a listing says whose each is.
const sessionName = "console session: "

// StartSession opens a console session for operator, a usable admin API key (a fault says why
// another key is refused), to end at expires or when the operator's key does, whichever comes
// first. The session acts as an admin with no request limits (the console's calls are the
// operator's, not traffic) and bills the operator's user; its creation is audited as the act of
// the key in ctx. The secret returned is the session's, shown nowhere else.
func (s *Service) StartSession(ctx context.Context, operator *apikey.Key, expires time.Time) (Created, error) {
	now := s.now()
	switch {
	case !operator.Usable(now):
		return Created{}, fault.New(fault.Unauthenticated, "Invalid API key", "this API key is revoked or expired").WithCode("invalid_api_key")
	case !operator.Admin || operator.IsSession():
		return Created{}, fault.New(fault.Forbidden, "Not an admin key",
			`the console needs an admin API key, and this is not one (cmd/admin create-key -admin, or POST /admin/api-keys with "admin": true)`).WithCode("admin_required")
	}
	if operator.ExpiresAt != nil && operator.ExpiresAt.Before(expires) {
		expires = *operator.ExpiresAt
	}
	expires = expires.UTC()
	secret := apikey.NewSessionSecret()
	hash, err := apikey.SessionHash(secret)
	if err != nil {
		return Created{}, err
	}
	k := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: sessionName + operator.Name,
		UserID: billing.UserID(operator), Admin: true, SessionOf: operator.ID, CreatedAt: now, ExpiresAt: &expires,
		DailyLimit: apikey.NoLimit, MonthlyLimit: apikey.NoLimit,
		RateLimit: apikey.RateLimit{RequestsPerMinute: apikey.NoLimit, RequestsPerHour: apikey.NoLimit}}
	fillDefaults(k)
	if err := s.insert(ctx, k); err != nil {
		return Created{}, err
	}
	return Created{Key: k, Secret: secret}, nil
}

// Operator returns the key that opened session while the session may act for it: the session
// itself usable and admin, its operator's key found, usable and still an admin key. The
// operator's key is read from the store, not a cache, so revoking, demoting or expiring it ends
// the session on its next use. A session that has ended is a fault.Unauthenticated error saying
// why (code session_ended).
func (s *Service) Operator(ctx context.Context, session *apikey.Key) (*apikey.Key, error) {
	now := s.now()
	if !session.IsSession() || !session.Admin || !session.Usable(now) {
		return nil, sessionEnded("your session has ended")
	}
	op, err := s.Keys.KeyByID(ctx, session.SessionOf)
	switch {
	case errors.Is(err, apikey.ErrNotFound):
		return nil, sessionEnded("the API key you signed in with no longer exists")
	case err != nil:
		return nil, err
	case !op.Admin || !op.Usable(now):
		return nil, sessionEnded("the API key you signed in with is revoked, expired or no longer an admin key")
	}
	return op, nil
}

func sessionEnded(why string) error {
	return fault.New(fault.Unauthenticated, "Session expired", why+"; sign in again").WithCode("session_ended")
}

// sessionFixed refuses a change of a session's name or expiry: the name says whose session it
// is, and the expiry is the one its operator signed in for, so neither a session nor anyone
// holding its cookie may disguise or extend it.
func (in KeyInput) sessionFixed() error {
	switch {
	case in.Name.Set:
		return fault.Invalid("name", "name cannot change on a console session: it names the operator whose key opened it")
	case in.ExpiresAt.Set:
		return fault.Invalid("expiresAt", "expiresAt cannot change on a console session: revoke it to end it now, or sign in again for a new one")
	}
	return nil
}
