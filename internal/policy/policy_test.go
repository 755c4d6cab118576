package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
)

func mustSet(t *testing.T, config map[string]Policy) *Set {
	t.Helper()
	s, err := NewSet(config)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBuiltinHashesAreStable pins the built-in policies' canonical forms and hashes: a restart, a
// new Go version or a refactor must not change a hash that receipts and tokens already carry.
func TestBuiltinHashesAreStable(t *testing.T) {
	want := map[string]string{
		"public":       `{"mode":"enforce","name":"public","providers":["*"],"regions":["*"]}`,
		"internal":     `{"mode":"monitor","name":"internal","providers":["*"],"regions":["eu","us"]}`,
		"confidential": `{"mode":"enforce","name":"confidential","providers":["bedrock"],"regions":["us-east-1"]}`,
	}
	s := mustSet(t, nil)
	for name, canonical := range want {
		a, err := s.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(canonical))
		if a.Canonical != canonical || a.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: canonical %s hash %s, want %s", name, a.Canonical, a.Hash, canonical)
		}
	}
}

func TestHashIgnoresSpelling(t *testing.T) {
	spellings := []string{
		`{"eu-only":{"regions":["eu","eu-west-1"],"providers":["google","bedrock"],"mode":"enforce"}}`,
		`{"eu-only":{"mode":"enforce","providers":["bedrock","google","bedrock"],"regions":["eu-west-1","eu"]}}`,
		`{"eu-only":{"providers":["bedrock","google"],"regions":["eu","eu-west-1"]}}`, // mode defaults to enforce
	}
	var hashes []string
	for _, raw := range spellings {
		cfg, err := Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		a, err := mustSet(t, cfg).Lookup("eu-only")
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, a.Hash)
	}
	for i := range hashes {
		if hashes[i] != hashes[0] {
			t.Errorf("spelling %d hashes to %s, spelling 0 to %s", i, hashes[i], hashes[0])
		}
	}
	changed, _ := Parse([]byte(`{"eu-only":{"providers":["bedrock","google"],"regions":["eu"]}}`))
	if a, _ := mustSet(t, changed).Lookup("eu-only"); a.Hash == hashes[0] {
		t.Error("a changed rule kept the same hash")
	}
}

func TestConfigReplacesBuiltin(t *testing.T) {
	cfg, err := Parse([]byte(`{"confidential":{"providers":["selfhosted"],"regions":["local"]},"eu-only":{"regions":["eu"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := mustSet(t, cfg)
	if got := strings.Join(s.Names(), ","); got != "confidential,eu-only,internal,public" {
		t.Errorf("Names = %s", got)
	}
	a, _ := s.Lookup("confidential")
	if !a.Evaluate(&catalog.Model{Name: "selfhosted/llama", Provider: "selfhosted", Regions: []string{"local"}}).Allowed {
		t.Error("the config's confidential policy did not replace the built-in")
	}
}

func TestParseRefusesBadConfig(t *testing.T) {
	tests := []struct{ name, raw, inErr string }{
		{"unknown field", `{"p":{"region":["eu"]}}`, "unknown field"},
		{"bad mode", `{"p":{"mode":"audit"}}`, `mode "audit"`},
		{"bad name", `{"Top Secret":{}}`, `name "Top Secret"`},
		{"null policy", `{"p":null}`, `policy "p" has no definition`},
		{"empty region", `{"p":{"regions":[""]}}`, `regions entry ""`},
		{"any with others", `{"p":{"providers":["*","openai"]}}`, "use it alone"},
		{"not an object", `[]`, "smltp_policies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.raw))
			if err == nil || !strings.Contains(err.Error(), tt.inErr) {
				t.Errorf("Parse(%s) err = %v, want it to mention %q", tt.raw, err, tt.inErr)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	s := mustSet(t, nil)
	tests := []struct {
		name             string
		req, keyDefault  string
		keyAllowed       []string
		wantName, source string
		forbidden        bool
	}{
		{"no name and no key default gets public", "", "", nil, "public", SourceDefault, false},
		{"the request's name wins", "internal", "public", nil, "internal", SourceRequest, false},
		{"else the key's default", "", "internal", nil, "internal", SourceDefault, false},
		{"a key may use public and internal by default", "internal", "", nil, "internal", SourceRequest, false},
		{"but not confidential by default", "confidential", "", nil, "", "", true},
		{"a key allowed confidential may use it", "confidential", "", []string{"confidential"}, "confidential", SourceRequest, false},
		{"a key's allowlist replaces the default one", "public", "", []string{"confidential"}, "", "", true},
		{"a key's default it may not use is refused too", "", "confidential", nil, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := s.Resolve(tt.req, tt.keyAllowed, tt.keyDefault)
			if tt.forbidden {
				var f *fault.Error
				if !errors.As(err, &f) || f.K != fault.Forbidden || f.Title != "Access denied" || f.Code != "smltp_policy_not_allowed" {
					t.Errorf("err = %#v, want 403 Access denied", err)
				}
				return
			}
			if err != nil || a.Name != tt.wantName || a.Source != tt.source {
				t.Errorf("Resolve = %+v, %v; want %s from %s", a, err, tt.wantName, tt.source)
			}
		})
	}
}

func TestResolveUnknown(t *testing.T) {
	s := mustSet(t, nil)
	for _, in := range []string{"Public", "secret", " public"} {
		_, err := s.Resolve(in, []string{"Public", "secret", " public"}, "")
		var u *UnknownError
		if !errors.As(err, &u) || u.Name != in || fault.KindOf(err) != fault.InvalidRequest {
			t.Errorf("Resolve(%q) err = %v, want UnknownError", in, err)
		}
	}
}

// TestBuiltinSet is the built-in policies alone, for a gateway configured with none.
func TestBuiltinSet(t *testing.T) {
	a, err := BuiltinSet.Resolve("", nil, "")
	if err != nil || a.Name != Default || a.Source != SourceDefault {
		t.Errorf("Resolve(\"\") = %+v, %v", a, err)
	}
	want, _ := mustSet(t, nil).Lookup("confidential")
	if got, err := BuiltinSet.Lookup("confidential"); err != nil || got.Hash != want.Hash {
		t.Errorf("Lookup(confidential) = %+v, %v", got, err)
	}
}
