package boltstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mappedKiB is how much of the file at path this process has mapped, from /proc/self/smaps.
func mappedKiB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in, found := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-"): // a mapping's first line
			in = len(fields) >= 6 && fields[5] == path
			found = found || in
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kib, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kib
		}
	}
	if !found {
		t.Fatalf("%s is not mapped", path)
	}
	return total
}

func TestTheFlusherLeavesMappedOnlyWhatIsRead(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	const n = 3000 // a few MiB: several folios
	for i := range n {
		writeRequest(t, s, fmt.Sprintf("u%d", i/100), fmt.Sprintf("b%05d", i), now) // 3 points each: a user per 100
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 100 { // committed: read from the file
		if _, err := s.Receipt(ctx, fmt.Sprintf("b%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if kib := mappedKiB(t, path); kib == 0 {
		t.Fatal("reading committed receipts mapped nothing of the file; the test reads nothing through the mapping")
	}

	if err := s.releaseMapping(); err != nil {
		t.Fatal(err)
	}
	if kib := mappedKiB(t, path); kib != 0 {
		t.Errorf("after releaseMapping %d KiB of the file are still mapped, want 0", kib)
	}
	if r, err := s.Receipt(ctx, "b02999"); err != nil || r.BundleID != "b02999" {
		t.Errorf("a receipt read after the release: %+v, %v", r, err)
	}
}
