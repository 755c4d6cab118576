package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

// WantErr checks err against a failover reason, or a final error's code when reason is "", and
// that it never shows secret, the adapter's credential.
func WantErr(t testing.TB, err error, reason chain.Reason, status int, code, secret string) *provider.Error {
	t.Helper()
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *provider.Error", err, err)
	}
	if pe.Reason != reason || (status != 0 && pe.Status != status) || pe.Code != code {
		t.Fatalf("error = %+v, want reason %q status %d code %q", pe, reason, status, code)
	}
	if strings.Contains(pe.Error(), secret) || strings.Contains(pe.Message, secret) {
		t.Fatalf("error leaks the credential: %v", pe)
	}
	return pe
}

// WantEnd checks how a stream ended: io.EOF when reason and code are empty and final is false,
// otherwise the error WantErr describes (final marks a final error with no code).
func WantEnd(t testing.TB, err error, reason chain.Reason, code string, final bool, secret string) {
	t.Helper()
	if reason == "" && code == "" && !final {
		if err != io.EOF {
			t.Fatalf("err = %v, want io.EOF", err)
		}
		return
	}
	WantErr(t, err, reason, 0, code, secret)
}

// Drain reads a stream to its end, returning the chunks and the final error (io.EOF when clean).
// Each chunk's Data is copied, since an adapter may reuse it at the next Recv.
func Drain(t testing.TB, s provider.Stream) ([]provider.Chunk, error) {
	t.Helper()
	defer s.Close()
	var out []provider.Chunk
	for {
		c, err := s.Recv()
		if err != nil {
			return out, err
		}
		c.Data = bytes.Clone(c.Data)
		out = append(out, c)
	}
}

// StreamAll opens a stream of req on p and drains it, failing the test when opening fails or when
// reading takes longer than a fault should ever hold a stream (a hang that is not noticed).
func StreamAll(t testing.TB, p provider.Provider, req *provider.Request) ([]provider.Chunk, error) {
	t.Helper()
	s, err := p.Stream(WithTimeout(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cs, err := Drain(t, s)
	if time.Since(start) > 2*time.Second {
		t.Errorf("stream took %v", time.Since(start))
	}
	return cs, err
}

// WithTimeout is a context that ends after d or with the test.
func WithTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// JSONEqual compares two JSON documents by value.
func JSONEqual(t testing.TB, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body =\n%s\nwant\n%s", got, want)
	}
}

// WantFields checks the string value of each gjson path of body.
func WantFields(t testing.TB, body []byte, want map[string]string) {
	t.Helper()
	b := gjson.ParseBytes(body)
	for path, w := range want {
		if got := b.Get(path).String(); got != w {
			t.Errorf("%s = %q, want %q", path, got, w)
		}
	}
}
