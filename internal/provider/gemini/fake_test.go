package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// fake is a Gemini API endpoint that records what it received and answers with the
// handler a test gives it.
type fake struct {
	*httptest.Server
	mu     sync.Mutex
	body   []byte
	header http.Header
	path   string
}

func newFake(t *testing.T, h http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.body, f.header, f.path = body, r.Header.Clone(), r.URL.Path
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) received() ([]byte, http.Header, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.body, f.header, f.path
}

func newAdapter(t *testing.T, f *fake) provider.Provider {
	t.Helper()
	p, err := New(provider.Config{Name: "gemini", Type: "gemini", BaseURL: f.URL, APIKey: testKey, Client: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const testKey = "AIzaSyTest-secret-key"

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// events splits an SSE fixture into its events, each with its blank-line terminator.
func events(t *testing.T, name string) []string {
	var out []string
	for _, e := range strings.SplitAfter(string(fixture(t, name)), "\r\n\r\n") {
		if strings.TrimSpace(e) != "" {
			out = append(out, e)
		}
	}
	return out
}

func serveJSON(t *testing.T, status int, name string, header ...string) http.HandlerFunc {
	body := fixture(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// serveSSE writes events one by one, flushing each, pausing delay before the first, then runs end
// (nil: a clean end of the response).
func serveSSE(evs []string, delay time.Duration, end func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i, e := range evs {
			if i == 1 && delay > 0 {
				time.Sleep(delay)
			}
			_, _ = io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
		if end != nil {
			end(w, r)
		}
	}
}

// cut drops the connection in the middle of a chunked body.
func cut(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }

// hang keeps the connection open and silent until the client leaves.
func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func resetBeforeHeaders(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// wantErr checks err against a failover reason, or a final error's code when reason is "".
func wantErr(t *testing.T, err error, reason chain.Reason, status int, code string) *provider.Error {
	t.Helper()
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *provider.Error", err, err)
	}
	if pe.Reason != reason || (status != 0 && pe.Status != status) || pe.Code != code {
		t.Fatalf("error = %+v, want reason %q status %d code %q", pe, reason, status, code)
	}
	if strings.Contains(pe.Error(), testKey) || strings.Contains(pe.Message, testKey) {
		t.Fatalf("error leaks the API key: %v", pe)
	}
	return pe
}

// drain reads a stream to its end, returning the chunks and the final error (io.EOF when clean).
func drain(t *testing.T, s provider.Stream) ([]provider.Chunk, error) {
	t.Helper()
	defer s.Close()
	var out []provider.Chunk
	for {
		c, err := s.Recv()
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
