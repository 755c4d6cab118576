// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes each export with the
// OpenTelemetry protocol's own protobuf types, as a collector does, and keeps the spans.
package otlptest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver serves POST /v1/traces on a loopback address until the test ends.
type Receiver struct {
	URL string // the base URL: what OTEL_EXPORTER_OTLP_ENDPOINT names

	mu       sync.Mutex
	spans    []*tracev1.Span
	requests []Request
}

// Request is one export as received: what a test checks a signature or a header on.
type Request struct {
	Host   string
	Header http.Header
	Body   []byte // as sent (compressed when the exporter compresses)
}

// New starts a receiver.
func New(t testing.TB) *Receiver {
	rc := &Receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	raw, err := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.requests = append(rc.requests, Request{Host: r.Host, Header: r.Header.Clone(), Body: raw})
	rc.mu.Unlock()
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns every span received so far.
func (rc *Receiver) Spans() []*tracev1.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracev1.Span(nil), rc.spans...)
}

// Requests returns every export received so far, decodable or not.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.requests...)
}

// Named returns the spans received so far with that name.
func (rc *Receiver) Named(name string) []*tracev1.Span {
	var out []*tracev1.Span
	for _, s := range rc.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Attrs returns a span's attributes by key.
func Attrs(s *tracev1.Span) map[string]*commonv1.AnyValue {
	m := map[string]*commonv1.AnyValue{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}
