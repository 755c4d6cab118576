package dynamostore_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/testkit/testenv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/idempotency"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/storetest"
)

func TestIdempotencyContract(t *testing.T) {
	// Concurrent cases: moto served single-threaded, whose writes are atomic as DynamoDB's.
	client := dynamodb.NewFromConfig(testenv.AWSConfig(t, testenv.MotoSerial(t)))
	storetest.RunIdempotency(t, func(t *testing.T) idempotency.Store {
		return newStore(t, client)
	})
}

// sseBody is a long stream's body as the classic endpoint records it: many small frames.
func sseBody(size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token %d \"}}]}\n\n", i)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func claimOwned(t *testing.T, s idempotency.Store, key, token string, now time.Time) {
	t.Helper()
	c, err := s.Claim(context.Background(), "key_1", key, idempotency.Pending{
		RequestHash: "h", Token: token, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || c.State != idempotency.Owned {
		t.Fatalf("Claim(%s) = %v, %v; want Owned", key, c.State, err)
	}
}

// A stream far over DynamoDB's 400 KB item limit is stored compressed and replayed byte for byte.
func TestIdempotencyLongStreamIsCompressed(t *testing.T) {
	client := newClient(t)
	s, tables := newStoreTables(t, client)
	ctx := context.Background()
	now := time.Now()
	body := sseBody(2 << 20)
	claimOwned(t, s, "long", "t1", now)
	rec := idempotency.Record{RequestHash: "h", Status: 200, ContentType: "text/event-stream", Body: body,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.Complete(ctx, "key_1", "long", "t1", rec); err != nil {
		t.Fatalf("Complete with a %d-byte stream: %v", len(body), err)
	}
	c, err := s.Claim(ctx, "key_1", "long", idempotency.Pending{RequestHash: "h", Token: "t2", Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || c.State != idempotency.Completed || c.Record == nil {
		t.Fatalf("Claim after Complete = %+v, %v; want Completed", c, err)
	}
	if !bytes.Equal(c.Record.Body, body) {
		t.Errorf("replayed body is %d bytes, want the %d recorded", len(c.Record.Body), len(body))
	}

	// The item itself holds gzip, expires through the table's TTL attribute, and fits.
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Idempotency),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "5:key_1:long"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem: %v (item %v)", err, out.Item)
	}
	if enc, ok := out.Item["bodyEncoding"].(*types.AttributeValueMemberS); !ok || enc.Value != "gzip" {
		t.Errorf("bodyEncoding = %#v, want gzip", out.Item["bodyEncoding"])
	}
	if b, ok := out.Item["body"].(*types.AttributeValueMemberB); !ok || len(b.Value) >= dynamostore.MaxItemBytes {
		t.Errorf("body attribute = %T of %d bytes, want binary under the item limit", out.Item["body"], len(b.Value))
	}
	if ttl, ok := out.Item[dynamostore.TTLAttribute].(*types.AttributeValueMemberN); !ok ||
		ttl.Value != fmt.Sprint(rec.ExpiresAt.Add(time.Second-1).Unix()) {
		t.Errorf("ttl attribute = %#v, want the expiry in seconds, rounded up", out.Item[dynamostore.TTLAttribute])
	}
}

// A body that cannot be squeezed under the limit is refused with a typed error, and the key is
// released so a retry runs instead of waiting for the lease to run out — also when the release's
// first answer was lost and the SDK's retry found the key already free (the store answers that
// not-owner, as for any absent key).
func TestIdempotencyRecordTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose *losingTransport
	}{
		{"released", nil},
		{"the release's answer lost", &losingTransport{op: "DeleteItem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newClient(t)
			if tc.lose != nil {
				cfg := testenv.AWSConfig(t, testenv.MotoSerial(t))
				cfg.HTTPClient = &http.Client{Transport: tc.lose}
				db = dynamodb.NewFromConfig(cfg)
			}
			s := newStore(t, db)
			ctx := context.Background()
			now := time.Now()
			body := make([]byte, dynamostore.MaxItemBytes+1)
			_, _ = rand.Read(body) // random bytes do not compress
			claimOwned(t, s, "huge", "t1", now)
			err := s.Complete(ctx, "key_1", "huge", "t1", idempotency.Record{RequestHash: "h", Status: 200,
				ContentType: "text/event-stream", Body: body, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
			var tooLarge *dynamostore.RecordTooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Key != "huge" || tooLarge.Size <= dynamostore.MaxItemBytes {
				t.Fatalf("Complete with %d random bytes = %v, want a *RecordTooLargeError", len(body), err)
			}
			if tc.lose != nil && !tc.lose.lost {
				t.Fatal("no answer was lost: the test did not run the retry")
			}
			claimOwned(t, s, "huge", "t2", now)
		})
	}
}

// An expired record DynamoDB has not deleted yet (moto never does) is overwritten by the next
// claim, judged to the nanosecond rather than at the TTL attribute's whole seconds.
func TestIdempotencyExpiryIsExact(t *testing.T) {
	s := newStore(t, newClient(t))
	ctx := context.Background()
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 250_000_000, time.UTC)
	claimOwned(t, s, "k", "t1", t0)
	if err := s.Complete(ctx, "key_1", "k", "t1", idempotency.Record{RequestHash: "h", Status: 200,
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration, token string) idempotency.State {
		now := t0.Add(d)
		c, err := s.Claim(ctx, "key_1", "k", idempotency.Pending{RequestHash: "h", Token: token, Now: now, LeaseUntil: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return c.State
	}
	if got := at(time.Hour-time.Nanosecond, "t2"); got != idempotency.Completed {
		t.Errorf("a nanosecond before expiry: state %v, want Completed", got)
	}
	if got := at(time.Hour, "t3"); got != idempotency.Owned {
		t.Errorf("at expiry (same TTL second): state %v, want Owned", got)
	}
}

// losingTransport sends the call op (PutItem when "") after the first skip ones and then loses
// its answer, as a connection reset after the request reached DynamoDB would: the SDK retries it.
type losingTransport struct {
	mu   sync.Mutex
	op   string
	skip int
	lost bool
}

func (l *losingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && !l.lost && r.Header.Get("X-Amz-Target") == "DynamoDB_20120810."+cmp.Or(l.op, "PutItem") {
		if l.skip > 0 {
			l.skip--
			return res, err
		}
		l.lost = true
		res.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return res, err
}

// A claim whose put succeeded but whose answer was lost is still the claimant's: the SDK's retry
// is refused by the item the first try wrote, and that item carries the claim's own token.
func TestAClaimWhoseAnswerWasLostIsOwned(t *testing.T) {
	lose := &losingTransport{}
	cfg := testenv.AWSConfig(t, testenv.MotoSerial(t))
	cfg.HTTPClient = &http.Client{Transport: lose}
	s := newStore(t, dynamodb.NewFromConfig(cfg))
	now := time.Now()
	c, err := s.Claim(context.Background(), "k1", "a", idempotency.Pending{RequestHash: "h", Token: "t1", Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || c.State != idempotency.Owned {
		t.Fatalf("Claim = %+v, %v; want Owned", c, err)
	}
	if !lose.lost {
		t.Fatal("no answer was lost: the test did not run the retry")
	}
	// Another claimant still finds it held.
	c, err = s.Claim(context.Background(), "k1", "a", idempotency.Pending{RequestHash: "h", Token: "t2", Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || c.State != idempotency.InProgress {
		t.Fatalf("a second claimant: %+v, %v; want InProgress", c, err)
	}
}

// A record whose put succeeded but whose answer was lost is completed: the SDK's retry is refused
// by the record the first try wrote, which carries the claim's token.
func TestACompleteWhoseAnswerWasLostSucceeds(t *testing.T) {
	lose := &losingTransport{skip: 1} // the claim's put goes through
	cfg := testenv.AWSConfig(t, testenv.MotoSerial(t))
	cfg.HTTPClient = &http.Client{Transport: lose}
	s := newStore(t, dynamodb.NewFromConfig(cfg))
	now := time.Now()
	ctx := context.Background()
	if c, err := s.Claim(ctx, "k1", "a", idempotency.Pending{RequestHash: "h", Token: "t1", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil || c.State != idempotency.Owned {
		t.Fatalf("Claim = %+v, %v; want Owned", c, err)
	}
	rec := idempotency.Record{RequestHash: "h", Status: 200, ContentType: "application/json", Body: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.Complete(ctx, "k1", "a", "t1", rec); err != nil {
		t.Fatalf("Complete: %v, want nil", err)
	}
	if !lose.lost {
		t.Fatal("no answer was lost: the test did not run the retry")
	}
	if c, err := s.Claim(ctx, "k1", "a", idempotency.Pending{RequestHash: "h", Token: "t2", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil || c.State != idempotency.Completed {
		t.Fatalf("a later claim: %+v, %v; want Completed", c, err)
	}
	// A superseded claimant is still refused.
	if err := s.Complete(ctx, "k1", "a", "t9", rec); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Fatalf("Complete by another token: %v, want ErrNotOwner", err)
	}
}
