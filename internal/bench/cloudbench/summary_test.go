package cloudbench

import (
	"math"
	"testing"
	"time"
)

func TestRoundsOfCountsEachPhaseAndDynamoDBAlone(t *testing.T) {
	r := Request{
		Calls: []Span{
			span("secretsmanager.GetSecretValue", 0, 10), span("DynamoDB_20120810.GetItem", 0, 10), // one round
			span("DynamoDB_20120810.BatchGetItem", 11, 20), // a second
			span("AWSEvents.PutEvents", 25, 35),            // during the attempts
			span("DynamoDB_20120810.TransactWriteItems", 51, 60),
		},
		Attempts: []Span{span("fake-fail", 21, 24), span("fake-small", 36, 50)},
	}
	got := RoundsOf(r)
	want := PhaseRounds{Before: 2, BeforeDynamo: 2, During: 1, After: 1, AfterDynamo: 1}
	if got != want {
		t.Errorf("RoundsOf = %+v, want %+v", got, want)
	}
	r.Calls = r.Calls[:2]
	if got := RoundsOf(r); got.Before != 1 || got.BeforeDynamo != 1 {
		t.Errorf("a secret read beside the key read is one round: %+v", got)
	}
}

func TestStatOfIsTheMedianAndTheMaximum(t *testing.T) {
	if got := StatOf([]int{3, 1, 2, 1, 9}); got != (Stat{Median: 2, Max: 9}) {
		t.Errorf("StatOf = %+v", got)
	}
	if got := StatOf([]int{1, 2}); got != (Stat{Median: 1, Max: 2}) {
		t.Errorf("StatOf of an even count takes the lower middle: %+v", got)
	}
	if got := StatOf(nil); got != (Stat{}) {
		t.Errorf("StatOf(nil) = %+v", got)
	}
}

func TestCallsPerRequestAveragesByOperationAndPhase(t *testing.T) {
	reqs := []Request{
		{Calls: []Span{span("b", 0, 1), span("a", 5, 6)}, Attempts: []Span{span("up", 2, 4)}},
		{Calls: []Span{span("b", 0, 1)}, Attempts: []Span{span("up", 2, 4)}},
	}
	got := CallsPerRequest(reqs, []Span{span("a", 100, 101)})
	want := []OpCount{{Op: "a", After: 0.5, Background: 0.5}, {Op: "b", Before: 1}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("CallsPerRequest = %+v, want %+v", got, want)
	}
	if got[0].Total() != 1 {
		t.Errorf("Total = %v", got[0].Total())
	}
}

func TestSlopeIsRoundTripsPerUnitOfDelay(t *testing.T) {
	if got := Slope(20*time.Millisecond, 50*time.Millisecond, 0, 10*time.Millisecond); math.Abs(got-3) > 1e-9 {
		t.Errorf("Slope = %v, want 3", got)
	}
	if got := Slope(1, 2, 5, 5); got != 0 {
		t.Errorf("Slope with one delay = %v, want 0", got)
	}
}

func TestMedianPicksTheMiddleLatency(t *testing.T) {
	mk := func(ms int) Request { return Request{Start: t0, End: t0.Add(time.Duration(ms) * time.Millisecond)} }
	got, ok := Median([]Request{mk(30), mk(10), mk(20)})
	if !ok || got.End.Sub(got.Start) != 20*time.Millisecond {
		t.Errorf("Median = %v", got.End.Sub(got.Start))
	}
	if _, ok := Median(nil); ok {
		t.Error("Median of nothing")
	}
}
