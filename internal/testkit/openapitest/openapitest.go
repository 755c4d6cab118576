// Package openapitest holds the gateway to its published contract, docs/openapi.yaml, in tests:
// Handler wraps a test server's handler so that every request a test sends and every answer it
// gets is validated by kin-openapi's openapi3filter. A route, method or status the document lacks,
// a response whose headers or body do not match it, or a request the document refuses that the
// gateway served, fails the test that sent it.
//
// Streams are not buffered: an SSE answer is checked for its status, headers and content type.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/secureai-gateway/gateway/docs"
)

// maxCapture bounds the bytes of one request or response body kept for validation; a larger
// body (the size-limit tests send megabytes) is validated without its body.
const maxCapture = 1 << 20

// router is the document's router, loaded once per test binary. Its servers are dropped so that
// any test server's address matches.
var router = sync.OnceValues(func() (docRouter, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		return docRouter{}, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return docRouter{}, fmt.Errorf("docs/openapi.yaml is not valid: %w", err)
	}
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	return docRouter{r, doc}, err
})

// Handler returns h validated against docs/openapi.yaml; what does not match is reported as t's
// error when t ends (after the test's servers have closed, so no request is still running).
func Handler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	rt, err := router()
	if err != nil {
		t.Fatal(err)
	}
	c := &checker{}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, f := range c.failures {
			t.Errorf("docs/openapi.yaml: %s", f)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody := &capture{}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &teeBody{ReadCloser: r.Body, c: reqBody}
		}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			if r.Context().Err() != nil {
				return // the caller left before anything was answered
			}
			status = http.StatusOK // net/http's implicit answer
		}
		body, whole := reqBody.complete()
		resBody, resWhole := rec.body.complete()
		if err := rt.check(r, exchange{body, whole && reqBody.sawEOF(), status, rec.Header(), resBody, resWhole}); err != "" {
			c.fail(r, status, "%s", err)
		}
	})
}

// Check validates one finished exchange that went through no handler of this process (a Lambda
// function's event and its answer): r and its whole body, the answer's status, headers and body
// (nil to skip the body, as for a stream).
func Check(t testing.TB, r *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	rt, err := router()
	if err != nil {
		t.Fatal(err)
	}
	if msg := rt.check(r, exchange{reqBody, true, status, header, body, body != nil}); msg != "" {
		t.Errorf("docs/openapi.yaml: %s %s → %d: %s", r.Method, r.URL.RequestURI(), status, msg)
	}
}

// exchange is what check validates: a request body (whole or not) and an answer.
type exchange struct {
	reqBody      []byte
	reqWhole     bool
	status       int
	header       http.Header
	resBody      []byte
	resBodyWhole bool
}

type checker struct {
	mu       sync.Mutex
	failures []string
}

func (c *checker) fail(r *http.Request, status int, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf("%s %s → %d: %s", r.Method, r.URL.RequestURI(), status, fmt.Sprintf(format, args...)))
}

// docRouter finds a request's operation in the document.
type docRouter struct {
	routers.Router
	doc *openapi3.T
}

// check returns what in x the document does not describe, or "".
func (rt docRouter) check(r *http.Request, x exchange) string {
	if r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/") {
		// The web console: pages and a same-origin session for people, not an API for clients
		// (its calls reach the documented routes through its session), so not in the document.
		return ""
	}
	status := x.status
	// The validators read the request's URL, headers and body; give them a copy whose body is
	// what the handler read.
	vr := r.Clone(context.Background())
	vr.Body = http.NoBody
	route, params, err := rt.FindRoute(vr)
	if err != nil {
		var re *routers.RouteError
		if errors.As(err, &re) && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) {
			return "" // the gateway refuses what the document lacks
		}
		return fmt.Sprintf("the route is not in the document (%v)", err)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc, // the gateway's own job; its 401/403 are checked below
		IncludeResponseStatus: true,
		MultiError:            false,
	}
	in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: opts}
	if x.reqWhole && len(x.reqBody) > 0 {
		vr.Body = io.NopCloser(bytes.NewReader(x.reqBody))
		vr.ContentLength = int64(len(x.reqBody))
		// The gateway reads a JSON body whatever its Content-Type says (curl -d sends a form type).
		vr.Header.Set("Content-Type", "application/json")
	} else {
		reqOpts := *opts
		reqOpts.ExcludeRequestBody = true
		in.Options = &reqOpts
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && status < 300 {
		return fmt.Sprintf("the document refuses this request, which the gateway served: %v", err)
	}

	resOpts := *opts
	if isStream(x.header) || !x.resBodyWhole {
		resOpts.ExcludeResponseBody = true
	}
	res := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: x.header, Options: &resOpts}
	res.SetBodyBytes(x.resBody)
	if err := openapi3filter.ValidateResponse(context.Background(), res); err != nil {
		return fmt.Sprintf("the response does not match the document: %v\nbody: %.2000s", err, x.resBody)
	}
	return ""
}

func isStream(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
}

// capture keeps the first maxCapture bytes that pass through it and whether it saw the end.
type capture struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	overflow bool
	eof      bool
}

func (c *capture) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.overflow || c.buf.Len()+len(p) > maxCapture {
		c.overflow = true
		return
	}
	c.buf.Write(p)
}

// complete is the body and whether it is all there.
func (c *capture) complete() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Bytes(), !c.overflow
}

// sawEOF reports whether the handler read the body to its end.
func (c *capture) sawEOF() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eof
}

// teeBody records what the handler reads of a request body.
type teeBody struct {
	io.ReadCloser
	c *capture
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.write(p[:n])
	if err == io.EOF {
		b.c.mu.Lock()
		b.c.eof = true
		b.c.mu.Unlock()
	}
	return n, err
}

// recorder passes a response through and keeps its status and (bounded, non-stream) body.
type recorder struct {
	http.ResponseWriter
	status int
	body   capture
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if isStream(w.Header()) {
		w.body.overflow = true // a stream is never buffered
	} else {
		w.body.write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Flush and Unwrap keep streaming and http.ResponseController working through the recorder.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
