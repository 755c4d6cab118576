package cloud

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// HTTP serves the endpoint build returns, for an API Gateway function.
//
// The whole request runs under the invocation's deadline less the reserve, so nothing outlives
// the invocation: a stream still running then ends with its error frame saying the deadline was
// reached (completion's deadline_exceeded) while the function can still send it, instead of being
// killed by the runtime mid-stream.
//
// The endpoint is built on the first request, not at init, so a cold start makes no network call;
// a stalled dependency (Secrets Manager) cannot hold the build past that deadline. While it builds
// (its secrets read at once), the request's API key is read too, so a cold request's first attempt
// waits on three round trips before it: the secrets and the key, its breakers, its admission. A failed build
// is logged with the request id, route and cause, answered in render's envelope with X-Request-Id
// (503 and Retry-After for an outage), and tried again by the next request.
//
// A stream that waits for its first content token longer than KeepAlive is committed and kept
// alive with SSE comments (httpapi.AwaitFirstToken), inside API Gateway's idle limit.
//
// An invocation ends when its response does, and a frozen function loses the events it has not
// handed over yet, so after the endpoint returns (its last byte sent) HTTP waits for pending
// publishes before the response ends: the streaming adapter closes the stream only when this
// handler returns. With the outbox configured the wait is short — an event the bus has not taken
// event.HandOverAfter after its publish goes to the outbox queue instead — and never longer than
// event.FlushTimeout or past the invocation's deadline.
func (c *Cloud) HTTP(render httpapi.Render, build func(context.Context) (http.Handler, error)) http.Handler {
	l := &lazy{build: build, lock: make(chan struct{}, 1)}
	// A path not in canonical form is a 404 in render's envelope, as locally: the endpoint's
	// ServeMux would redirect it.
	envelope := func(string) httpapi.Render { return render }
	return httpapi.WithRequestID(httpapi.Canonical(envelope, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer c.flush(r.Context())
		ctx, cancel := beforeDeadline(r.Context(), reserve)
		defer cancel()
		r = r.WithContext(httpapi.WithKeepAlive(ctx, c.KeepAlive))
		if c.Config.CORSOrigin != "" {
			// API Gateway answers only the preflight of a proxy integration; the function's own
			// answer must name the origin, or a browser drops it.
			w.Header().Set("Access-Control-Allow-Origin", c.Config.CORSOrigin)
			w.Header().Set("Access-Control-Expose-Headers", "X-Request-Id, Idempotent-Replayed, Retry-After")
		}
		if !l.ready() {
			c.warmKey(r)
		}
		h, err := l.get(r.Context())
		if err != nil {
			// A dependency outage is a 503 with Retry-After; anything else is the gateway's own
			// failure, detailed only in the log line every 5xx writes.
			render(w, r, fmt.Errorf("endpoint start: %w", err))
			return
		}
		h.ServeHTTP(w, r)
	})))
}

// Endpoint is HTTP for an endpoint of the gateway, built from the function's GatewayDeps (read
// on the first request) and the provider adapters the function passes (nil for an endpoint that
// calls no provider).
func (c *Cloud) Endpoint(e gateway.Endpoint, providers map[string]catalog.Factory) http.Handler {
	return c.HTTP(e.Render, func(ctx context.Context) (http.Handler, error) {
		d, err := c.GatewayDeps(ctx)
		if err != nil {
			return nil, err
		}
		d.Providers = providers
		return e.Build(d)
	})
}

// warmKey starts reading the API key r carries into the key cache, without waiting: the
// endpoint's own lookup then finds it read, or joins the read.
func (c *Cloud) warmKey(r *http.Request) {
	hash, err := httpapi.KeyHash(r)
	if err != nil {
		return // the endpoint answers the 401 (or needs no key)
	}
	ctx := r.Context()
	go func() { _, _ = c.keys.KeyByHash(ctx, hash) }()
}

// lazy builds a handler once, on first use; a failed build leaves it unbuilt.
type lazy struct {
	build func(context.Context) (http.Handler, error)
	lock  chan struct{} // held while building; waited for under the request's deadline
	built atomic.Pointer[http.Handler]
}

func (l *lazy) ready() bool { return l.built.Load() != nil }

// get builds under ctx, which HTTP already ends the reserve before the invocation's deadline.
func (l *lazy) get(ctx context.Context) (http.Handler, error) {
	if h := l.built.Load(); h != nil {
		return *h, nil
	}
	select {
	case l.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, dependencyError("the gateway's start", context.Cause(ctx))
	}
	defer func() { <-l.lock }()
	if h := l.built.Load(); h != nil { // built while this request waited
		return *h, nil
	}
	h, err := l.build(ctx)
	if err != nil {
		return nil, dependencyError("a service the gateway needs", err)
	}
	l.built.Store(&h)
	return h, nil
}

// flushMargin is left between the end of the wait for events and the invocation's deadline, for
// the response to end.
const flushMargin = 100 * time.Millisecond

// flush waits for the events the request published to be handed over (to the bus or the outbox)
// and, beside that wait, for the instance's provider health reports to be written — each began
// when its failure was seen, so it has almost always landed — then writes the instance's request
// counts when they are due, at most event.FlushTimeout in all and never past the invocation's
// deadline (ctx's) less flushMargin; a request ended by its client still waits.
func (c *Cloud) flush(ctx context.Context) {
	until := time.Now().Add(event.FlushTimeout)
	if d, ok := ctx.Deadline(); ok && d.Add(-flushMargin).Before(until) {
		until = d.Add(-flushMargin)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), until)
	defer cancel()
	var health sync.WaitGroup
	if c.Health != nil {
		health.Go(func() { _ = c.Health.Flush(ctx) }) // a failed write is logged where it fails
	}
	_ = c.Events.Flush(ctx) // Flush logs what it abandons
	health.Wait()
	if c.Requests != nil && c.Config.Tables.Limits != "" {
		// Nothing runs while the instance is frozen: its request counts are written here, after
		// an answer, once StatsFlush has passed (one UpdateItem per bucket, concurrently). A failed
		// write keeps them for the next; an instance recycled first loses them.
		if err := c.Requests.FlushIfDue(ctx, c.Store); err != nil {
			c.Log.Warn("request stats: write failed; retried after a later answer", "error", err)
		}
	}
}
