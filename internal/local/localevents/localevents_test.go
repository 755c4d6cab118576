package localevents_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/local/localevents"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// A failover published on the local server reaches a subscribed receiver, signed, and the audit
// log, through the same consumers the cloud runs.
func TestAPublishedFailoverReachesTheReceiverAndTheAuditLog(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p := localevents.New(store, webhook.ReachLoopback, slog.New(slog.NewTextHandler(io.Discard, nil)))

	var mu sync.Mutex
	var verified []string
	var secret string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil || wh.Verify(body, r.Header) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		verified = append(verified, r.Header.Get("X-SecureAI-Event"))
	}))
	defer receiver.Close()
	ctx := context.Background()
	url, evs := receiver.URL, []string{"api:model_failover"}
	ep, err := webhook.Create(ctx, webhook.Input{URL: &url, Events: &evs}, p.Guard, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret = ep.Secret
	if err := store.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	p.Publisher.Publish(ctx, event.ModelFailoverEvent(event.Failover{FailedModel: "demo/error-500", Reason: "server_error",
		NextModel: "demo/ok", Subject: event.Subject{APIKeyID: "key_1"}}, now))
	if err := p.Publisher.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Worker.RunDue(ctx)

	mu.Lock()
	got := verified
	mu.Unlock()
	if len(got) != 1 || got[0] != "api:model_failover" {
		t.Fatalf("receiver verified %v", got)
	}
	q, _ := audit.Parse(audit.Params{APIKeyID: "key_1"}, time.Now().Add(time.Second))
	page, err := p.Audit.Query(ctx, q)
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Type != event.ModelFailover {
		t.Fatalf("audit = %+v, %v", page, err)
	}
}
