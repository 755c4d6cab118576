package functest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// TestRefundSweepRefundsExpiredHolds runs the built refund-sweep under the emulator with its
// scheduled event, against DynamoDB on moto: a reservation held past its expiry is refunded, one
// still within it is kept, and a second run refunds nothing more.
func TestRefundSweepRefundsExpiredHolds(t *testing.T) {
	root := testenv.RepoRoot(t)
	built := make(chan map[string]string, 1)
	go func() { built <- buildAll(t, root, []string{"refund-sweep"}) }()

	ctx := context.Background()
	endpoint := testenv.Moto(t)
	cfg := testenv.AWSConfig(t, endpoint)
	db := dynamodb.NewFromConfig(cfg)
	tables := dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys"), Users: testenv.UniqueName(t, "users")}
	if err := dynamostore.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	store := dynamostore.New(db, tables)
	now := time.Now()
	u := billing.NewUser("u1", billing.Defaults{MonthlyPoints: 100}, now)
	if err := store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	hold := func(id string, points int64, expires time.Time) {
		t.Helper()
		c := billing.Charge{Period: u.PeriodStart, Points: points, Opens: id,
			Hold: billing.Hold{Period: u.PeriodStart, Points: points, Expires: expires}}
		if err := store.Charge(ctx, "u1", c); err != nil {
			t.Fatal(err)
		}
	}
	hold("expired", 4, now.Add(-time.Minute))
	hold("running", 2, now.Add(time.Hour))

	env := append(awsEnv(motoCreds, endpoint),
		"SECUREAI_TABLE_API_KEYS="+tables.APIKeys, // every function's (Globals), unused here
		"SECUREAI_TABLE_USERS="+tables.Users,
	)
	bins := <-built
	if bins == nil {
		t.FailNow()
	}
	scheduled, err := os.ReadFile(filepath.Join(root, "events", "refund-sweep-scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}
	l := testenv.StartLambda(t, bins["refund-sweep"], env...)
	for run := 1; run <= 2; run++ {
		if out := l.Invoke(t, scheduled); string(out) != "null" {
			t.Fatalf("run %d answered %s, want null (no error)\n%s", run, out, l.Output())
		}
		got, err := store.User(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if _, kept := got.Holds["running"]; got.PointsUsed != 2 || len(got.Holds) != 1 || !kept {
			t.Errorf("after run %d: %d points used, holds %v; want 2, only the running one\n%s", run, got.PointsUsed, got.Holds, l.Output())
		}
	}
}
