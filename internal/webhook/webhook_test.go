package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/secureai-gateway/gateway/internal/event"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
	"github.com/secureai-gateway/gateway/internal/webhook"
)

// received is one request as the receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a subscriber's server. It checks both signatures the way a subscriber would, from
// the contract: X-SecureAI-Signature is t=<unix>,v1=<hex HMAC-SHA256 keyed by the whsec_ string's
// bytes of "<t>.<body>">, and the Standard Webhooks headers verify with that spec's own library.
type receiver struct {
	t      *testing.T
	secret string
	// answer decides the response to the n-th request (1-based).
	answer func(n int, w http.ResponseWriter)

	mu  sync.Mutex
	got []received
	srv *httptest.Server
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{t: t, answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, received{header: req.Header.Clone(), body: body})
	n := len(r.got)
	secret := r.secret
	r.mu.Unlock()
	if err := verifySecureAI(secret, req.Header.Get("X-SecureAI-Signature"), body, time.Now()); err != nil {
		r.t.Errorf("X-SecureAI-Signature: %v", err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		r.t.Fatalf("standard webhooks verifier refuses the secret: %v", err)
	}
	if err := wh.Verify(body, req.Header); err != nil {
		r.t.Errorf("Standard Webhooks verification: %v", err)
	}
	r.answer(n, w)
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// verifySecureAI is the check a subscriber writes from the contract.
func verifySecureAI(secret, header string, body []byte, now time.Time) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("no t=")
	}
	if d := now.Sub(time.Unix(unix, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return errors.New("v1 does not match")
	}
	return nil
}

func status(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}

// queued is one Enqueue call.
type queued struct {
	d     webhook.Delivery
	delay time.Duration
}

type memQueue struct {
	mu  sync.Mutex
	got []queued
}

func (q *memQueue) Enqueue(_ context.Context, d webhook.Delivery, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got = append(q.got, queued{d, delay})
	return nil
}

func (q *memQueue) take() []queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.got
	q.got = nil
	return out
}

type fixture struct {
	store  *boltstore.Store
	queue  *memQueue
	disp   *webhook.Dispatcher
	events *published
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newFixture(t *testing.T, reach webhook.Reach) *fixture {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	q, p := &memQueue{}, &published{}
	return &fixture{store: s, queue: q, events: p, disp: &webhook.Dispatcher{Store: s, Queue: q, Log: quiet(), Events: p,
		Poster: &webhook.Poster{Client: webhook.NewGuard(reach).Client(), Now: time.Now, Timeout: 300 * time.Millisecond}}}
}

func (f *fixture) endpoint(t *testing.T, url string, events ...string) *webhook.Endpoint {
	t.Helper()
	ep, err := webhook.Create(context.Background(), webhook.Input{URL: &url, Events: &events}, webhook.NewGuard(webhook.ReachPrivate), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.CreateEndpoint(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	return ep
}

var failover = event.ModelFailoverEvent(event.Failover{FailedModel: "openai/gpt-5-nano", Reason: "rate_limit",
	NextModel: "anthropic/claude-sonnet-4", LatencyMs: 812, Subject: event.Subject{UserID: "u1", APIKeyID: "key_1", RequestID: "req_1"},
	Time: time.Now()}, time.Now())

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestDeliveryIsSignedWithBothSchemesAndCarriesTheEnvelope(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	r := newReceiver(t, status(http.StatusNoContent))
	ep := f.endpoint(t, r.srv.URL, "api:model_failover")
	r.secret = ep.Secret

	ctx := context.Background()
	if err := f.disp.FanOut(ctx, failover); err != nil {
		t.Fatal(err)
	}
	q := f.queue.take()
	if len(q) != 1 || q[0].delay != 0 || q[0].d.Attempt != 1 {
		t.Fatalf("fan-out queued %+v, want one first attempt now", q)
	}
	if err := f.disp.Deliver(ctx, q[0].d); err != nil {
		t.Fatal(err)
	}
	got := r.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests", len(got))
	}
	h := got[0].header
	if h.Get("X-SecureAI-Event") != "api:model_failover" || !uuidRE.MatchString(h.Get("X-SecureAI-Delivery")) ||
		h.Get("webhook-id") != h.Get("X-SecureAI-Delivery") || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", h)
	}
	var body struct {
		ID, Type, Created string
		Data              map[string]any
	}
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != failover.ID || body.Type != "api:model_failover" || body.Created == "" || body.Data["failedModel"] != "openai/gpt-5-nano" {
		t.Errorf("body = %s", got[0].body)
	}
	if len(f.queue.take()) != 0 {
		t.Error("an acknowledged delivery queued another attempt")
	}
	as, _ := f.store.Attempts(ctx, ep.ID, 10)
	if len(as) != 1 || !as[0].Succeeded() || as[0].StatusCode != 204 {
		t.Errorf("attempts = %+v", as)
	}
}

func TestFanOutQueuesOneDeliveryPerSubscribedEnabledEndpoint(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	all := f.endpoint(t, "http://127.0.0.1:1/all", "*")
	named := f.endpoint(t, "http://127.0.0.1:1/named", "api:model_failover")
	f.endpoint(t, "http://127.0.0.1:1/other", "api:limit_reached")
	off := f.endpoint(t, "http://127.0.0.1:1/off", "*")
	if _, err := f.store.UpdateEndpoint(context.Background(), off.ID, func(e *webhook.Endpoint) error { e.Enabled = false; return nil }); err != nil {
		t.Fatal(err)
	}
	ids := func() map[string]string {
		if err := f.disp.FanOut(context.Background(), failover); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, q := range f.queue.take() {
			out[q.d.EndpointID] = q.d.ID
		}
		return out
	}
	first, again := ids(), ids()
	if len(first) != 2 || first[all.ID] == "" || first[named.ID] == "" || first[all.ID] == first[named.ID] {
		t.Fatalf("deliveries = %v, want one each for %s and %s", first, all.ID, named.ID)
	}
	for k, v := range first {
		if again[k] != v {
			t.Errorf("a second fan-out of the same event gave %s delivery id %s, want %s", k, again[k], v)
		}
	}
}

// closedURL is an address where nothing listens.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/hook"
}

func TestFailedAttemptIsRetriedLaterWithTheSameDeliveryID(t *testing.T) {
	cases := []struct {
		name   string
		answer func(n int, w http.ResponseWriter)
		refuse bool // the first attempt goes to a closed port
	}{
		{"receiver answers 500", func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.WriteHeader(500)
			}
		}, false},
		{"receiver times out", func(n int, w http.ResponseWriter) {
			if n == 1 {
				time.Sleep(time.Second)
			}
		}, false},
		{"connection refused", status(200), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, webhook.ReachLoopback)
			r := newReceiver(t, c.answer)
			url := r.srv.URL
			if c.refuse {
				url = closedURL(t)
			}
			ep := f.endpoint(t, url, "*")
			r.secret = ep.Secret
			ctx := context.Background()
			if err := f.disp.FanOut(ctx, failover); err != nil {
				t.Fatal(err)
			}
			first := f.queue.take()[0].d
			if err := f.disp.Deliver(ctx, first); err != nil {
				t.Fatal(err)
			}
			retry := f.queue.take()
			if len(retry) != 1 || retry[0].delay != 10*time.Second || retry[0].d.Attempt != 2 || retry[0].d.ID != first.ID {
				t.Fatalf("after a failed first attempt queued %+v, want attempt 2 of %s in 10s", retry, first.ID)
			}
			if c.refuse {
				if _, err := f.store.UpdateEndpoint(ctx, ep.ID, func(e *webhook.Endpoint) error { e.URL = r.srv.URL; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.disp.Deliver(ctx, retry[0].d); err != nil {
				t.Fatal(err)
			}
			var seen []string
			for _, g := range r.requests() {
				seen = append(seen, g.header.Get("X-SecureAI-Delivery"))
			}
			for _, id := range seen {
				if id != first.ID {
					t.Errorf("receiver saw delivery ids %v, want only %s", seen, first.ID)
				}
			}
			as, _ := f.store.Attempts(ctx, ep.ID, 10)
			if len(as) != 2 || !as[0].Succeeded() || as[1].Succeeded() || as[1].Error == "" {
				t.Fatalf("attempts = %+v, want a failure with its error then a success", as)
			}
			// The failure's record says when the retry is due: 10 s after it ended.
			end := as[1].At.Add(time.Duration(as[1].LatencyMs) * time.Millisecond)
			if due := as[1].NextAttemptAt.Sub(end); due < 10*time.Second || due > 11*time.Second || !as[0].NextAttemptAt.IsZero() {
				t.Errorf("next attempts: after the failure %v (%v after it ended), after the success %v; want 10 s, then none",
					as[1].NextAttemptAt, due, as[0].NextAttemptAt)
			}
		})
	}
}

func TestThirdFailedAttemptEndsTheDeliveryAndTwentyDisableTheEndpoint(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	outcomes := map[string]int{}
	f.disp.Observe = func(outcome string) { outcomes[outcome]++ }
	r := newReceiver(t, status(503))
	ep := f.endpoint(t, r.srv.URL, "*")
	r.secret = ep.Secret
	ctx := context.Background()
	deliverAll := func(ev event.Event) {
		if err := f.disp.FanOut(ctx, ev); err != nil {
			t.Fatal(err)
		}
		var delays []time.Duration
		for q := f.queue.take(); len(q) > 0; q = f.queue.take() {
			delays = append(delays, q[0].delay)
			if err := f.disp.Deliver(ctx, q[0].d); err != nil {
				t.Fatal(err)
			}
		}
		if len(delays) != 3 || delays[0] != 0 || delays[1] != 10*time.Second || delays[2] != 60*time.Second {
			t.Fatalf("attempt delays = %v, want [0 10s 1m0s]", delays)
		}
	}
	deliverAll(event.WebhookTestEvent(ep.ID, event.Subject{}, time.Now()))
	// The last attempt's record names no next one; the two before it do.
	if as, _ := f.store.Attempts(ctx, ep.ID, 3); len(as) != 3 || !as[0].NextAttemptAt.IsZero() || as[1].NextAttemptAt.IsZero() || as[2].NextAttemptAt.IsZero() {
		t.Fatalf("attempts of a failed delivery = %+v, want a next attempt on all but the last", as)
	}
	for i := 2; i <= webhook.DisableAfter; i++ {
		deliverAll(event.WebhookTestEvent(ep.ID, event.Subject{}, time.Now()))
		got, _ := f.store.Endpoint(ctx, ep.ID)
		if got.ConsecutiveFailures != i || got.Enabled != (i < webhook.DisableAfter) {
			t.Fatalf("after %d failed deliveries: failures %d enabled %v", i, got.ConsecutiveFailures, got.Enabled)
		}
	}
	if want := map[string]int{"retrying": 2 * webhook.DisableAfter, "failed": webhook.DisableAfter}; !maps.Equal(outcomes, want) {
		t.Errorf("Observe told %v, want %v", outcomes, want)
	}
	if err := f.disp.FanOut(ctx, failover); err != nil || len(f.queue.take()) != 0 {
		t.Fatal("a disabled endpoint still gets deliveries")
	}
	if got, _ := f.store.Endpoint(ctx, ep.ID); got.DisabledReason != webhook.DisabledFailures || got.DisabledAt.IsZero() {
		t.Errorf("disabled endpoint = %+v, want its record to say why and when", got)
	}
	f.events.wantDisabled(t, ep, webhook.DisabledFailures, webhook.DisableAfter)
	on := true
	got, err := f.store.UpdateEndpoint(ctx, ep.ID, func(e *webhook.Endpoint) error {
		return e.Apply(webhook.Input{Enabled: &on}, time.Now())
	})
	if err != nil || !got.Enabled || got.ConsecutiveFailures != 0 || got.DisabledReason != "" {
		t.Fatalf("re-enabled = %+v, %v; want enabled with the count and the reason reset", got, err)
	}
}

// A receiver that answers 410 Gone asks for no more deliveries: its endpoint is disabled at once,
// not retried, and says why (issue 21 item 11).
func TestA410DisablesTheEndpointAtOnce(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	r := newReceiver(t, status(http.StatusGone))
	ep := f.endpoint(t, r.srv.URL, "*")
	r.secret = ep.Secret
	ctx := context.Background()
	if err := f.disp.Deliver(ctx, webhook.Delivery{ID: "d", EndpointID: ep.ID, Attempt: 1, Event: failover}); err != nil {
		t.Fatal(err)
	}
	if q := f.queue.take(); len(q) != 0 {
		t.Errorf("a 410 was retried: %v", q)
	}
	if got, _ := f.store.Endpoint(ctx, ep.ID); got.Enabled || got.DisabledReason != webhook.DisabledGone {
		t.Errorf("after a 410: %+v, want disabled, reason %q", got, webhook.DisabledGone)
	}
	f.events.wantDisabled(t, ep, webhook.DisabledGone, 1)
}

// published records what a dispatcher publishes.
type published struct {
	mu     sync.Mutex
	events []event.Event
}

func (p *published) Publish(_ context.Context, evs ...event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, evs...)
}

func (p *published) Flush(context.Context) error { return nil }

// wantDisabled checks that exactly one event was published: ep's webhook:endpoint_disabled, for
// reason after failures, with the URL cut to scheme and host.
func (p *published) wantDisabled(t *testing.T, ep *webhook.Endpoint, reason string, failures int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.events) != 1 || p.events[0].Type != event.WebhookEndpointDisabled {
		t.Fatalf("published %v, want one %s", p.events, event.WebhookEndpointDisabled)
	}
	var d event.EndpointDisabled
	if err := json.Unmarshal(p.events[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	a := ep.Audited()
	if d.EndpointID != ep.ID || d.Reason != reason || d.ConsecutiveFailures != failures || d.URL != a.URL ||
		d.URLFingerprint != a.URLFingerprint || d.Time.IsZero() {
		t.Errorf("event data %+v, want endpoint %s, reason %s after %d failures, URL %s", d, ep.ID, reason, failures, a.URL)
	}
}

func TestSuccessResetsTheFailureCount(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	r := newReceiver(t, status(200))
	ep := f.endpoint(t, r.srv.URL, "*")
	r.secret = ep.Secret
	ctx := context.Background()
	if _, err := f.store.UpdateEndpoint(ctx, ep.ID, func(e *webhook.Endpoint) error { e.ConsecutiveFailures = 7; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.disp.Deliver(ctx, webhook.Delivery{ID: "d", EndpointID: ep.ID, Attempt: 1, Event: failover}); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.store.Endpoint(ctx, ep.ID); got.ConsecutiveFailures != 0 {
		t.Errorf("failures = %d after a success", got.ConsecutiveFailures)
	}
}

func TestCreateRefusesURLsThatAreNotPublicHTTP(t *testing.T) {
	g := webhook.NewGuard(webhook.ReachPublic)
	ctx := context.Background()
	for _, u := range []string{
		"ftp://example.com/hook",
		"file:///etc/passwd",
		"http://127.0.0.1/hook",
		"http://localhost:8080/hook", // a name that resolves to 127.0.0.1
		"http://169.254.169.254/latest/meta-data/",
		"http://10.1.2.3/hook",
		"http://192.168.0.1/hook",
		"http://[::1]/hook",
		"http://[fd00::1]/hook",
		"https://user:pass@93.184.215.14/hook",
		"/relative",
	} {
		if err := g.CheckURL(ctx, u); err == nil {
			t.Errorf("CheckURL(%s) allowed", u)
		}
		var refused *webhook.ErrURL
		if err := g.CheckURL(ctx, u); !errors.As(err, &refused) {
			t.Errorf("CheckURL(%s) = %v, want an *ErrURL", u, err)
		}
	}
	// A refusal does not say which address a name resolved to.
	if err := g.CheckURL(ctx, "http://localhost:8080/hook"); err == nil || strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "::1") {
		t.Errorf("refusing localhost: %v, want no resolved address in it", err)
	}
	if err := g.CheckURL(ctx, "https://93.184.215.14:8443/hook"); err != nil {
		t.Errorf("a public address on any port: %v", err)
	}
	if err := webhook.NewGuard(webhook.ReachPrivate).CheckURL(ctx, "http://localhost:8080/hook"); err != nil {
		t.Errorf("allow-private refused localhost: %v", err)
	}
	url := "http://127.0.0.1/x"
	evs := []string{"*"}
	_, err := webhook.Create(ctx, webhook.Input{URL: &url, Events: &evs}, g, time.Now())
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.K != fault.InvalidRequest || fe.Param != "url" {
		t.Errorf("Create with a loopback URL = %v, want a 400 naming url", err)
	}
}

func TestCreateRefusesUnknownEventNames(t *testing.T) {
	g := webhook.NewGuard(webhook.ReachPrivate)
	url := "https://93.184.215.14/x" // a public address: nothing is sent, and no DNS is needed
	for name, evs := range map[string][]string{"unknown name": {"api:model_failover", "api:nope"}, "empty": {}} {
		_, err := webhook.Create(context.Background(), webhook.Input{URL: &url, Events: &evs}, g, time.Now())
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.K != fault.InvalidRequest || fe.Param != "events" {
			t.Errorf("%s: Create = %v, want a 400 naming events", name, err)
		}
	}
	evs := []string{"*"}
	ep, err := webhook.Create(context.Background(), webhook.Input{URL: &url, Events: &evs}, g, time.Now())
	if err != nil || !strings.HasPrefix(ep.Secret, "whsec_") || !ep.Enabled || !strings.HasPrefix(ep.ID, "wh_") {
		t.Errorf("Create = %+v, %v", ep, err)
	}
	if ep.Public().Secret != "" {
		t.Error("Public keeps the secret")
	}
}

// The address check runs on the address dialled, whatever the URL's host says.
func TestDeliveryRefusesPrivateAddressesAtDialTime(t *testing.T) {
	f := newFixture(t, webhook.ReachPublic)
	r := newReceiver(t, status(200))
	port := r.srv.Listener.Addr().(*net.TCPAddr).Port
	for _, u := range []string{r.srv.URL, "http://localhost:" + strconv.Itoa(port) + "/hook"} {
		ep := &webhook.Endpoint{ID: "wh_" + strconv.Itoa(len(u)), URL: u, Events: []string{"*"}, Enabled: true, Secret: webhook.NewSecret()}
		a := f.disp.Poster.Post(context.Background(), ep, webhook.Delivery{ID: "d", EndpointID: ep.ID, Attempt: 1, Event: failover})
		if a.Succeeded() || !strings.Contains(a.Error, "private, loopback or link-local") || strings.Contains(a.Error, "127.0.0.1") || strings.Contains(a.Error, "/hook") {
			t.Errorf("%s: attempt %+v, want refused at dial, naming neither the address nor the path", u, a)
		}
	}
	if n := len(r.requests()); n != 0 {
		t.Errorf("receiver got %d requests", n)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	private := newReceiver(t, status(200))
	r := newReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", private.srv.URL+"/internal")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	ep := f.endpoint(t, r.srv.URL, "*")
	r.secret = ep.Secret
	a := f.disp.Poster.Post(context.Background(), ep, webhook.Delivery{ID: "d", EndpointID: ep.ID, Attempt: 1, Event: failover})
	if a.Succeeded() || a.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("attempt = %+v, want a failed 307", a)
	}
	if n := len(private.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
}

// Locally, deliveries wait in the embedded store: a gateway stopped before a retry was due
// delivers it after a restart.
func TestLocalQueueSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	r := newReceiver(t, status(200))
	ctx := context.Background()
	clock := time.Now()
	now := func() time.Time { return clock }

	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	url, evs := r.srv.URL, []string{"*"}
	ep, err := webhook.Create(ctx, webhook.Input{URL: &url, Events: &evs}, webhook.NewGuard(webhook.ReachPrivate), now())
	if err != nil {
		t.Fatal(err)
	}
	r.secret = ep.Secret
	if err := s.CreateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	q := webhook.LocalQueue{Pending: s.Pending(), Now: now}
	if err := q.Enqueue(ctx, webhook.Delivery{ID: webhook.DeliveryID(failover.ID, ep.ID), EndpointID: ep.ID, Attempt: 2, Event: failover}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := &webhook.Worker{Pending: s.Pending(), Now: now, Poll: time.Second, Dispatcher: &webhook.Dispatcher{Store: s,
		Queue: webhook.LocalQueue{Pending: s.Pending(), Now: now}, Log: quiet(),
		Poster: &webhook.Poster{Client: webhook.NewGuard(webhook.ReachPrivate).Client(), Now: time.Now}}}
	w.RunDue(ctx)
	if n := len(r.requests()); n != 0 {
		t.Fatalf("delivered %d before it was due", n)
	}
	clock = clock.Add(10 * time.Second)
	w.RunDue(ctx)
	got := r.requests()
	if len(got) != 1 || got[0].header.Get("X-SecureAI-Delivery") != webhook.DeliveryID(failover.ID, ep.ID) {
		t.Fatalf("after the restart the receiver got %d requests", len(got))
	}
	if due, _ := s.Pending().Due(ctx, clock.Add(time.Hour), 10); len(due) != 0 {
		t.Errorf("%d deliveries still pending after success", len(due))
	}
}

func TestTestSendsAWebhookTestEventOnce(t *testing.T) {
	f := newFixture(t, webhook.ReachLoopback)
	r := newReceiver(t, status(200))
	ep := f.endpoint(t, r.srv.URL, "api:model_failover")
	r.secret = ep.Secret
	a, err := f.disp.Test(context.Background(), ep.ID, event.Subject{APIKeyID: "admin"}, time.Now())
	if err != nil || !a.Succeeded() || a.EventType != event.WebhookTest {
		t.Fatalf("Test = %+v, %v", a, err)
	}
	got := r.requests()
	if len(got) != 1 || got[0].header.Get("X-SecureAI-Event") != "webhook:test" {
		t.Errorf("receiver got %d requests", len(got))
	}
}

// Which addresses a deployment delivers to (issue 21 item 15): public only in the cloud by
// default, this machine too locally, private ranges when asked — and link-local (the metadata
// service) never.
func TestReach(t *testing.T) {
	for _, c := range []struct {
		value   string
		want    webhook.Reach
		wantErr bool
	}{
		{"", webhook.ReachLoopback, false}, {"false", webhook.ReachPublic, false}, {"public", webhook.ReachPublic, false},
		{"loopback", webhook.ReachLoopback, false}, {"true", webhook.ReachPrivate, false}, {"Private", webhook.ReachPrivate, false},
		{"yes please", 0, true},
	} {
		got, err := webhook.ParseReach(c.value, webhook.ReachLoopback)
		if (err != nil) != c.wantErr || (err == nil && got != c.want) {
			t.Errorf("ParseReach(%q) = %v, %v; want %v", c.value, got, err, c.want)
		}
	}
	ctx := context.Background()
	for _, c := range []struct {
		reach   webhook.Reach
		allowed []string
		refused []string
	}{
		{webhook.ReachPublic, []string{"http://93.184.215.14/h"}, []string{"http://127.0.0.1/h", "http://10.1.2.3/h", "http://169.254.169.254/latest/meta-data/"}},
		{webhook.ReachLoopback, []string{"http://127.0.0.1/h", "http://[::1]/h"}, []string{"http://10.1.2.3/h", "http://192.168.0.1/h", "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/h"}},
		{webhook.ReachPrivate, []string{"http://127.0.0.1/h", "http://10.1.2.3/h", "http://172.16.0.9/h", "http://[fd00::1]/h"}, []string{"http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/h"}},
	} {
		g := webhook.NewGuard(c.reach)
		for _, u := range c.allowed {
			if err := g.CheckURL(ctx, u); err != nil {
				t.Errorf("%v: %s refused: %v", c.reach, u, err)
			}
		}
		for _, u := range c.refused {
			if err := g.CheckURL(ctx, u); err == nil {
				t.Errorf("%v: %s allowed", c.reach, u)
			}
		}
	}
}

// Issue 21 item 4: one receiver that hangs delays only its own deliveries. Three events go to a
// hanging and a healthy endpoint; the healthy one gets all three while the hanging one still
// holds its first.
func TestAHangingReceiverDelaysOnlyItsOwnDeliveries(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	hanging := newReceiver(t, func(int, http.ResponseWriter) { <-release })
	healthy := newReceiver(t, status(200))
	defer close(release) // before the servers close (cleanups run after this)
	q := webhook.LocalQueue{Pending: s.Pending(), Now: time.Now}
	d := &webhook.Dispatcher{Store: s, Queue: q, Log: quiet(),
		Poster: &webhook.Poster{Client: webhook.NewGuard(webhook.ReachPrivate).Client(), Now: time.Now, Timeout: time.Minute}}
	for _, r := range []*receiver{hanging, healthy} {
		url, evs := r.srv.URL, []string{"*"}
		ep, err := webhook.Create(ctx, webhook.Input{URL: &url, Events: &evs}, webhook.NewGuard(webhook.ReachPrivate), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		r.secret = ep.Secret
		if err := s.CreateEndpoint(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := d.FanOut(ctx, event.WebhookTestEvent("", event.Subject{}, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	w := &webhook.Worker{Pending: s.Pending(), Dispatcher: d, Now: time.Now, Poll: 20 * time.Millisecond}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(healthy.requests()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the healthy receiver got %d of 3 deliveries behind a hanging one", len(healthy.requests()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(hanging.requests()); n != 1 {
		t.Errorf("the hanging receiver got %d requests, want 1 (its first, still held)", n)
	}
	cancel()
	release <- struct{}{} // let the held attempt end so the worker can stop
	<-done
}
