package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name, in, wantName, wantSource string
	}{
		{"no name gets the default", "", "public", SourceDefault},
		{"a named policy is the request's", "internal", "internal", SourceRequest},
		{"confidential exists", "confidential", "confidential", SourceRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Resolve(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(`{"name":"` + tt.wantName + `"}`))
			if a.Name != tt.wantName || a.Source != tt.wantSource || a.Canonical != `{"name":"`+tt.wantName+`"}` || a.Hash != hex.EncodeToString(sum[:]) {
				t.Errorf("Resolve(%q) = %+v", tt.in, a)
			}
		})
	}
}

func TestResolveUnknown(t *testing.T) {
	for _, in := range []string{"Public", "secret", " public"} {
		_, err := Resolve(in)
		var u *UnknownError
		if !errors.As(err, &u) || u.Name != in {
			t.Errorf("Resolve(%q) err = %v, want UnknownError", in, err)
		}
	}
}
