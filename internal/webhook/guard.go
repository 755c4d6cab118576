package webhook

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"code.dny.dev/ssrf"
)

// AttemptTimeout bounds one delivery attempt, connection included.
const AttemptTimeout = 5 * time.Second

// EnvAllowPrivate names the setting that lets webhooks reach private and loopback addresses.
const EnvAllowPrivate = "SECUREAI_WEBHOOKS_ALLOW_PRIVATE"

// AllowPrivate reads EnvAllowPrivate's value; unset means def (on for the local server, so a
// receiver on the same machine works; off in the cloud).
func AllowPrivate(value string, def bool) (bool, error) {
	if value == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", EnvAllowPrivate, value)
	}
	return b, nil
}

// Guard decides which URLs the gateway may deliver to. Unless private addresses are allowed, it
// refuses loopback, private, link-local (cloud metadata included) and other special-purpose
// addresses — at create, and again on the address actually dialled, so a DNS name that later
// resolves to 127.0.0.1 is still refused.
type Guard struct {
	allowPrivate bool
	guardian     *ssrf.Guardian
	resolver     *net.Resolver
}

// NewGuard returns a guard; allowPrivate (SECUREAI_WEBHOOKS_ALLOW_PRIVATE=true) turns the address
// checks off, for a local gateway delivering to a receiver on the same machine.
func NewGuard(allowPrivate bool) *Guard {
	// Receivers listen on any port; the address is what matters.
	return &Guard{allowPrivate: allowPrivate, guardian: ssrf.New(ssrf.WithAnyPort()), resolver: net.DefaultResolver}
}

// CheckURL implements URLChecker: an absolute http(s) URL whose host resolves only to allowed
// addresses. The answer is advisory for later deliveries (DNS can change); the dialler re-checks.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	if g.allowPrivate {
		return nil
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return &ErrURL{URL: raw, Reason: fmt.Sprintf("host %q does not resolve", u.Hostname()), Err: err}
	}
	for _, a := range addrs {
		if err := g.guardian.SafeAddr(a.Unmap()); err != nil {
			// Which address is not said: the answer must not map the deployment's network.
			return &ErrURL{URL: raw, Reason: fmt.Sprintf("host %q resolves to a private, loopback or link-local address", u.Hostname()), Err: err}
		}
	}
	return nil
}

// Client returns the HTTP client deliveries use: the address check at dial time, no proxy (a
// proxy would be dialled instead of the target, and checked instead of it), no redirects
// followed (a 3xx is the answer, and it is not a 2xx), AttemptTimeout per attempt.
func (g *Guard) Client() *http.Client {
	dialer := &net.Dialer{Timeout: AttemptTimeout}
	if !g.allowPrivate {
		dialer.Control = g.guardian.Safe
	}
	return &http.Client{
		Timeout: AttemptTimeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   AttemptTimeout,
			ResponseHeaderTimeout: AttemptTimeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
