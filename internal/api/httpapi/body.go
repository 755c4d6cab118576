package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/tidwall/gjson"
)

// ReadJSONObject reads a request body of at most limit bytes that must be a JSON object. Under
// BodyLimits (the local server) the body's bytes are first reserved from the in-flight budget and
// must arrive by the read deadline: 503 and 408 otherwise. Behind Idempotent, it returns the body
// Idempotent read.
func ReadJSONObject(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if body, ok := r.Context().Value(bodyKey{}).([]byte); ok {
		return body, nil // read and checked already, by Idempotent
	}
	if r.ContentLength > limit { // refused before a byte is read or reserved
		return nil, tooLarge(limit)
	}
	size := limit // a chunked body may grow to the limit
	if r.ContentLength >= 0 {
		size = r.ContentLength
	}
	t := ticketOf(r.Context())
	if err := t.reserve(r.Context(), size); err != nil {
		return nil, err
	}
	body, err := readBody(w, r, limit)
	if err == nil {
		t.bodyIn()
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fault.New(fault.RequestTimeout, "Request timeout",
			"the request body did not arrive in time; send it whole without pausing").WithCode("request_timeout")
	case err != nil:
		return nil, fault.Invalid("", "could not read the request body")
	case !gjson.ValidBytes(body) || !gjson.Parse(jsonview.String(body)).IsObject():
		return nil, notOneObject(body)
	}
	if err := checkText(body); err != nil {
		return nil, err
	}
	if dup := duplicateKey(body); dup != "" {
		return nil, fault.Invalid(dup, fmt.Sprintf("field %q appears more than once", dup))
	}
	return body, nil
}

// notOneObject explains why body is not one JSON object; it runs only for a refused body.
func notOneObject(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	var first json.RawMessage
	if dec.Decode(&first) == nil && gjson.ParseBytes(first).IsObject() {
		return fault.Invalid("", fmt.Sprintf("request body must be one JSON object: unexpected data after it at byte %d", dec.InputOffset()))
	}
	return fault.Invalid("", "request body must be a JSON object")
}

func tooLarge(limit int64) error {
	return fault.New(fault.TooLarge, "Request too large", fmt.Sprintf("request body exceeds %d bytes", limit)).WithCode("request_too_large")
}

// readBody reads the whole body into one buffer: exactly its Content-Length when the client sent
// one (io.ReadAll would grow through a dozen doublings, twice the body in garbage), else growing.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	src := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength < 0 {
		return io.ReadAll(src)
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(src, body); err != nil {
		return nil, err
	}
	// Reach EOF: the server watches for the caller's disconnect only once the body is consumed.
	if _, err := src.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return body, nil
}

// duplicateKey returns a top-level field that appears twice. Parsers disagree on which copy wins
// (the gateway reads the first, a provider's decoder may keep the last), so a body with both
// could be checked against one model and sent to another.
func duplicateKey(body []byte) string {
	var keys [32]string
	seen := keys[:0]
	dup := ""
	gjson.Parse(jsonview.String(body)).ForEach(func(k, _ gjson.Result) bool {
		for _, s := range seen {
			if s == k.Str {
				dup = strings.Clone(k.Str)
				return false
			}
		}
		seen = append(seen, k.Str)
		return true
	})
	return dup
}

// WithBudget bounds every request to budget, the local stand-in for a Lambda's deadline: the
// failover chain never outlives it. A budget <= 0 sets no deadline.
func WithBudget(budget time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, has := r.Context().Deadline(); has || budget <= 0 {
			// A platform deadline wins; no budget configured means none, not an already
			// expired deadline that would fail every request before its first attempt.
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), budget)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
