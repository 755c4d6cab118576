package latencybench

import (
	"os"
	"strings"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       uint64
		bad        bool
	}{
		// utime 1234 and stime 56 are fields 14 and 15.
		{name: "plain", stat: "4242 (gateway) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 56 0 0 20 0 9 0 100 1000000 500 18446744073709551615", want: 1290},
		// A command name may hold spaces and ')' — counting from the first ')' would misread.
		{name: "name with ) and spaces", stat: "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 1 1", want: 7},
		{name: "too short", stat: "7 (x) R 1 7", bad: true},
		{name: "no name", stat: "7 x R", bad: true},
		{name: "not a number", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 4 0", bad: true},
	} {
		got, err := parseStatCPU([]byte(tc.stat))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: got %d, want an error", tc.name, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// The real file of this process parses, and the CPU this test has burnt shows in it.
func TestProcCPUOfThisProcess(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var sink strings.Builder
	for deadline := before + 3*clockTick; ; {
		for range 1 << 16 {
			sink.WriteByte('x')
		}
		sink.Reset()
		now, err := procCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now >= deadline {
			return
		}
	}
}
