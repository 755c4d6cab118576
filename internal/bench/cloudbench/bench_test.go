package cloudbench

import (
	"slices"
	"testing"
	"time"
)

func TestParseDelaysWantsTwoDifferentDelays(t *testing.T) {
	got, err := ParseDelays("10ms, 0")
	if err != nil || !slices.Equal(got, []time.Duration{0, 10 * time.Millisecond}) {
		t.Errorf("ParseDelays = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "0,0", "0,-1ms", "0,ten"} {
		if _, err := ParseDelays(bad); err == nil {
			t.Errorf("ParseDelays(%q) accepted", bad)
		}
	}
}
