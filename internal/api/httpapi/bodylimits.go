package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"golang.org/x/sync/semaphore"
)

// DefaultInflightBodyBytes is the default of SECUREAI_MAX_INFLIGHT_BODY_BYTES: the request body
// bytes the local server holds at once. A body costs a few times its size while it is parsed and
// forwarded, so 64 MiB of bodies keeps the process within a few hundred MB under any load.
const DefaultInflightBodyBytes = 64 << 20

// DefaultBodyReadTimeout is how long the local server waits for a whole request body.
const DefaultBodyReadTimeout = 30 * time.Second

// DefaultBodyWait is how long a request waits for room in the in-flight budget: at loopback
// speeds a few hundred MB of bodies pass through in that time.
const DefaultBodyWait = 10 * time.Second

// busyRetryAfter is the Retry-After of a request refused for want of body memory: bodies in
// flight finish within a second or two at loopback speeds.
const busyRetryAfter = time.Second

// BodyLimits bounds what request bodies may cost a long-running server (the local one; a Lambda
// gets one request at a time and API Gateway's own limits):
//
//   - ReadTimeout bounds the time to read a whole body, counted from the request's arrival, so a
//     client that sends headers and then a trickle (or nothing) is answered 408 instead of holding
//     a connection and a goroutine forever. It is the connection's read deadline, armed when a
//     request with a body arrives and lifted by ReadJSONObject once the body is in, rather than
//     http.Server.ReadTimeout: that one stays armed while the handler runs, and when it fires
//     after the body was read it cancels the request's context, which would cut every stream
//     longer than the timeout. A body that fails to arrive keeps the deadline, so the server's
//     own attempt to drain it before answering fails at once too and the 408 goes out (then the
//     connection is closed). Handlers that read bodies themselves (admin routes) are bounded as
//     well; their short work must end before the deadline or their context is cancelled.
//   - InflightBytes caps the body bytes that all requests in flight may hold together. A request
//     whose body does not fit waits, first come first served, for up to Wait before a byte of it
//     is read — a waiting body stays in the client and the kernel's socket buffers, not in the
//     gateway — and is then refused with 503 and Retry-After (fault.Unavailable). Its read
//     deadline starts again once it has room, so waiting does not eat the time to send the body.
//
// Zero fields set no bound (Wait zero: refuse at once).
type BodyLimits struct {
	ReadTimeout   time.Duration
	InflightBytes int64
	Wait          time.Duration
}

// Wrap applies the limits to every request next serves; ReadJSONObject enforces them.
func (l BodyLimits) Wrap(next http.Handler) http.Handler {
	g := &bodyGate{inflight: l.InflightBytes, wait: l.Wait, readTimeout: l.ReadTimeout}
	if l.InflightBytes > 0 {
		g.sem = semaphore.NewWeighted(l.InflightBytes)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, q := stateOf(r)
		t := &bodyTicket{gate: g}
		q.ticket = t
		defer t.release()
		if l.ReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			// ErrNotSupported (a writer that cannot reach its connection) leaves bodies unbounded
			// in time, as without BodyLimits.
			if rc.SetReadDeadline(time.Now().Add(l.ReadTimeout)) == nil {
				t.armed = rc
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyGate is one server's shared body budget.
type bodyGate struct {
	inflight    int64
	wait        time.Duration
	readTimeout time.Duration
	sem         *semaphore.Weighted // nil: no cap
}

// bodyTicket is one request's share of the gate: the bytes it holds until its handler returns,
// since the body (and what is built from it) lives as long as the handler does.
type bodyTicket struct {
	gate  *bodyGate
	held  int64
	armed *http.ResponseController // set while the body's read deadline is armed
}

func ticketOf(ctx context.Context) *bodyTicket {
	if q := stateIn(ctx); q != nil {
		return q.ticket
	}
	return nil
}

// reserve takes n body bytes from the budget, waiting for room up to the gate's wait, or
// explains why the server is too busy.
func (t *bodyTicket) reserve(ctx context.Context, n int64) error {
	if t == nil || t.gate.sem == nil || n <= 0 {
		return nil
	}
	// A body as large as the whole budget takes all of it, so it waits for an idle moment
	// instead of never fitting.
	n = min(n, t.gate.inflight)
	if !t.gate.sem.TryAcquire(n) {
		if t.gate.wait <= 0 {
			return t.busy()
		}
		wctx, cancel := context.WithTimeout(ctx, t.gate.wait)
		defer cancel()
		if t.gate.sem.Acquire(wctx, n) != nil {
			return t.busy()
		}
		if t.armed != nil { // the time to send the body starts when there is room for it
			_ = t.armed.SetReadDeadline(time.Now().Add(t.gate.readTimeout))
		}
	}
	t.held += n
	return nil
}

func (t *bodyTicket) busy() error {
	return fault.New(fault.Unavailable, "Server busy", fmt.Sprintf(
		"the gateway is holding its limit of %d bytes of request bodies; retry shortly", t.gate.inflight)).
		WithCode("server_busy").WithRetryAfter(busyRetryAfter)
}

func (t *bodyTicket) release() {
	if t.held > 0 {
		t.gate.sem.Release(t.held)
		t.held = 0
	}
}

// bodyIn lifts the read deadline once the body has been read whole: from then on the connection
// is only watched for the caller leaving, which must not time out under a long response.
func (t *bodyTicket) bodyIn() {
	if t != nil && t.armed != nil {
		_ = t.armed.SetReadDeadline(time.Time{})
		t.armed = nil
	}
}
