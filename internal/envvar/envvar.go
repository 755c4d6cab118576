// Package envvar reads typed settings from environment variables. A malformed value is an *Error
// naming the variable, what it wants and what it got, so a misconfigured deployment says which
// setting to fix. The local server and the Lambda functions parse their shared settings here, so
// both accept exactly the same values.
package envvar

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Error is a variable whose value cannot be used.
type Error struct {
	Name  string // the variable, e.g. SECUREAI_KEY_CACHE_TTL
	Value string // what it was set to
	Want  string // what it should be, e.g. "a duration with a unit such as 30s"
}

func (e *Error) Error() string { return fmt.Sprintf("%s: want %s, got %q", e.Name, e.Want, e.Value) }

// Reader reads variables through get and keeps the first error, so a parse function reads every
// setting in a row and checks Err once.
type Reader struct {
	get func(string) string
	err error
}

// New reads through get (os.Getenv, or a map's lookup in tests). An empty value means unset.
func New(get func(string) string) *Reader { return &Reader{get: get} }

// Err returns the first malformed variable met, nil if none.
func (r *Reader) Err() error { return r.err }

// String returns name's value, def when unset.
func (r *Reader) String(name, def string) string {
	if v := r.get(name); v != "" {
		return v
	}
	return def
}

// Check returns name's value (def when unset) if valid accepts it; otherwise it records an Error
// saying the variable wants want.
func (r *Reader) Check(name, def, want string, valid func(string) bool) string {
	v := r.String(name, def)
	if !valid(v) {
		r.fail(name, want)
		return def
	}
	return v
}

// Duration reads a non-negative Go duration with its unit ("30s", "1m30s"; "0" is zero).
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	return r.duration(name, def, 0, "a duration with a unit such as 30s")
}

// PositiveDuration reads a Go duration greater than zero, with its unit ("5m").
func (r *Reader) PositiveDuration(name string, def time.Duration) time.Duration {
	return r.duration(name, def, 1, "a positive duration with a unit such as 5m")
}

func (r *Reader) duration(name string, def, min time.Duration, want string) time.Duration {
	v := r.get(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < min {
		r.fail(name, want)
		return def
	}
	return d
}

// Positive reads a whole number greater than zero.
func (r *Reader) Positive(name string, def int64) int64 {
	v := r.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		r.fail(name, "a whole number greater than zero")
		return def
	}
	return n
}

// Bool reads true or false (or any form strconv.ParseBool takes: 1, 0, TRUE…).
func (r *Reader) Bool(name string, def bool) bool {
	v := r.get(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, "true or false")
		return def
	}
	return b
}

// Fraction reads a number from 0 to 1 ("0.25").
func (r *Reader) Fraction(name string, def float64) float64 {
	v := r.get(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		r.fail(name, "a number from 0 to 1 such as 0.25")
		return def
	}
	return f
}

// Prefixes reads a comma-separated list of IP addresses and CIDR prefixes ("127.0.0.1,
// 10.0.0.0/8, ::1"); an address is a prefix of its own. Unset: none.
func (r *Reader) Prefixes(name string) []netip.Prefix {
	v := r.get(name)
	if v == "" {
		return nil
	}
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				r.fail(name, "comma-separated IP addresses or CIDR prefixes such as 127.0.0.1,10.0.0.0/8")
				return nil
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out
}

func (r *Reader) fail(name, want string) {
	if r.err == nil {
		r.err = &Error{Name: name, Value: r.get(name), Want: want}
	}
}
