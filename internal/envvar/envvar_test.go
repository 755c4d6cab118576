package envvar

import (
	"errors"
	"testing"
	"time"
)

func TestReaderNamesTheFirstBadVariable(t *testing.T) {
	env := map[string]string{"D": "30", "P": "0", "B": "maybe", "OK": "5m"}
	r := New(func(k string) string { return env[k] })
	if got := r.PositiveDuration("OK", time.Second); got != 5*time.Minute {
		t.Errorf("OK = %v", got)
	}
	if got := r.Duration("UNSET", 30*time.Second); got != 30*time.Second {
		t.Errorf("an unset variable gave %v, want its default", got)
	}
	if got := r.Duration("D", time.Second); got != time.Second {
		t.Errorf("a bad variable gave %v, want its default", got)
	}
	r.Positive("P", 1)
	r.Bool("B", false)
	var bad *Error
	if !errors.As(r.Err(), &bad) || bad.Name != "D" || bad.Value != "30" || bad.Want == "" {
		t.Fatalf("Err() = %v, want the first bad variable, D", r.Err())
	}
}

func TestEachKindRefusesWhatItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		read        func(*Reader)
		ok          bool
	}{
		{"duration with unit", "30s", func(r *Reader) { r.Duration("V", 0) }, true},
		{"duration zero", "0", func(r *Reader) { r.Duration("V", 0) }, true},
		{"duration without unit", "30", func(r *Reader) { r.Duration("V", 0) }, false},
		{"negative duration", "-1s", func(r *Reader) { r.Duration("V", 0) }, false},
		{"positive duration zero", "0s", func(r *Reader) { r.PositiveDuration("V", time.Second) }, false},
		{"positive number", "1024", func(r *Reader) { r.Positive("V", 1) }, true},
		{"number zero", "0", func(r *Reader) { r.Positive("V", 1) }, false},
		{"number with unit", "8MiB", func(r *Reader) { r.Positive("V", 1) }, false},
		{"bool", "false", func(r *Reader) { r.Bool("V", true) }, true},
		{"bool word", "yes", func(r *Reader) { r.Bool("V", true) }, false},
		{"check passes", "abc", func(r *Reader) { r.Check("V", "", "letters", func(v string) bool { return v == "abc" }) }, true},
		{"check fails", "a c", func(r *Reader) { r.Check("V", "", "letters", func(v string) bool { return v == "abc" }) }, false},
		{"fraction", "0.25", func(r *Reader) { r.Fraction("V", 1) }, true},
		{"fraction one", "1", func(r *Reader) { r.Fraction("V", 1) }, true},
		{"fraction over one", "1.5", func(r *Reader) { r.Fraction("V", 1) }, false},
		{"fraction not a number", "NaN", func(r *Reader) { r.Fraction("V", 1) }, false},
		{"prefixes", "127.0.0.1, 10.0.0.0/8,::1", func(r *Reader) { r.Prefixes("V") }, true},
		{"prefixes with a host name", "127.0.0.1,proxy.internal", func(r *Reader) { r.Prefixes("V") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(func(string) string { return tc.value })
			tc.read(r)
			if (r.Err() == nil) != tc.ok {
				t.Errorf("%q: error %v, want ok=%v", tc.value, r.Err(), tc.ok)
			}
		})
	}
}

func TestPrefixesReadsAddressesAndCIDRs(t *testing.T) {
	got := New(func(string) string { return "127.0.0.1, 10.1.2.3/8,::1" }).Prefixes("V")
	want := []string{"127.0.0.1/32", "10.0.0.0/8", "::1/128"}
	if len(got) != len(want) {
		t.Fatalf("Prefixes = %v, want %v", got, want)
	}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("Prefixes[%d] = %s, want %s", i, p, want[i])
		}
	}
}
