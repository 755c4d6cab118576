package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/tracing/otlptest"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: "session"}

// An export to X-Ray's OTLP endpoint carries a SigV4 signature for the xray service in the
// function's region, over the body as sent: recomputed from what the receiver got, it matches.
func TestOTLPExportsAreSignedForXRay(t *testing.T) {
	rc := otlptest.New(t)
	tr, err := New(context.Background(), Config{OTLP: true, Endpoint: rc.URL + "/v1/traces", SigV4: true, Region: "eu-west-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return testCreds, nil })})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Attempt(context.Background(), completion.AttemptStart{Model: "demo/ok", Wire: "openai"})
	span.End(completion.AttemptEnd{Line: chain.Attempt{Model: "demo/ok", Status: chain.Served}})
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rc.Named("chat demo/ok"); len(got) != 1 || otlptest.Attrs(got[0])[AttrRequestModel].GetStringValue() != "demo/ok" {
		t.Fatalf("received %d attempt spans, want the one, with its GenAI attributes", len(got))
	}
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d exports, want 1", len(reqs))
	}
	got := reqs[0]
	auth := got.Header.Get("Authorization")
	date := got.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"+date[:8]+"/eu-west-1/xray/aws4_request") ||
		got.Header.Get("X-Amz-Security-Token") != "session" {
		t.Fatalf("Authorization %q, X-Amz-Date %q, token %q; want a SigV4 signature for xray in eu-west-1",
			auth, date, got.Header.Get("X-Amz-Security-Token"))
	}

	// Sign again what arrived, with only the headers the signature named: the same signature.
	signedHeaders := auth[strings.Index(auth, "SignedHeaders=")+len("SignedHeaders="):]
	signedHeaders = signedHeaders[:strings.Index(signedHeaders, ",")]
	again, err := http.NewRequest(http.MethodPost, rc.URL+"/v1/traces", strings.NewReader(string(got.Body)))
	if err != nil {
		t.Fatal(err)
	}
	again.Host = got.Host
	for _, h := range strings.Split(signedHeaders, ";") {
		if h != "host" && h != "content-length" {
			again.Header.Set(h, got.Header.Get(h))
		}
	}
	again.Header.Del("X-Amz-Date")
	again.Header.Del("X-Amz-Security-Token")
	at, err := time.Parse("20060102T150405Z", date)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(got.Body)
	if err := v4.NewSigner().SignHTTP(context.Background(), testCreds, again, hex.EncodeToString(sum[:]), "xray", "eu-west-1", at); err != nil {
		t.Fatal(err)
	}
	if again.Header.Get("Authorization") != auth {
		t.Errorf("signature over the received export:\n%s\nwant the one sent:\n%s", again.Header.Get("Authorization"), auth)
	}
}

// Signing without credentials is a configuration error at start, not a silent unsigned export.
func TestSigningNeedsCredentials(t *testing.T) {
	if _, err := New(context.Background(), Config{OTLP: true, Endpoint: "http://127.0.0.1:1/v1/traces", SigV4: true, Region: "eu-west-1"}); err == nil {
		t.Error("New signed without credentials: no error")
	}
}
