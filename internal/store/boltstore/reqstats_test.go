package boltstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/reqstats"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestRequestStatsContract(t *testing.T) {
	storetest.RunRequestStats(t, func(t *testing.T) reqstats.Store { return openStore(t) })
}

// TestRequestStatsSweep checks expired rows are removed from the file, not only left unread.
func TestRequestStatsSweep(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	old := reqstats.Bucket{Res: reqstats.Hour, Start: now.Add(-reqstats.Retention - 2*time.Hour), N: reqstats.Counts{{1, 0}, {0, 0}}}
	fresh := reqstats.Bucket{Res: reqstats.Hour, Start: now.Add(-reqstats.Retention + time.Hour), N: reqstats.Counts{{2, 0}, {0, 0}}}
	oldMinute := reqstats.Bucket{Res: reqstats.Minute, Start: now.Add(-reqstats.Retention - time.Hour), N: reqstats.Counts{{3, 0}, {0, 0}}}
	if err := s.AddRequestStats(ctx, []reqstats.Bucket{old, fresh, oldMinute}); err != nil {
		t.Fatal(err)
	}
	if err := s.SweepRequestStats(now); err != nil {
		t.Fatal(err)
	}
	hours, err := s.RequestStats(ctx, reqstats.Hour, now.Add(-30*24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(hours) != 1 || !hours[0].Start.Equal(fresh.Start) {
		t.Errorf("after the sweep the hour rows are %v, want only the one within retention (%v)", hours, fresh.Start)
	}
	minutes, err := s.RequestStats(ctx, reqstats.Minute, now.Add(-30*24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(minutes) != 0 {
		t.Errorf("after the sweep the minute rows are %v, want none", minutes)
	}
}
