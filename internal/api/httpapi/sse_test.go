package httpapi

import (
	"net/http/httptest"
	"testing"
)

// flushCounter records how many times the frames were flushed to the caller.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

func TestSSECoalescesOnlyWhatHasAlreadyArrived(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ready   []bool // what more() answers after each frame
		flushes int
	}{
		{"each frame flushed when the next has not arrived", []bool{false, false, false}, 3},
		{"a burst leaves with one flush", []bool{true, true, false}, 1},
		{"no hook: every frame flushed", nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
			out := StartSSE(w)
			if tc.ready != nil {
				i := 0
				out.Coalesce(func() bool { r := tc.ready[i]; i++; return r })
			}
			for range 3 {
				if err := out.Data([]byte(`{"x":1}`)); err != nil {
					t.Fatal(err)
				}
			}
			if w.flushes != tc.flushes {
				t.Errorf("flushes = %d, want %d", w.flushes, tc.flushes)
			}
			if got, want := w.Body.String(), "data: {\"x\":1}\n\ndata: {\"x\":1}\n\ndata: {\"x\":1}\n\n"; got != want {
				t.Errorf("body = %q, want %q", got, want)
			}
		})
	}
}
