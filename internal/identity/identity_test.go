package identity_test

import (
	"context"
	"testing"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/identity"
)

func TestOutsideARequestNobodyCalls(t *testing.T) {
	ctx := context.Background()
	if identity.CallerOf(ctx) != nil || identity.Key(ctx) != nil || identity.RequestID(ctx) != "" {
		t.Errorf("a bare context carries a caller: %v %v %q", identity.CallerOf(ctx), identity.Key(ctx), identity.RequestID(ctx))
	}
}

func TestWithKeyAndWithRequestIDKeepTheOtherPart(t *testing.T) {
	k1, k2 := &apikey.Key{ID: "key_1"}, &apikey.Key{ID: "key_2"}
	ctx := identity.WithKey(identity.WithRequestID(context.Background(), "req_1"), k1)
	if identity.Key(ctx) != k1 || identity.RequestID(ctx) != "req_1" {
		t.Fatalf("WithKey after WithRequestID: %v %q", identity.Key(ctx), identity.RequestID(ctx))
	}
	inner := identity.WithRequestID(identity.WithKey(ctx, k2), "req_2")
	if identity.Key(inner) != k2 || identity.RequestID(inner) != "req_2" {
		t.Errorf("the innermost values: %v %q", identity.Key(inner), identity.RequestID(inner))
	}
	if identity.Key(ctx) != k1 || identity.RequestID(ctx) != "req_1" {
		t.Errorf("a derived context changed its parent: %v %q", identity.Key(ctx), identity.RequestID(ctx))
	}
}
