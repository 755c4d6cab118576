package awslambda_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRuntime is a minimal Lambda Runtime API: it hands out queued invocations
// on /next and records what the runtime posts back, reading streamed responses
// incrementally so a test can observe chunks as they arrive.
type fakeRuntime struct {
	*httptest.Server
	queue   chan *invocation
	release chan struct{} // one token lets one blocked handler continue
	closed  chan struct{}

	mu       sync.Mutex
	inflight map[string]*invocation
	nextID   int
}

type invocation struct {
	id      string
	payload []byte

	header   http.Header // of the /response or /error POST
	chunks   chan []byte // each read of the /response body
	trailer  http.Header // after the body ended
	errBody  []byte      // the /error POST body
	finished chan struct{}
}

func newFakeRuntime(t *testing.T) *fakeRuntime {
	rt := &fakeRuntime{
		queue:    make(chan *invocation, 8),
		release:  make(chan struct{}),
		closed:   make(chan struct{}),
		inflight: map[string]*invocation{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", rt.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", rt.error)
	mux.HandleFunc("GET /release", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-rt.release:
		case <-rt.closed:
		}
	})
	rt.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(rt.closed) // unblock /next and /release so Close can finish
		rt.Close()
	})
	return rt
}

func (rt *fakeRuntime) invoke(payload []byte) *invocation {
	rt.mu.Lock()
	rt.nextID++
	inv := &invocation{
		id:       "req-" + strconv.Itoa(rt.nextID),
		payload:  payload,
		chunks:   make(chan []byte, 64),
		finished: make(chan struct{}),
	}
	rt.inflight[inv.id] = inv
	rt.mu.Unlock()
	rt.queue <- inv
	return inv
}

func (rt *fakeRuntime) next(w http.ResponseWriter, r *http.Request) {
	select {
	case inv := <-rt.queue:
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		deadline := time.Now().Add(30 * time.Second).UnixMilli()
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(deadline, 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:streamfn")
		w.Header().Set("Content-Type", "application/json")
		w.Write(inv.payload)
	case <-rt.closed:
		w.WriteHeader(http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
}

func (rt *fakeRuntime) lookup(w http.ResponseWriter, r *http.Request) *invocation {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	inv := rt.inflight[r.PathValue("id")]
	if inv == nil {
		http.Error(w, "unknown request id", http.StatusBadRequest)
	}
	return inv
}

func (rt *fakeRuntime) response(w http.ResponseWriter, r *http.Request) {
	inv := rt.lookup(w, r)
	if inv == nil {
		return
	}
	inv.header = r.Header.Clone()
	inv.header["Transfer-Encoding"] = r.TransferEncoding
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		if n > 0 {
			inv.chunks <- bytes.Clone(buf[:n])
		}
		if err != nil {
			break
		}
	}
	inv.trailer = r.Trailer.Clone() // filled once the body hit EOF
	close(inv.chunks)
	w.WriteHeader(http.StatusAccepted)
	close(inv.finished)
}

func (rt *fakeRuntime) error(w http.ResponseWriter, r *http.Request) {
	inv := rt.lookup(w, r)
	if inv == nil {
		return
	}
	inv.header = r.Header.Clone()
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	inv.errBody = b.Bytes()
	close(inv.chunks)
	w.WriteHeader(http.StatusAccepted)
	close(inv.finished)
}

// readUntil collects streamed bytes until they contain want.
func (inv *invocation) readUntil(t *testing.T, got *[]byte, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !strings.Contains(string(*got), want) {
		select {
		case c, ok := <-inv.chunks:
			if !ok {
				t.Fatalf("stream ended before %q; got %q", want, *got)
			}
			*got = append(*got, c...)
		case <-timeout:
			t.Fatalf("timed out waiting for %q; got %q", want, *got)
		}
	}
}

// readAll collects the rest of the stream.
func (inv *invocation) readAll(t *testing.T, got *[]byte) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c, ok := <-inv.chunks:
			if !ok {
				<-inv.finished
				return
			}
			*got = append(*got, c...)
		case <-timeout:
			t.Fatalf("timed out waiting for the stream to end; got %q", *got)
		}
	}
}
