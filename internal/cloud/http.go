package cloud

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/secureai-gateway/gateway/internal/httpapi"
)

// HTTP serves the endpoint build returns, for an API Gateway function. The endpoint is built on
// the first request, not at init, so a cold start makes no network call. The build runs under
// the request's deadline less the reserve, so a stalled dependency (Secrets Manager) cannot hold
// it until the runtime kills the function; a failed build is logged with the request id, route
// and cause, answered in render's envelope with X-Request-Id (503 and Retry-After for an outage),
// and tried again by the next request.
func (c *Cloud) HTTP(render httpapi.Render, build func(context.Context) (http.Handler, error)) http.Handler {
	l := &lazy{build: build, lock: make(chan struct{}, 1)}
	return httpapi.WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.Config.CORSOrigin != "" {
			// API Gateway answers only the preflight of a proxy integration; the function's own
			// answer must name the origin, or a browser drops it.
			w.Header().Set("Access-Control-Allow-Origin", c.Config.CORSOrigin)
			w.Header().Set("Access-Control-Expose-Headers", "X-Request-Id, Idempotent-Replayed, Retry-After")
		}
		h, err := l.get(r.Context())
		if err != nil {
			// A dependency outage is a 503 with Retry-After; anything else is the gateway's own
			// failure, detailed only in the log line every 5xx writes.
			render(w, r, fmt.Errorf("endpoint start: %w", err))
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// lazy builds a handler once, on first use; a failed build leaves it unbuilt.
type lazy struct {
	build func(context.Context) (http.Handler, error)
	lock  chan struct{} // held while building; waited for under the request's deadline
	built atomic.Pointer[http.Handler]
}

func (l *lazy) get(ctx context.Context) (http.Handler, error) {
	if h := l.built.Load(); h != nil {
		return *h, nil
	}
	ctx, cancel := beforeDeadline(ctx, reserve)
	defer cancel()
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
