// Package policy is the SMLTP policy engine: named policies (public, internal, confidential built
// in, more from SECUREAI_CONFIG) that say which providers and regions a request's data may reach
// and whether a breach is refused (enforce) or only recorded (monitor). Every surface and the
// policy-check dry run ask this package the same two questions — which policy applies to this
// request and key, and may this attempt's model run under it — so their answers agree, and each
// policy carries a hash of its canonical form that receipts and entitlement tokens bind to.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Default is the policy a request gets when neither it nor its key names one.
const Default = "public"

// DefaultAllowed is what a key may use when its allowedSMLTPPolicies is empty (SPEC 7).
func DefaultAllowed() []string { return []string{"public", "internal"} }

// Source says where the applied policy came from.
const (
	SourceRequest = "request"
	SourceDefault = "default" // the key's default, else Default
)

// Mode says what a breach of the policy does.
type Mode string

const (
	// Monitor lets a breaching attempt through and records the violation (receipt verdict, breaker).
	Monitor Mode = "monitor"
	// Enforce refuses a breaching attempt with 403 before anything is sent.
	Enforce Mode = "enforce"
)

// Any, as the only entry of Providers or Regions, means no restriction.
const Any = "*"

// Policy is one named policy's rules.
type Policy struct {
	Name string `json:"-"`
	// Providers the data may be sent to, by catalog provider name; empty or ["*"]: any.
	Providers []string `json:"providers,omitempty"`
	// Regions the model must run in (data residency), matched against the catalog's regions of a
	// model; a policy region also covers its sub-regions ("us" covers "us-east-1"). Every region a
	// model may run in must be allowed, and a model with no regions in the catalog is denied,
	// because its residency is unknown. Empty or ["*"]: any.
	Regions []string `json:"regions,omitempty"`
	// Mode is monitor or enforce; omitted means enforce, the safe reading of a policy.
	Mode Mode `json:"mode,omitempty"`
}

// Builtin returns the built-in policies:
//
//   - public: any provider, any region, enforce (there is nothing to breach). For data that may
//     go wherever the catalog reaches.
//   - internal: any provider, regions us and eu (jurisdictions with enterprise data agreements),
//     monitor: breaches are recorded, not refused, so teams see where internal data would go
//     before they lock it down.
//   - confidential: only bedrock (the operator's own AWS account: no third-party data processor)
//     in us-east-1, enforce.
//
// SECUREAI_CONFIG may replace any of them by name.
func Builtin() map[string]Policy {
	return map[string]Policy{
		"public":       {Name: "public", Mode: Enforce},
		"internal":     {Name: "internal", Regions: []string{"us", "eu"}, Mode: Monitor},
		"confidential": {Name: "confidential", Providers: []string{"bedrock"}, Regions: []string{"us-east-1"}, Mode: Enforce},
	}
}

var (
	nameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	valueRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$`)
)

// Parse reads the "smltp_policies" section of SECUREAI_CONFIG: a JSON object of policies by name,
// for example {"eu-only": {"regions": ["eu"], "mode": "enforce"}}. Unknown fields are refused, so
// a misspelt rule never silently allows everything.
func Parse(raw []byte) (map[string]Policy, error) {
	var in map[string]*Policy
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("policy: smltp_policies: %w", err)
	}
	out := make(map[string]Policy, len(in))
	for name, p := range in {
		if p == nil {
			return nil, fmt.Errorf("policy: smltp_policies: policy %q has no definition", name)
		}
		p.Name = name
		if err := p.validate(); err != nil {
			return nil, err
		}
		out[name] = *p
	}
	return out, nil
}

func (p *Policy) validate() error {
	if !nameRE.MatchString(p.Name) {
		return fmt.Errorf("policy: name %q must be 1-64 lowercase letters, digits, '_', '-' or '.'", p.Name)
	}
	switch p.Mode {
	case "":
		p.Mode = Enforce
	case Monitor, Enforce:
	default:
		return fmt.Errorf("policy %q: mode %q must be %q or %q", p.Name, p.Mode, Monitor, Enforce)
	}
	for field, list := range map[string][]string{"providers": p.Providers, "regions": p.Regions} {
		for _, v := range list {
			if v != Any && !valueRE.MatchString(v) {
				return fmt.Errorf("policy %q: %s entry %q is not a provider or region name", p.Name, field, v)
			}
		}
		if slices.Contains(list, Any) && len(list) > 1 {
			return fmt.Errorf("policy %q: %s lists %q with other entries; use it alone", p.Name, field, Any)
		}
	}
	return nil
}

// canonical is the policy's canonical form: a JSON object with keys in a fixed (sorted) order and
// lists sorted and deduplicated, "any" written as ["*"]. Equal rules give equal bytes however the
// config spelt them, so policy_hash changes exactly when the rules do.
func (p Policy) canonical() string {
	b, err := json.Marshal(struct {
		Mode      Mode     `json:"mode"`
		Name      string   `json:"name"`
		Providers []string `json:"providers"`
		Regions   []string `json:"regions"`
	}{p.Mode, p.Name, normalize(p.Providers), normalize(p.Regions)})
	if err != nil {
		panic(err) // strings and slices of strings always marshal
	}
	return string(b)
}

func normalize(list []string) []string {
	if len(list) == 0 || slices.Contains(list, Any) {
		return []string{Any}
	}
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// Applied is the policy a request runs under.
type Applied struct {
	Name      string `json:"name"`
	Canonical string `json:"canonical"` // the canonical JSON the hash covers
	Source    string `json:"source"`
	Hash      string `json:"policy_hash"` // hex SHA-256 of Canonical
	Mode      Mode   `json:"-"`
	rules     Policy
}

// Set is the gateway's policies: the built-in ones overlaid with SECUREAI_CONFIG's. It is
// immutable once built and safe for concurrent use.
type Set struct {
	byName map[string]Applied
	names  []string
}

// NewSet returns the built-in policies overlaid with config (from Parse; nil for none), each
// replacing a built-in of the same name.
func NewSet(config map[string]Policy) (*Set, error) {
	all := Builtin()
	for name, p := range config {
		p.Name = name
		if err := p.validate(); err != nil {
			return nil, err
		}
		all[name] = p
	}
	s := &Set{byName: make(map[string]Applied, len(all))}
	for name, p := range all {
		p.Providers, p.Regions = normalize(p.Providers), normalize(p.Regions)
		c := p.canonical()
		sum := sha256.Sum256([]byte(c))
		s.byName[name] = Applied{Name: name, Canonical: c, Hash: hex.EncodeToString(sum[:]), Mode: p.Mode, rules: p}
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
	return s, nil
}

// Names lists the policies in a stable order.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// UnknownError is a request (or a key's default) naming a policy that does not exist: a 400 on
// the smltp_policy field.
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("smltp_policy: unknown policy %q (known: %s)", e.Name, strings.Join(e.Known, ", "))
}

// Fault implements fault.Describer: a 400 naming smltp_policy.
func (e *UnknownError) Fault() *fault.Error { return fault.Invalid("smltp_policy", e.Error()) }

// Lookup returns the policy named by a request without asking whether a key may use it; "" means
// the request named none and gets Default.
func (s *Set) Lookup(name string) (Applied, error) {
	src := SourceRequest
	if name == "" {
		name, src = Default, SourceDefault
	}
	a, ok := s.byName[name]
	if !ok {
		return Applied{}, &UnknownError{Name: name, Known: s.Names()}
	}
	a.Source = src
	return a, nil
}

// Resolve returns the policy a request runs under: the one it names, else the key's default
// (keyDefault), else Default. A key may use only the policies in keyAllowed (empty:
// DefaultAllowed()); any other is a 403 *fault.Error with code "smltp_policy_not_allowed".
func (s *Set) Resolve(name string, keyAllowed []string, keyDefault string) (Applied, error) {
	fromKey := name == "" && keyDefault != ""
	if fromKey {
		name = keyDefault
	}
	a, err := s.Lookup(name)
	if err != nil {
		return Applied{}, err
	}
	if fromKey {
		a.Source = SourceDefault
	}
	if err := Allow(a, keyAllowed); err != nil {
		return Applied{}, err
	}
	return a, nil
}

// Allow refuses a policy a key may not use: one not in keyAllowed (empty: DefaultAllowed()), with
// a 403 *fault.Error with code "smltp_policy_not_allowed".
func Allow(a Applied, keyAllowed []string) error {
	if len(keyAllowed) == 0 {
		keyAllowed = DefaultAllowed()
	}
	if !slices.Contains(keyAllowed, a.Name) {
		return fault.New(fault.Forbidden, "Access denied",
			fmt.Sprintf("this API key may not use SMLTP policy %q (allowed: %s)", a.Name, strings.Join(keyAllowed, ", "))).
			WithCode("smltp_policy_not_allowed").WithParam("smltp_policy")
	}
	return nil
}

// BuiltinSet is the set of the built-in policies alone, for a gateway configured with none; it is
// never modified.
var BuiltinSet = func() *Set {
	s, err := NewSet(nil)
	if err != nil {
		panic(err) // the built-ins are tested; reaching this is a build defect
	}
	return s
}()
