package fault

import (
	"errors"
	"strings"
	"testing"
)

type misconfigured struct{ fix string }

func (m misconfigured) Error() string { return "refused" }
func (m misconfigured) Fix() string   { return m.fix }

// SPEC 11: a dependency down is a 503 to retry; a configuration error (the role lacks a
// permission) is a 500 that says a retry will not help, with what to fix in its cause (logged),
// never in the answer.
func TestDependencyTellsAnOutageFromAMisconfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind Kind
		code string
	}{
		{"a failure of the moment", errors.New("connection reset"), Unavailable, ""},
		{"a role that lacks a permission", misconfigured{"the function's role lacks dynamodb:GetItem on table t"}, Internal, CodeConfiguration},
		{"an adapter error that blames nothing", misconfigured{""}, Unavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Dependency("the store", "the store cannot be reached; try again", tc.err)
			if e.K != tc.kind || e.Code != tc.code || !errors.Is(e, tc.err) {
				t.Fatalf("got %v %q (cause %v), want %v %q wrapping %v", e.K, e.Code, e.Err, tc.kind, tc.code, tc.err)
			}
			if m, ok := tc.err.(misconfigured); ok && m.fix != "" {
				if strings.Contains(e.Message, m.fix) || !strings.Contains(e.Err.Error(), m.fix) {
					t.Errorf("message %q, cause %q: want the fix in the cause only", e.Message, e.Err)
				}
			}
		})
	}
}
