package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/messagesapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// TestEveryKindOnEverySurface walks every error kind through the OpenAI (chat and Responses), the
// Anthropic and the classic envelope
// and checks the status against SPEC section 11 and each surface's error shape.
func TestEveryKindOnEverySurface(t *testing.T) {
	// SPEC 11, plus the statuses the contract names elsewhere (402 quota, 409/422 idempotency,
	// 413, 501 without an idempotency store).
	spec := map[fault.Kind]int{
		fault.Internal: 500, fault.InvalidRequest: 400, fault.Unauthenticated: 401, fault.Forbidden: 403,
		fault.NotFound: 404, fault.MethodNotAllowed: 405, fault.Conflict: 409, fault.Unprocessable: 422,
		fault.TooLarge: 413, fault.RequestTimeout: 408, fault.RateLimited: 429, fault.QuotaExceeded: 402,
		fault.ChainExhausted: 502, fault.ChainRateLimited: 429, fault.UpstreamRejected: 400,
		fault.Interrupted: 502, fault.UpstreamAuth: 502, fault.ModelUnavailable: 503, fault.CircuitOpen: 503,
		fault.Unavailable: 503, fault.NotImplemented: 501, fault.Canceled: 499,
	}
	// SPEC 11's x-should-retry on /v1: "false" where a retry cannot help, "true" where it can
	// (every kind here says when: Retry-After 1.5 s), none for an unexpected failure or a kind
	// that is never sent as a status.
	shouldRetry := map[fault.Kind]string{
		fault.InvalidRequest: "false", fault.Unauthenticated: "false", fault.Forbidden: "false", fault.NotFound: "false",
		fault.MethodNotAllowed: "false", fault.Unprocessable: "false", fault.TooLarge: "false", fault.QuotaExceeded: "false",
		fault.UpstreamRejected: "false", fault.UpstreamAuth: "false", fault.ModelUnavailable: "false", fault.NotImplemented: "false",
		fault.Conflict: "true", fault.RequestTimeout: "true", fault.RateLimited: "true", fault.ChainRateLimited: "true",
		fault.ChainExhausted: "false", fault.Unavailable: "true", fault.CircuitOpen: "true",
	}
	// Anthropic's types and statuses on /v1/messages: the same statuses but an exhausted chain's,
	// which is Anthropic's 529 overloaded_error.
	anthropicTypes := map[fault.Kind]string{
		fault.InvalidRequest: "invalid_request_error", fault.Unauthenticated: "authentication_error",
		fault.Forbidden: "permission_error", fault.NotFound: "not_found_error", fault.TooLarge: "request_too_large",
		fault.RateLimited: "rate_limit_error", fault.ChainRateLimited: "rate_limit_error", fault.QuotaExceeded: "billing_error",
		fault.ChainExhausted: "overloaded_error", fault.Internal: "api_error", fault.Unavailable: "api_error",
	}
	attempts := []chain.Attempt{{Model: "a/x", Status: chain.Failed, Reason: chain.ServerError, LatencyMS: 3}}
	for _, k := range fault.Kinds() {
		want, ok := spec[k]
		if !ok {
			t.Errorf("kind %v has no status in the contract table of this test", k)
			continue
		}
		err := &chain.Stopped{Err: fault.New(k, "", "what went wrong").WithCode("some_code").WithRetryAfter(1500 * time.Millisecond), Attempts: attempts}
		req := httptest.NewRequest("POST", "/", nil)
		req = req.WithContext(identity.WithRequestID(req.Context(), "req_1"))

		t.Run("openai/"+k.String(), func(t *testing.T) {
			rec := httptest.NewRecorder()
			openaiapi.Render(rec, req, err)
			var body struct {
				Error struct {
					Message  string          `json:"message"`
					Type     string          `json:"type"`
					Param    *string         `json:"param"`
					Code     *string         `json:"code"`
					Attempts []chain.Attempt `json:"attempts"`
				} `json:"error"`
			}
			check(t, rec, want, &body)
			if got, want := rec.Header().Get("X-Should-Retry"), shouldRetry[k]; got != want {
				t.Errorf("x-should-retry %q, want %q", got, want)
			}
			if body.Error.Message != "what went wrong" || body.Error.Type == "" || body.Error.Code == nil || *body.Error.Code != "some_code" || len(body.Error.Attempts) != 1 {
				t.Errorf("OpenAI envelope = %s", rec.Body)
			}
		})
		t.Run("messages/"+k.String(), func(t *testing.T) {
			rec := httptest.NewRecorder()
			messagesapi.Render(rec, req, err)
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type     string          `json:"type"`
					Message  string          `json:"message"`
					Attempts []chain.Attempt `json:"attempts"`
				} `json:"error"`
			}
			status := want
			if k == fault.ChainExhausted {
				status = messagesapi.StatusOverloaded
			}
			check(t, rec, status, &body)
			if got, want := rec.Header().Get("X-Should-Retry"), shouldRetry[k]; got != want {
				t.Errorf("x-should-retry %q, want %q", got, want)
			}
			if body.Type != "error" || body.Error.Message != "what went wrong" || body.Error.Type == "" || len(body.Error.Attempts) != 1 {
				t.Errorf("Anthropic envelope = %s", rec.Body)
			}
			if typ, ok := anthropicTypes[k]; ok && body.Error.Type != typ {
				t.Errorf("error type %q, want %q", body.Error.Type, typ)
			}
		})
		t.Run("classic/"+k.String(), func(t *testing.T) {
			rec := httptest.NewRecorder()
			classicapi.Render(rec, req, err)
			var body struct {
				Success   *bool           `json:"success"`
				Error     string          `json:"error"`
				Message   string          `json:"message"`
				RequestID string          `json:"request_id"`
				Attempts  []chain.Attempt `json:"attempts"`
			}
			check(t, rec, want, &body)
			if body.Success == nil || *body.Success || body.Error == "" || body.Message != "what went wrong" || body.RequestID != "req_1" || len(body.Attempts) != 1 {
				t.Errorf("classic envelope = %s", rec.Body)
			}
		})
	}
}

// An all-rate-limited chain tells a client to come back only when a provider said when; an
// exhausted chain never (the gateway has tried every model already).
func TestAnExhaustedChainIsNotRetriedWithoutRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		kind  fault.Kind
		after time.Duration
		want  string
	}{
		{fault.ChainRateLimited, 0, "false"}, {fault.ChainRateLimited, 2 * time.Second, "true"},
		{fault.ChainExhausted, 0, "false"}, {fault.ChainExhausted, 2 * time.Second, "false"},
	} {
		for _, render := range []func(http.ResponseWriter, *http.Request, error){openaiapi.Render, messagesapi.Render} {
			rec := httptest.NewRecorder()
			render(rec, httptest.NewRequest("POST", "/", nil), fault.New(tc.kind, "", "all failed").WithRetryAfter(tc.after))
			if got := rec.Header().Get("X-Should-Retry"); got != tc.want {
				t.Errorf("%v with Retry-After %v: x-should-retry %q, want %q", tc.kind, tc.after, got, tc.want)
			}
		}
	}
}

// A configuration error (a role that lacks a permission) tells OpenAI's SDKs not to retry.
func TestAConfigurationErrorIsNotRetried(t *testing.T) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", nil)
	openaiapi.Render(rec, req, fault.New(fault.Internal, "Configuration error", "misconfigured").WithCode(fault.CodeConfiguration))
	if rec.Code != 500 || rec.Header().Get("X-Should-Retry") != "false" {
		t.Errorf("status %d, x-should-retry %q; want 500 and false", rec.Code, rec.Header().Get("X-Should-Retry"))
	}
}

func check(t *testing.T, rec *httptest.ResponseRecorder, status int, body any) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status %d, want %d", rec.Code, status)
	}
	if rec.Header().Get("Retry-After") != "2" {
		t.Errorf("Retry-After = %q, want 2 (1.5 s rounded up)", rec.Header().Get("Retry-After"))
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), body); err != nil {
		t.Fatalf("not JSON: %v: %s", err, rec.Body)
	}
}

// TestProviderRefusalKeepsItsStatus: a provider's own 4xx reaches the caller as that 4xx.
func TestProviderRefusalKeepsItsStatus(t *testing.T) {
	rec := httptest.NewRecorder()
	openaiapi.Render(rec, httptest.NewRequest("POST", "/", nil), &fault.Error{K: fault.UpstreamRejected, Message: "too long", Status: http.StatusRequestEntityTooLarge})
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want the provider's 413", rec.Code)
	}
}
