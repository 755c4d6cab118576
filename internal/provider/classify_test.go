package provider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/inlinetransport"
)

// A TLS handshake that never completes is a TLS failure (connection_error), not the attempt
// passing its timeout_ms: a request whose `on` lists only connection_error must fail over on it,
// and the report must not call it a timeout.
func TestTLSHandshakeTimeoutIsAConnectionError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never answers the handshake
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr := NewHTTPClient().Transport.(*inlinetransport.Transport)
	tr.TLSHandshakeTimeout = 50 * time.Millisecond
	c := &HTTPCaller{Client: &http.Client{Transport: tr},
		InvalidURL:  func(err error) *Error { return &Error{Message: "invalid", Err: err} },
		StatusError: func(int, []byte) *Error { return &Error{} }}
	_, err = c.Post(context.Background(), "https://"+ln.Addr().String()+"/v1/chat/completions", []byte(`{}`), nil, nil)
	var pe *Error
	if !errors.As(err, &pe) || pe.Reason != chain.ConnectionError {
		t.Fatalf("err = %#v, want a connection_error", err)
	}
}

func TestReasonForStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   chain.Reason
	}{
		{"3.3 429 is rate_limit", 429, chain.RateLimit},
		{"3.3 500 is server_error", 500, chain.ServerError},
		{"3.3 503 is server_error", 503, chain.ServerError},
		{"3.3 Anthropic's 529 is server_error", 529, chain.ServerError},
		{"3.3 400 is final", 400, ""},
		{"3.3 404 is final", 404, ""},
		{"3.3 408 is a 4xx other than 429: final", 408, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReasonForStatus(tc.status); got != tc.want {
				t.Errorf("ReasonForStatus(%d) = %q, want %q", tc.status, got, tc.want)
			}
		})
	}
}
