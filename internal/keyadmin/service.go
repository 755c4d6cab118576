// Package keyadmin is the administration of API keys and users' billing records, shared by the
// admin HTTP routes (adminapi.Keys) and cmd/admin: create (the secret returned once, only its SHA-256
// stored), list, get, update and revoke keys with every field of SPEC 7 validated — and
// failoverDefaults clamped — in one place; read and change users' billing settings. Every change
// goes to an audit hook (no secret in it) and invalidates the local key cache, so locally an
// admin change takes effect on the next request.
package keyadmin

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// KeyStore is what administration needs of a key store (boltstore.Store, dynamostore.Store).
type KeyStore interface {
	CreateKey(ctx context.Context, k *apikey.Key) error
	KeyByID(ctx context.Context, id string) (*apikey.Key, error)
	ListKeys(ctx context.Context) ([]*apikey.Key, error)
	UpdateKey(ctx context.Context, id string, update func(*apikey.Key) error) (*apikey.Key, error)
}

// Actions recorded in AdminChange.Action.
const (
	ActionKeyCreate  = "api_key.create"
	ActionKeyUpdate  = "api_key.update"
	ActionKeyRevoke  = "api_key.revoke"
	ActionUserCreate = "user.create"
	ActionUserUpdate = "user.update"
)

// AdminChange is one audited change: who (the admin key's id; "cli" for cmd/admin), what, and the
// record before and after (*apikey.Key or *billing.User copies; a key's secret is never in
// them, and its hash is not serialised). Before is nil for a create.
type AdminChange struct {
	Actor     string
	RequestID string
	Action    string
	Target    string
	Before    any
	After     any
}

// Service administers keys and users. Keys and Users are required; the rest may be nil.
type Service struct {
	Keys  KeyStore
	Users billing.Store
	// UserDefaults are the settings of users created implicitly (nil: billing.DefaultUser).
	UserDefaults *billing.Defaults
	// ModelExists says whether the catalog has a model; nil accepts every name. Set it: keys
	// naming unknown models are refused only through it.
	ModelExists func(name string) bool
	// PolicyExists says whether an SMLTP policy exists; nil accepts every non-empty name.
	PolicyExists func(name string) bool
	// Audit receives every change, after it is stored; nil drops them.
	Audit func(ctx context.Context, c AdminChange)
	// Invalidate is called with a changed key's hash (keycache.Cache.Invalidate), so the change
	// is seen on the next request of this process; nil when nothing caches keys here.
	Invalidate func(hash string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) modelExists(m string) bool { return s.ModelExists == nil || s.ModelExists(m) }

func (s *Service) audit(ctx context.Context, action, target string, before, after any) {
	if s.Audit == nil {
		return
	}
	actor := "cli"
	if k := identity.Key(ctx); k != nil {
		actor = k.ID
	}
	s.Audit(ctx, AdminChange{Actor: actor, RequestID: identity.RequestID(ctx), Action: action, Target: target, Before: before, After: after})
}

func (s *Service) invalidate(hash string) {
	if s.Invalidate != nil {
		s.Invalidate(hash)
	}
}

// Created is a new key and its secret, which exists nowhere else: show it once.
type Created struct {
	Key    *apikey.Key
	Secret string
}

// Create makes a key from in (name required). Unset limits are stored as the defaults, so the
// record shows what applies. A userId naming no user creates the user with the defaults (a key
// without one bills a user named after the key, created the same way).
func (s *Service) Create(ctx context.Context, in KeyInput) (Created, error) {
	if !in.Name.Set {
		return Created{}, fault.Invalid("name", "name is required")
	}
	now := s.now()
	v, err := s.validate(in, now)
	if err != nil {
		return Created{}, err
	}
	secret := apikey.NewSecret()
	hash, err := apikey.Hash(secret)
	if err != nil {
		return Created{}, err
	}
	d := apikey.DefaultLimits
	k := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), CreatedAt: now,
		BillingMode: apikey.UserCompletions, DailyLimit: d.PerDay, MonthlyLimit: d.PerMonth,
		RateLimit: apikey.RateLimit{RequestsPerMinute: d.PerMinute, RequestsPerHour: d.PerHour}}
	if err := v.apply(k); err != nil {
		return Created{}, err
	}
	fillDefaults(k)
	if err := s.insert(ctx, k); err != nil {
		return Created{}, err
	}
	return Created{Key: k, Secret: secret}, nil
}

// insert stores a new key (or session), the user it bills created first, and audits it.
func (s *Service) insert(ctx context.Context, k *apikey.Key) error {
	if err := s.ensureUser(ctx, billing.UserID(k)); err != nil {
		return err
	}
	if err := s.Keys.CreateKey(ctx, k); err != nil {
		return fmt.Errorf("keyadmin: creating key: %w", err)
	}
	s.audit(ctx, ActionKeyCreate, k.ID, nil, k.Clone())
	return nil
}

// fillDefaults turns limits cleared by null back into their explicit defaults.
func fillDefaults(k *apikey.Key) {
	l := k.Limits()
	k.BillingMode = k.BillingModeOrDefault()
	k.DailyLimit, k.MonthlyLimit = l.PerDay, l.PerMonth
	k.RateLimit = apikey.RateLimit{RequestsPerMinute: l.PerMinute, RequestsPerHour: l.PerHour}
}

func (s *Service) ensureUser(ctx context.Context, id string) error {
	_, err := s.createUser(ctx, id, nil)
	return err
}

// createUser creates the user with the defaults, edited by edit when set, and audits the creation
// once, as the record it became. It returns nil, nil when the user already exists.
func (s *Service) createUser(ctx context.Context, id string, edit func(*billing.User) error) (*billing.User, error) {
	_, err := s.Users.User(ctx, id)
	if !errors.Is(err, billing.ErrNotFound) {
		return nil, err
	}
	d := billing.DefaultUser
	if s.UserDefaults != nil {
		d = *s.UserDefaults
	}
	u := billing.NewUser(id, d, s.now())
	if edit != nil {
		if err := edit(u); err != nil {
			return nil, err
		}
	}
	switch err := s.Users.CreateUser(ctx, u); {
	case errors.Is(err, billing.ErrExists):
		return nil, nil // created meanwhile by another request
	case err != nil:
		return nil, err
	}
	created := *u
	s.audit(ctx, ActionUserCreate, id, nil, &created)
	return u, nil
}

// Get returns a key (without its secret, which is not stored).
func (s *Service) Get(ctx context.Context, id string) (*apikey.Key, error) {
	k, err := s.Keys.KeyByID(ctx, id)
	return k, keyErr(id, err)
}

func keyErr(id string, err error) error {
	if errors.Is(err, apikey.ErrNotFound) {
		return fault.New(fault.NotFound, "Not found", fmt.Sprintf("No API key with id %q", id)).WithCode("api_key_not_found")
	}
	return err
}

// Page is one page of a key listing; Next is the cursor of the following page, "" at the end.
type Page struct {
	Keys []*apikey.Key
	Next string
}

// DefaultPageSize and MaxPageSize bound List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// cursor is where a page ends, in the listing's order (oldest first, ties by id); it stays valid
// when keys are created or revoked between pages.
type cursor struct {
	CreatedAt time.Time `json:"t"`
	ID        string    `json:"id"`
}

// Filter narrows a key listing; its zero value lists every key.
type Filter struct {
	// Name keeps the keys whose name contains it, ignoring case ("" keeps every name).
	Name string
	// UserID keeps the keys that bill this user (billing.UserID: a key without a userId bills
	// a user named after its id).
	UserID string
}

// maxFilterLen bounds a filter's values: longer than any name or id the API stores.
const maxFilterLen = 256

func (f Filter) validate() error {
	for _, p := range [...]struct{ field, v string }{{"name", f.Name}, {"userId", f.UserID}} {
		if !utf8.ValidString(p.v) || utf8.RuneCountInString(p.v) > maxFilterLen {
			return fault.Invalid(p.field, fmt.Sprintf("%s must be valid UTF-8 of at most %d characters", p.field, maxFilterLen))
		}
	}
	return nil
}

// keep reports whether k passes the filter.
func (f Filter) keep(k *apikey.Key) bool {
	return (f.UserID == "" || billing.UserID(k) == f.UserID) &&
		(f.Name == "" || strings.Contains(strings.ToLower(k.Name), strings.ToLower(f.Name)))
}

// List returns the keys that pass f after the opaque cursor ("" for the first page), oldest
// first, at most limit of them (0 means DefaultPageSize). The filter runs here, over the store's
// listing, so it is the same on every store and a cursor pages through the matches only; a
// cursor stays valid under another filter (it names a place in the order, not a match).
func (s *Service) List(ctx context.Context, after string, limit int, f Filter) (Page, error) {
	if limit == 0 {
		limit = DefaultPageSize
	}
	if limit < 1 || limit > MaxPageSize {
		return Page{}, fault.Invalid("limit", fmt.Sprintf("limit must be from 1 to %d", MaxPageSize))
	}
	if err := f.validate(); err != nil {
		return Page{}, err
	}
	var from cursor
	if after != "" {
		raw, err := base64.RawURLEncoding.DecodeString(after)
		if err != nil || json.Unmarshal(raw, &from) != nil || from.ID == "" {
			return Page{}, fault.Invalid("cursor", "cursor is not one this API returned")
		}
	}
	keys, err := s.Keys.ListKeys(ctx)
	if err != nil {
		return Page{}, err
	}
	if f != (Filter{}) {
		keys = slices.DeleteFunc(keys, func(k *apikey.Key) bool { return !f.keep(k) })
	}
	start := 0
	if after != "" {
		start, _ = slices.BinarySearchFunc(keys, from, func(k *apikey.Key, c cursor) int {
			return cmp.Or(k.CreatedAt.Compare(c.CreatedAt), cmp.Compare(k.ID, c.ID))
		})
		if start < len(keys) && keys[start].ID == from.ID {
			start++
		}
	}
	end := min(len(keys), start+limit)
	p := Page{Keys: keys[start:end]}
	if end < len(keys) {
		last := keys[end-1]
		raw, _ := json.Marshal(cursor{CreatedAt: last.CreatedAt, ID: last.ID})
		p.Next = base64.RawURLEncoding.EncodeToString(raw)
	}
	return p, nil
}

// Update applies in to the key: set fields change, null fields return to their defaults,
// absent ones stay. failoverDefaults is clamped (chain.NormalizeDefaults) and its models must
// exist and be allowed for the key. The key cache entry is dropped at once.
func (s *Service) Update(ctx context.Context, id string, in KeyInput) (*apikey.Key, error) {
	v, err := s.validate(in, s.now())
	if err != nil {
		return nil, err
	}
	if in.Admin.Set && !in.Admin.V {
		if err := s.keepAnAdmin(ctx, id); err != nil {
			return nil, err
		}
	}
	var before *apikey.Key
	k, err := s.Keys.UpdateKey(ctx, id, func(k *apikey.Key) error {
		if k.RevokedAt != nil {
			return fault.New(fault.Conflict, "Conflict", fmt.Sprintf("API key %s is revoked: a revoked key cannot be changed", id)).WithCode("key_revoked")
		}
		if k.IsSession() {
			if err := in.sessionFixed(); err != nil {
				return err
			}
		}
		before = k.Clone()
		if err := v.apply(k); err != nil {
			return err
		}
		fillDefaults(k)
		return nil
	})
	if err != nil {
		return nil, keyErr(id, err)
	}
	s.invalidate(k.Hash)
	if in.UserID.Set {
		if err := s.ensureUser(ctx, billing.UserID(k)); err != nil {
			return nil, err
		}
	}
	s.audit(ctx, ActionKeyUpdate, id, before, k.Clone())
	return k, nil
}

// Revoke ends a key for good. Revoking a revoked key changes nothing and is not audited again.
func (s *Service) Revoke(ctx context.Context, id string) (*apikey.Key, error) {
	if err := s.keepAnAdmin(ctx, id); err != nil {
		return nil, err
	}
	now := s.now()
	var before *apikey.Key
	k, err := s.Keys.UpdateKey(ctx, id, func(k *apikey.Key) error {
		before = k.Clone()
		if k.RevokedAt == nil {
			k.RevokedAt = &now
		}
		return nil
	})
	if err != nil {
		return nil, keyErr(id, err)
	}
	s.invalidate(k.Hash)
	if before.RevokedAt == nil {
		s.audit(ctx, ActionKeyRevoke, id, before, k.Clone())
	}
	return k, nil
}

// User returns a user's billing record in its current period.
func (s *Service) User(ctx context.Context, id string) (*billing.User, error) {
	u, err := s.Users.User(ctx, id)
	if errors.Is(err, billing.ErrNotFound) {
		return nil, fault.New(fault.NotFound, "Not found", fmt.Sprintf("No user with id %q", id)).WithCode("user_not_found")
	}
	if err != nil {
		return nil, err
	}
	s.inCurrentPeriod(u)
	return u, nil
}

// inCurrentPeriod shows u as the next billed request will find it; the record itself renews on
// that request.
func (s *Service) inCurrentPeriod(u *billing.User) {
	current := billing.PeriodStart(u.RenewalDay, s.now())
	if u.PeriodStart.Before(current) {
		u.PeriodStart, u.PointsUsed, u.SpendMicros = current, 0, 0
	}
}

// UserPage is one page of the user listing; Next is the cursor of the following page, "" at the
// end.
type UserPage struct {
	Users []*billing.User
	Next  string
}

// ListUsers returns the users after the opaque cursor ("" for the first page), ordered by id, at
// most limit of them (0 means DefaultPageSize), each in its current period.
func (s *Service) ListUsers(ctx context.Context, after string, limit int) (UserPage, error) {
	if limit == 0 {
		limit = DefaultPageSize
	}
	if limit < 1 || limit > MaxPageSize {
		return UserPage{}, fault.Invalid("limit", fmt.Sprintf("limit must be from 1 to %d", MaxPageSize))
	}
	var from string
	if after != "" {
		raw, err := base64.RawURLEncoding.DecodeString(after)
		if err != nil || len(raw) == 0 {
			return UserPage{}, fault.Invalid("cursor", "cursor is not one this API returned")
		}
		from = string(raw)
	}
	l, ok := s.Users.(billing.Lister)
	if !ok {
		return UserPage{}, fault.New(fault.NotImplemented, "Not implemented", "this deployment's user store cannot list users")
	}
	users, err := l.ListUsers(ctx)
	if err != nil {
		return UserPage{}, err
	}
	start, _ := slices.BinarySearchFunc(users, from, func(u *billing.User, id string) int { return strings.Compare(u.ID, id) })
	if start < len(users) && from != "" && users[start].ID == from {
		start++
	}
	end := min(len(users), start+limit)
	p := UserPage{Users: users[start:end]}
	for _, u := range p.Users {
		s.inCurrentPeriod(u)
	}
	if end < len(users) {
		p.Next = base64.RawURLEncoding.EncodeToString([]byte(users[end-1].ID))
	}
	return p, nil
}

// SetUser applies p to the user, creating the user with the defaults first if unknown.
func (s *Service) SetUser(ctx context.Context, id string, p billing.UserPatch) (*billing.User, error) {
	if !validUserID(id) {
		return nil, fault.Invalid("id", "a user id is 1 to 128 letters, digits or . _ @ : + -, and not . or ..")
	}
	now := s.now()
	if err := p.Apply(&billing.User{}, now); err != nil {
		return nil, err // refused before anything is created
	}
	// A new user is created as the patch makes it: one record, one audit entry.
	if u, err := s.createUser(ctx, id, func(u *billing.User) error { return p.Apply(u, now) }); err != nil || u != nil {
		return u, err
	}
	var before billing.User
	u, err := s.Users.UpdateUser(ctx, id, func(u *billing.User) error {
		before = *u
		return p.Apply(u, now)
	})
	if err != nil {
		return nil, err
	}
	after := *u
	s.audit(ctx, ActionUserUpdate, id, &before, &after)
	return u, nil
}

// keepAnAdmin refuses to revoke or demote key id when it is the last usable admin key: nobody
// could administer the gateway after (the bootstrap key is made only on an empty store). A
// console session is no admin key of its own here: it ends with the key that opened it.
func (s *Service) keepAnAdmin(ctx context.Context, id string) error {
	keys, err := s.Keys.ListKeys(ctx)
	if err != nil {
		return err
	}
	now, target, others := s.now(), false, false
	for _, k := range keys {
		if !k.Admin || !k.Usable(now) || k.IsSession() {
			continue
		}
		if k.ID == id {
			target = true
		} else {
			others = true
		}
	}
	if target && !others {
		return fault.New(fault.Conflict, "Conflict", fmt.Sprintf("API key %s is the last admin key: create another admin key before revoking or demoting this one", id)).WithCode("last_admin_key")
	}
	return nil
}
