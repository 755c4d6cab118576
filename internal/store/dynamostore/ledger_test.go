package dynamostore_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/ledger"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// The ledger contract runs on the single-threaded moto, for its concurrency cases.
func TestLedgerContract(t *testing.T) {
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunLedger(t, func(t *testing.T) storetest.LedgerStores {
		s := newLedgerStore(t, client)
		return storetest.LedgerStores{Ledger: s, Counts: s, Users: s, Receipts: s}
	})
}

// newLedgerStore gives each test its own limits, users and receipts tables.
func newLedgerStore(t *testing.T, client *dynamodb.Client) *dynamostore.Store {
	t.Helper()
	s, _ := newLedgerTables(t, client)
	return s
}

// newLedgerTables is newLedgerStore, with the tables' names.
func newLedgerTables(t *testing.T, client *dynamodb.Client) (*dynamostore.Store, dynamostore.Tables) {
	t.Helper()
	tables := uniqueTables(t)
	tables.Idempotency = ""
	tables.Limits, tables.Users, tables.Receipts = tables.APIKeys+"-limits", tables.APIKeys+"-users", tables.APIKeys+"-receipts"
	if err := dynamostore.CreateTables(context.Background(), client, tables); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{tables.APIKeys, tables.Limits, tables.Users, tables.Receipts} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return dynamostore.New(client, tables), tables
}

// TestAWarmRequestIsOneStoreCallEachWay pins the cloud hot path's cost (issue 17): once its
// user's record is cached, an admitted request makes ONE DynamoDB call before its first attempt
// — its windows counted and its reservation held in one TransactWriteItems — and ONE after it,
// the settlement and the receipt in one TransactWriteItems. A refusal names its reason: a full
// window from that one call's cancellation reasons, a quota after reading the record again.
func TestAWarmRequestIsOneStoreCallEachWay(t *testing.T) {
	ctx := context.Background()
	count := &countingTransport{}
	cfg := testenv.AWSConfig(t, testenv.MotoSerial(t))
	cfg.HTTPClient = &http.Client{Transport: count}
	s := newLedgerStore(t, dynamodb.NewFromConfig(cfg))
	l := &ledger.Ledger{Store: s, Limits: true, Biller: &billing.Biller{Store: s}}
	key := &apikey.Key{ID: "k1", UserID: "u1", RateLimit: apikey.RateLimit{RequestsPerMinute: 3}}
	chain := []*catalog.Model{{Name: "demo/dear", Points: 4}, {Name: "demo/cheap", Points: 1}}
	if err := s.CreateUser(ctx, billing.NewUser("u1", billing.Defaults{MonthlyPoints: 9}, time.Now())); err != nil {
		t.Fatal(err)
	}
	request := func(n int) {
		t.Helper()
		r, err := l.Admit(ctx, key, chain, billing.Estimate{}, time.Now())
		if err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		bill := r.Bill(chain[1], &billing.Usage{})
		rec := receipt.Record{BundleID: "set_" + string(rune('a'+n)), KeyID: "k1", JWS: "h.p.s", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		if ops := count.take(); n > 0 && !slices.Equal(ops, []string{"TransactWriteItems"}) {
			t.Errorf("request %d before its attempt: %v, want one TransactWriteItems", n, ops)
		}
		if err := l.Settle(ctx, r, &bill, &rec); err != nil {
			t.Fatalf("request %d: settling: %v", n, err)
		}
		if ops := count.take(); !slices.Equal(ops, []string{"TransactWriteItems"}) {
			t.Errorf("request %d after its answer: %v, want one TransactWriteItems", n, ops)
		}
	}
	count.take()
	request(0) // cold: the user's record is read first
	request(1)
	request(2)
	if u, _ := s.User(ctx, "u1"); u.PointsUsed != 3 {
		t.Errorf("points used %d, want 3 (the served model's, three times)", u.PointsUsed)
	}
	count.take()

	// The minute is full: one call, which names the window.
	_, err := l.Admit(ctx, key, chain, billing.Estimate{}, time.Now())
	var ex *limits.Exceeded
	if !errors.As(err, &ex) || ex.Period != limits.Minute || fault.KindOf(err) != fault.RateLimited {
		t.Errorf("over the limit: %v, want the minute's refusal", err)
	}
	if ops := count.take(); !slices.Equal(ops, []string{"TransactWriteItems"}) {
		t.Errorf("a refusal by a full window made %v, want one TransactWriteItems", ops)
	}

	// Out of points: refused as such, and counted in no window.
	other := &apikey.Key{ID: "k2", UserID: "u1"}
	if _, err := s.UpdateUser(ctx, "u1", func(u *billing.User) error { u.PointsUsed = 9; return nil }); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(ctx, other, chain, billing.Estimate{}, time.Now())
	if fe := fault.From(err); fe.K != fault.QuotaExceeded || fe.Title != "Completion limit exceeded" || fe.Code != "points_exhausted" {
		t.Errorf("out of points: %#v, want Completion limit exceeded", err)
	}
	if counts, _ := s.RequestCounts(ctx, "k2", limits.Windows(other, time.Now())); !slices.Equal(counts, []int{0, 0, 0, 0}) {
		t.Errorf("a quota refusal was counted: %v", counts)
	}
}

// A user item written before reservations left holds on it has no holds map: the first
// reservation gives it one and goes through, and a sweep refunds it like any other.
func TestAReservationOnAnItemWithoutHolds(t *testing.T) {
	ctx := context.Background()
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	s, tables := newLedgerTables(t, client)
	if err := s.CreateUser(ctx, billing.NewUser("u1", billing.Defaults{MonthlyPoints: 9}, time.Now())); err != nil {
		t.Fatal(err)
	}
	users := tables.Users
	if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(users),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "u1"}}, UpdateExpression: aws.String("REMOVE holds")}); err != nil {
		t.Fatal(err)
	}
	l := &ledger.Ledger{Store: s, Biller: &billing.Biller{Store: s}}
	key := &apikey.Key{ID: "k1", UserID: "u1"}
	if _, err := l.Admit(ctx, key, []*catalog.Model{{Name: "demo/dear", Points: 4}}, billing.Estimate{}, time.Now()); err != nil {
		t.Fatalf("a reservation on an item without holds: %v", err)
	}
	if u, _ := s.User(ctx, "u1"); u.PointsUsed != 4 || len(u.Holds) != 1 {
		t.Fatalf("user %+v, want 4 points held by one hold", u)
	}
	if n, err := s.RefundExpired(ctx, time.Now().Add(ledger.DefaultHoldTTL+time.Hour)); err != nil || n != 1 {
		t.Fatalf("RefundExpired = %d, %v; want 1", n, err)
	}
	if u, _ := s.User(ctx, "u1"); u.PointsUsed != 0 || len(u.Holds) != 0 {
		t.Errorf("after the refund %+v, want nothing used or held", u)
	}
}
