package webhook

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"code.dny.dev/ssrf"
)

// AttemptTimeout bounds one delivery attempt, connection included.
const AttemptTimeout = 5 * time.Second

// EnvAllowPrivate names the setting of which non-public addresses webhooks may reach (Reach).
const EnvAllowPrivate = "SECUREAI_WEBHOOKS_ALLOW_PRIVATE"

// Reach is which addresses besides public ones webhooks may be delivered to. Link-local
// addresses (169.254.0.0/16 — the cloud metadata service — and fe80::/10) are refused in every
// mode: no receiver belongs there.
type Reach uint8

const (
	// ReachPublic: public addresses only (the cloud's default).
	ReachPublic Reach = iota
	// ReachLoopback: also this machine (127.0.0.0/8, ::1): a receiver beside a local gateway (the
	// local default).
	ReachLoopback
	// ReachPrivate: also the private ranges (10/8, 172.16/12, 192.168/16, fc00::/7).
	ReachPrivate
)

var reachNames = map[string]Reach{"false": ReachPublic, "public": ReachPublic, "loopback": ReachLoopback,
	"true": ReachPrivate, "private": ReachPrivate}

// ParseReach reads EnvAllowPrivate's value: public (or false), loopback, private (or true);
// unset means def.
func ParseReach(value string, def Reach) (Reach, error) {
	if value == "" {
		return def, nil
	}
	r, ok := reachNames[strings.ToLower(value)]
	if !ok {
		return 0, fmt.Errorf("%s=%q: want public, loopback or private", EnvAllowPrivate, value)
	}
	return r, nil
}

func (r Reach) String() string {
	return [...]string{ReachPublic: "public", ReachLoopback: "loopback", ReachPrivate: "private"}[r]
}

var (
	loopbackV4 = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	loopbackV6 = []netip.Prefix{netip.MustParsePrefix("::1/128")}
	privateV4  = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16")}
	privateV6  = []netip.Prefix{netip.MustParsePrefix("fc00::/7")}
)

// Guard decides which URLs the gateway may deliver to: public addresses, and those its Reach
// adds; it refuses every other special-purpose address (link-local and cloud metadata always) —
// at create, and again on the address actually dialled, so a DNS name that later resolves to a
// refused address is still refused.
type Guard struct {
	guardian *ssrf.Guardian
	resolver *net.Resolver
}

// NewGuard returns a guard allowing r's addresses besides public ones.
func NewGuard(r Reach) *Guard {
	var v4, v6 []netip.Prefix
	if r >= ReachLoopback {
		v4, v6 = append(v4, loopbackV4...), append(v6, loopbackV6...)
	}
	if r >= ReachPrivate {
		v4, v6 = append(v4, privateV4...), append(v6, privateV6...)
	}
	// Receivers listen on any port; the address is what matters.
	return &Guard{guardian: ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...)),
		resolver: net.DefaultResolver}
}

// CheckURL implements URLChecker: an absolute http(s) URL whose host resolves only to allowed
// addresses. The answer is advisory for later deliveries (DNS can change); the dialler re-checks.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return &ErrURL{URL: raw, Reason: fmt.Sprintf("host %q does not resolve", u.Hostname()), Err: err}
	}
	for _, a := range addrs {
		if err := g.guardian.SafeAddr(a.Unmap()); err != nil {
			// Which address is not said: the answer must not map the deployment's network.
			return &ErrURL{URL: raw, Reason: fmt.Sprintf("host %q resolves to a private, loopback or link-local address that this deployment does not deliver to", u.Hostname()), Err: err}
		}
	}
	return nil
}

// Client returns the HTTP client deliveries use: the address check at dial time, no proxy (a
// proxy would be dialled instead of the target, and checked instead of it), no redirects
// followed (a 3xx is the answer, and it is not a 2xx), AttemptTimeout per attempt.
func (g *Guard) Client() *http.Client {
	dialer := &net.Dialer{Timeout: AttemptTimeout, Control: g.guardian.Safe}
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
