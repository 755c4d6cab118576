package bedrock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// fake is a Bedrock runtime endpoint that records what it received and answers with the handler a
// test gives it: JSON for Converse, the binary event stream for ConverseStream.
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
		f.body, f.header, f.path = body, r.Header.Clone(), r.URL.EscapedPath()
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

const testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

// awsTestEnv gives the default credential chain static keys and keeps it away from real
// configuration files and the instance metadata service.
func awsTestEnv(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": testSecret, "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_PROFILE": "",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

func newAdapter(t *testing.T, f *fake) provider.Provider {
	t.Helper()
	awsTestEnv(t)
	p, err := New(provider.Config{Name: "bedrock", Type: "bedrock", BaseURL: f.URL, Region: "us-east-1", Client: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serveJSON(t *testing.T, name string) http.HandlerFunc {
	body := fixture(t, name)
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Requestid", "6a8d5c3e-0d4f-4b36-9b53-3c8f6b7d2f11")
		_, _ = w.Write(body)
	}
}

// serveError answers as Bedrock does: the exception's name in X-Amzn-ErrorType, its message in
// the JSON body.
func serveError(status int, exception, message string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"message":"`+message+`"}`)
	}
}

// events reads a fixture of one {"event","payload"} object per line into event-stream messages.
func events(t *testing.T, name string) []eventstream.Message {
	var out []eventstream.Message
	sc := bufio.NewScanner(bytes.NewReader(fixture(t, name)))
	for sc.Scan() {
		var ev struct {
			Event   string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, event(ev.Event, ev.Payload))
	}
	return out
}

func event(typ string, payload []byte) eventstream.Message {
	var h eventstream.Headers
	h.Set(":event-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("event"))
	return eventstream.Message{Headers: h, Payload: payload}
}

func exception(typ, message string) eventstream.Message {
	var h eventstream.Headers
	h.Set(":exception-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("exception"))
	return eventstream.Message{Headers: h, Payload: []byte(`{"message":"` + message + `"}`)}
}

// serveEvents encodes msgs with the SDK's own event-stream encoder, flushing each, pausing delay
// before the second, then runs end (nil: a clean end of the response).
func serveEvents(msgs []eventstream.Message, delay time.Duration, end func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		enc := eventstream.NewEncoder()
		for i, m := range msgs {
			if i == 1 && delay > 0 {
				time.Sleep(delay)
			}
			_ = enc.Encode(w, m)
			w.(http.Flusher).Flush()
		}
		if end != nil {
			end(w, r)
		}
	}
}

func cut(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }

func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func resetBeforeHeaders(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func wantErr(t *testing.T, err error, reason chain.Reason, status int, code string) *provider.Error {
	t.Helper()
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *provider.Error", err, err)
	}
	if pe.Reason != reason || (status != 0 && pe.Status != status) || pe.Code != code {
		t.Fatalf("error = %+v, want reason %q status %d code %q", pe, reason, status, code)
	}
	if strings.Contains(pe.Error(), testSecret) {
		t.Fatalf("error leaks the secret key: %v", pe)
	}
	return pe
}

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
