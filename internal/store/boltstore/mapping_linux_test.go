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

// mappedKiB is how much of the mapping that starts at address this process has resident, from
// /proc/self/smaps. The store's mapping is found by its address, as its path may read differently
// there (a symlinked temporary directory, an overlay file system).
func mappedKiB(t *testing.T, address uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := strconv.FormatUint(uint64(address), 16) + "-"
	in, found := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-"): // a mapping's first line
			in = strings.HasPrefix(fields[0], start)
			found = found || in
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kib, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			return kib
		}
	}
	if !found {
		t.Fatalf("no mapping starts at %s in /proc/self/smaps", start)
	}
	t.Fatal("the mapping has no Rss line")
	return 0
}

func TestReleaseMappingUnmapsWhatWasRead(t *testing.T) {
	s, _ := openTemp(t)
	// The test releases the mapping itself: the flusher's own releases would race its reads.
	if err := s.closePending(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	const n = 3000 // a few MiB: several folios
	for i := range n {
		writeRequest(t, s, fmt.Sprintf("u%d", i/100), fmt.Sprintf("b%05d", i), now) // 3 points each: a user per 100
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// Taken once: reading bbolt's address touches the mapping's first page. No write follows, so
	// the file is not remapped.
	address := s.db.Info().Data
	for i := 0; i < n; i += 100 { // committed: read from the file
		if _, err := s.Receipt(ctx, fmt.Sprintf("b%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if kib := mappedKiB(t, address); kib == 0 {
		t.Fatal("reading committed receipts mapped nothing of the file; the test reads nothing through the mapping")
	}

	if err := s.releaseMapping(); err != nil {
		t.Fatal(err)
	}
	if kib := mappedKiB(t, address); kib != 0 {
		t.Errorf("after releaseMapping %d KiB of the file are still mapped, want 0", kib)
	}
	if r, err := s.Receipt(ctx, "b02999"); err != nil || r.BundleID != "b02999" {
		t.Errorf("a receipt read after the release: %+v, %v", r, err)
	}
}
