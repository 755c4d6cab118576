package cloud_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// firstRound records the AWS calls passing the proxy as "operation table-or-secret", and holds
// each call of the first round until all of them are in flight at once: a function that made one
// of them only after another had answered would wait on it until its deadline.
type firstRound struct {
	members func(call string) bool
	size    int

	mu      sync.Mutex
	calls   []string
	arrived int
	open    chan struct{}
}

func (f *firstRound) observe(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		TableName, SecretId string
		RequestItems        map[string]json.RawMessage
	}
	_ = json.Unmarshal(body, &in)
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	call := op + " " + in.TableName + in.SecretId
	for table := range in.RequestItems {
		call += table
	}
	f.mu.Lock()
	f.calls = append(f.calls, call)
	member := f.members(call) && f.arrived < f.size
	if member {
		if f.arrived++; f.arrived == f.size {
			close(f.open)
		}
	}
	f.mu.Unlock()
	if member {
		select {
		case <-f.open:
		case <-r.Context().Done():
		}
	}
}

func (f *firstRound) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// A cold function's first chat request reads its two secrets and its API key in one round (all
// three in flight at once, while the endpoint is built) and the key's and its user's breakers in
// one BatchGetItem: two sequential round trips before the first attempt, three with the admission
// (limits and quota) transaction of a function that has those tables.
func TestAColdRequestMakesTwoRoundTripsBeforeItsFirstAttempt(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	breakers := testenv.UniqueName(t, "breakers")
	if err := dynamostore.CreateTables(ctx, dynamodb.NewFromConfig(cfg), dynamostore.Tables{APIKeys: testenv.UniqueName(t, "k"), CircuitBreakers: breakers}); err != nil {
		t.Fatal(err)
	}
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ks)
	signingSecret, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "signing")), SecretString: aws.String(string(raw))})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECUREAI_DEMO", "true")
	t.Setenv("SECUREAI_TABLE_CIRCUIT_BREAKERS", breakers)
	t.Setenv("SECUREAI_SIGNING_SECRET_ARN", aws.ToString(signingSecret.ARN))
	c, _ := load(t)
	keys := c.Config.Tables.APIKeys
	round := &firstRound{size: 3, open: make(chan struct{}),
		members: func(call string) bool { return strings.HasPrefix(call, "GetSecretValue ") || call == "GetItem "+keys }}
	fx.proxy.Observe(round.observe)

	out, _ := invokeStream(t, openAIChat(c), fx.secret, `{"model":"demo/ok","stream":true,"messages":[{"role":"user","content":"Hello"}]}`, 20*time.Second)
	if !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("the first request did not succeed:\n%s", out)
	}
	got := round.recorded()
	if len(got) < 3 {
		t.Fatalf("calls %v", got)
	}
	first := slices.Sorted(slices.Values(got[:3]))
	want := []string{"GetItem " + keys, "GetSecretValue " + aws.ToString(signingSecret.ARN), "GetSecretValue " + c.Config.ProviderSecretARN}
	slices.Sort(want)
	if !slices.Equal(first, want) || !slices.Equal(got[3:], []string{"BatchGetItem " + breakers}) {
		t.Errorf("calls %v, want %v in one round, then one BatchGetItem of %s", got, want, breakers)
	}
}
