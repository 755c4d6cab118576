package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// An OpenAI-compatible server that refuses the gateway's key quotes it back, as many do.
func TestRejectedCredentialIsNeverEchoed(t *testing.T) {
	const key = "sk-proj-the-gateways-own-secret"
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusBadRequest} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				w.WriteHeader(status)
				w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + got + `.","type":"invalid_request_error","code":"invalid_api_key"}}`))
			}))
			defer s.Close()
			p, err := New(provider.Config{Name: "groq", BaseURL: s.URL, APIKey: key, Client: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Complete(context.Background(), &provider.Request{Body: []byte(`{"model":"m","messages":[]}`), Model: "m"})
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(pe.Message, key) || strings.Contains(pe.Error(), key) {
				t.Fatalf("error echoes the provider credential: %+v", pe)
			}
			if status == http.StatusUnauthorized && (pe.Status != http.StatusBadGateway || pe.Type != "upstream_auth_error" || pe.Code != "" || pe.Reason != "") {
				t.Errorf("401 from the provider = %+v, want a final 502 upstream_auth_error, not the caller's invalid_api_key", pe)
			}
		})
	}
}

func TestNullErrorFieldInAChunkIsNoError(t *testing.T) {
	body := "data: {\"id\":\"c\",\"error\":null,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	s := newStream(io.NopCloser(strings.NewReader(body)))
	c, err := s.Recv()
	if err != nil || !c.Content {
		t.Fatalf("first chunk: %+v, %v; want content and no error", c, err)
	}
}
