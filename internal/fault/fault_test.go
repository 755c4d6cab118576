package fault_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/secureai-gateway/gateway/internal/fault"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short text is kept", "model x", 64, "model x"},
		{"exactly n is kept", strings.Repeat("a", 20), 20, strings.Repeat("a", 20)},
		{"long text is cut and marked", strings.Repeat("a", 100), 20, strings.Repeat("a", 6) + "…(truncated)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fault.Clip(tc.in, tc.n); got != tc.want {
				t.Errorf("Clip = %q, want %q", got, tc.want)
			}
		})
	}
	// A cut never splits a rune.
	got := fault.Clip(strings.Repeat("é", 1<<19), fault.MaxMessage)
	if !utf8.ValidString(got) || len(got) > fault.MaxMessage {
		t.Errorf("Clip of a 1 MB multibyte string: %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}

type described struct{}

func (described) Error() string { return "described" }
func (described) Fault() *fault.Error {
	return fault.New(fault.CircuitOpen, "Circuit open", "described")
}

func TestFrom(t *testing.T) {
	quota := fault.New(fault.QuotaExceeded, "Completion limit exceeded", "no points left")
	for _, tc := range []struct {
		name string
		err  error
		want fault.Kind
	}{
		{"an *Error is itself", quota, fault.QuotaExceeded},
		{"a wrapped *Error", fmt.Errorf("billing: %w", quota), fault.QuotaExceeded},
		{"a Describer describes itself", fmt.Errorf("x: %w", described{}), fault.CircuitOpen},
		{"anything else is internal", errors.New("disk on fire"), fault.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fault.From(tc.err)
			if f.K != tc.want || fault.KindOf(tc.err) != tc.want {
				t.Errorf("From = %v, KindOf = %v; want %v", f.K, fault.KindOf(tc.err), tc.want)
			}
			if f.K == fault.Internal && (strings.Contains(f.Message, "disk") || !errors.Is(f, tc.err)) {
				t.Errorf("an internal error leaks its cause to the caller or loses it for the logs: %q", f.Message)
			}
		})
	}
	for _, k := range fault.Kinds() {
		if k.String() == "unknown" || k.String() == "" {
			t.Errorf("kind %d has no name", k)
		}
	}
}
