package cloud_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
	"github.com/secureai-gateway/gateway/internal/testkit/testenv"
)

// features reports which of the optional features deps has on.
func features(d gateway.Deps) map[string]bool {
	return map[string]bool{
		"Limits": d.Limits != nil, "Billing": d.Billing != nil, "KeyAdmin": d.KeyAdmin != nil,
		"Breakers": d.Breakers != nil, "Receipts": d.Receipts != nil, "Signer": d.Signer != nil,
		"Webhooks": d.Webhooks != nil, "Idempotency": d.Idempotency != nil,
	}
}

// A function has exactly the features its environment names — so its IAM policy can grant
// exactly those — and all of them, as the local server does, when it names everything.
func TestGatewayDepsTurnsOnWhatTheEnvironmentNames(t *testing.T) {
	newFixture(t)
	ctx := context.Background()
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	tables := dynamostore.Tables{APIKeys: testenv.UniqueName(t, "keys2"), Limits: testenv.UniqueName(t, "limits"), Users: testenv.UniqueName(t, "users"),
		Receipts: testenv.UniqueName(t, "receipts"), CircuitBreakers: testenv.UniqueName(t, "breakers"),
		Webhooks: testenv.UniqueName(t, "wh"), WebhookAttempts: testenv.UniqueName(t, "wha"), Audit: testenv.UniqueName(t, "audit")}
	if err := dynamostore.CreateTables(ctx, dynamodb.NewFromConfig(cfg), tables); err != nil {
		t.Fatal(err)
	}
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ks)
	sm := secretsmanager.NewFromConfig(cfg)
	signingSecret, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(testenv.UniqueName(t, "signing")), SecretString: aws.String(string(raw))})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		"SECUREAI_TABLE_LIMITS": tables.Limits, "SECUREAI_TABLE_USERS": tables.Users, "SECUREAI_TABLE_RECEIPTS": tables.Receipts,
		"SECUREAI_TABLE_CIRCUIT_BREAKERS": tables.CircuitBreakers, "SECUREAI_TABLE_WEBHOOKS": tables.Webhooks,
		"SECUREAI_TABLE_WEBHOOK_ATTEMPTS": tables.WebhookAttempts, "SECUREAI_TABLE_AUDIT": tables.Audit,
		"SECUREAI_SIGNING_SECRET_ARN": aws.ToString(signingSecret.ARN), "SECUREAI_EVENT_BUS": "the-bus",
	}

	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"nothing but keys and idempotency", nil, []string{"Idempotency"}},
		{"a chat function", []string{"SECUREAI_TABLE_LIMITS", "SECUREAI_TABLE_USERS", "SECUREAI_TABLE_RECEIPTS",
			"SECUREAI_TABLE_CIRCUIT_BREAKERS", "SECUREAI_SIGNING_SECRET_ARN", "SECUREAI_EVENT_BUS"},
			[]string{"Idempotency", "Limits", "Billing", "KeyAdmin", "Breakers", "Receipts", "Signer"}},
		{"jwks", []string{"SECUREAI_SIGNING_SECRET_ARN"}, []string{"Idempotency", "Signer"}},
		{"webhooks without the audit log", []string{"SECUREAI_TABLE_WEBHOOKS"}, []string{"Idempotency"}},
		{"everything", nil, []string{"Idempotency", "Limits", "Billing", "KeyAdmin", "Breakers", "Receipts", "Signer", "Webhooks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := tc.set
			if tc.name == "everything" {
				for k := range all {
					set = append(set, k)
				}
			}
			for k := range all {
				t.Setenv(k, "")
			}
			for _, k := range set {
				t.Setenv(k, all[k])
			}
			c, _ := load(t)
			d, err := c.GatewayDeps(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := features(d)
			for f, on := range got {
				if want := slices.Contains(tc.want, f); on != want {
					t.Errorf("%s on = %v, want %v", f, on, want)
				}
			}
			_, discards := c.Events.(event.Discard)
			if wantBus := slices.Contains(set, "SECUREAI_EVENT_BUS"); discards == wantBus {
				t.Errorf("events go to EventBridge = %v, want %v", !discards, wantBus)
			}
		})
	}
}

// The stack creates the signing secret holding no keyset; until the one-time rotate-signing-key,
// a function that signs fails its start with the command that fixes it.
func TestGatewayDepsNamesTheFixForAnEmptySigningSecret(t *testing.T) {
	newFixture(t)
	ctx := context.Background()
	cfg := testenv.AWSConfig(t, testenv.Moto(t))
	secret, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "signing")), SecretString: aws.String("{}")})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECUREAI_SIGNING_SECRET_ARN", aws.ToString(secret.ARN))
	c, _ := load(t)
	_, err = c.GatewayDeps(ctx)
	if err == nil || !strings.Contains(err.Error(), "rotate-signing-key -secret "+aws.ToString(secret.ARN)) {
		t.Errorf("error %v, want one naming `rotate-signing-key -secret %s`", err, aws.ToString(secret.ARN))
	}
}
