// Package providertest is the test support the provider adapters share: a fake upstream that
// records what it received, the faults a provider can show (throttling, failure, a reset, a hang,
// a slow, cut, malformed or unterminated stream), each provider's wire format for them, and the
// assertions every adapter's tests make.
package providertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is a fake provider endpoint that records what it received and answers with the handler
// a test gives it.
type Server struct {
	*httptest.Server
	calls   atomic.Int64
	mu      sync.Mutex
	handler http.HandlerFunc
	body    []byte
	header  http.Header
	path    string
}

// New starts a fake answering with h; it stops when the test ends.
func New(t testing.TB, h http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{handler: h}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body)) // the handler may read it again
		s.calls.Add(1)
		s.mu.Lock()
		s.body, s.header, s.path = body, r.Header.Clone(), r.URL.EscapedPath()
		h := s.handler
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Handle replaces the handler, for a test that runs several cases against one server.
func (s *Server) Handle(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Received returns the last request's body, header and escaped path.
func (s *Server) Received() ([]byte, http.Header, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body, s.header, s.path
}

// Calls counts the requests the server has received.
func (s *Server) Calls() int { return int(s.calls.Load()) }
