package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
	"github.com/tidwall/gjson"
)

// hedgeEnv is a gateway in front of the fault-injecting fake, whose "slow-first-token-<ms>"
// models answer (or send their first token) after their own delay.
type hedgeEnv struct {
	url  string
	fake *openaifake.Server
	obs  *recorder
}

func newHedgeEnv(t *testing.T, slow ...int) *hedgeEnv {
	t.Helper()
	fake := openaifake.New(300 * time.Millisecond)
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	names := append([]string(nil), openaifake.Models...)
	for _, ms := range slow {
		names = append(names, openaifake.SlowPrefix+strconv.Itoa(ms))
	}
	obs := &recorder{done: make(chan struct{}, 16)}
	deps := gatewaykit.Deps(gatewaykit.OneFake(up.URL+"/v1", names...), oneKey{})
	deps.Observer = obs
	return &hedgeEnv{url: gatewaykit.Bare(t, deps), fake: fake, obs: obs}
}

var hedgeSurfaces = []struct{ name, path, extra, report string }{
	{"openai", "/v1/chat/completions", `"messages":[{"role":"user","content":"hi"}]`, "secureai.failover"},
	{"classic", "/chat/completions", `"index":"Zero-Knowledge","prompt":"hi"`, "metadata.failover"},
}

// post sends a chat request and returns its status, body and the outcome the observer was told.
func (e *hedgeEnv) post(t *testing.T, path, body string) (int, []byte, completion.Outcome, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start) // until the status: the first token of a stream, or the answer
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	select {
	case <-e.obs.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the observer was never told how the request ended")
	}
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	return res.StatusCode, b, e.obs.outcomes[len(e.obs.outcomes)-1], took
}

// waitClosed waits (loosely) until the fake saw n requests to model closed by the gateway.
func (e *hedgeEnv) waitClosed(t *testing.T, model string, n int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if e.fake.Closed(model) >= n {
			return
		}
	}
	t.Errorf("the connection of the losing attempt to %s was not closed (%d closed, want %d)", model, e.fake.Closed(model), n)
}

func lines(r chain.Report) string {
	var b strings.Builder
	for _, a := range r.Attempts {
		b.WriteString(a.Model + ":" + string(a.Status) + ":" + string(a.Reason) + " ")
	}
	return strings.TrimSpace(b.String())
}

// The two races of the contract, on both surfaces, plain and streaming. Times are the contract's
// example (primary 600 ms, fallback 400 ms after its start, hedge after 300 ms) doubled, and the
// fallback's made 1000 ms, so the primary leads by 400 ms and a busy machine's scheduling cannot
// reorder the race; the assertions are on order and on who served, with loose time bounds.
func TestHedgedAttemptsThroughBothSurfaces(t *testing.T) {
	e := newHedgeEnv(t, 1200, 1000)
	primary, fallback := openaifake.SlowPrefix+"1200", openaifake.SlowPrefix+"1000"
	closedFallback, closedHang := 0, 0
	for _, s := range hedgeSurfaces {
		for _, stream := range []bool{false, true} {
			mode := "plain"
			if stream {
				mode = "stream"
			}
			body := func(models string) string {
				b := `{` + s.extra + `,"models":[` + models + `],"redundancy":{"hedge_after_ms":600}`
				if stream {
					b += `,"stream":true`
				}
				return b + `}`
			}
			t.Run(s.name+"/"+mode+"/the slow primary still serves when it is first", func(t *testing.T) {
				status, b, o, took := e.post(t, s.path, body(`"fake/`+primary+`","fake/`+fallback+`"`))
				want := "fake/" + primary + ":served: fake/" + fallback + ":cancelled:hedge_lost"
				if status != 200 || o.Served != "fake/"+primary || lines(o.Report) != want {
					t.Fatalf("%d served %q report %q, want %q\n%s", status, o.Served, lines(o.Report), want, b)
				}
				if took < 1100*time.Millisecond || took > 10*time.Second {
					t.Errorf("answered after %s, want about the primary's 1200 ms", took)
				}
				if !strings.Contains(string(b), "SecureAI demo provider") && !strings.Contains(string(b), "Hello") {
					t.Errorf("no answer in %s", b)
				}
				if !stream {
					a := gjson.GetBytes(b, s.report+".attempts").Array()
					if len(a) != 2 || a[0].Get("status").String() != "served" || a[1].Get("status").String() != "cancelled" ||
						a[1].Get("reason").String() != "hedge_lost" || !a[1].Get("hedge").Bool() || !a[1].Get("latency_ms").Exists() {
						t.Errorf("the response's report: %s", b)
					}
				}
				e.obs.mu.Lock()
				f := e.obs.failovers[len(e.obs.failovers)-1]
				e.obs.mu.Unlock()
				if f.Failed != "fake/"+primary || f.Next != "fake/"+fallback || f.Reason != chain.HedgeAfter {
					t.Errorf("failover told %+v, want the hedge %s beside %s", f.Transition, fallback, primary)
				}
				closedFallback++
				e.waitClosed(t, fallback, closedFallback)
			})
			t.Run(s.name+"/"+mode+"/a hanging primary loses to the hedge", func(t *testing.T) {
				status, b, o, took := e.post(t, s.path, body(`"fake/hang","fake/`+fallback+`"`))
				want := "fake/hang:cancelled:hedge_lost fake/" + fallback + ":served:"
				if status != 200 || o.Served != "fake/"+fallback || lines(o.Report) != want {
					t.Fatalf("%d served %q report %q, want %q\n%s", status, o.Served, lines(o.Report), want, b)
				}
				// hedge_after_ms + the fallback's own 1000 ms.
				if took < 1500*time.Millisecond || took > 10*time.Second {
					t.Errorf("answered after %s, want about 600 + 1000 ms", took)
				}
				closedHang++
				e.waitClosed(t, "hang", closedHang)
			})
		}
	}
}

// Hedging that never triggers changes nothing: a request whose first model answers before
// hedge_after_ms gets the same response as one without the field, once its ids, times and
// latencies are set aside.
func TestAnUntriggeredHedgeChangesNothing(t *testing.T) {
	e := newHedgeEnv(t)
	volatile := regexp.MustCompile(`"(id|created|request_id|conversation_id|latency_ms|smltp_bundle_id|bundle_id|receipt_url)":("[^"]*"|\d+)`)
	for _, s := range hedgeSurfaces {
		for _, stream := range []string{"", `,"stream":true`} {
			t.Run(s.name+stream, func(t *testing.T) {
				without := `{` + s.extra + `,"models":["fake/ok","fake/error-500"]` + stream + `}`
				with := `{` + s.extra + `,"models":["fake/ok","fake/error-500"],"redundancy":{"hedge_after_ms":60000}` + stream + `}`
				_, a, oa, _ := e.post(t, s.path, without)
				_, b, ob, _ := e.post(t, s.path, with)
				na, nb := volatile.ReplaceAll(a, nil), volatile.ReplaceAll(b, nil)
				if string(na) != string(nb) {
					t.Errorf("responses differ:\nwithout: %s\nwith:    %s", na, nb)
				}
				if lines(oa.Report) != lines(ob.Report) || oa.Report.Occurred || ob.Report.Occurred {
					t.Errorf("reports differ: %q vs %q", lines(oa.Report), lines(ob.Report))
				}
			})
		}
	}
	if e.fake.Calls("error-500") != 0 {
		t.Error("an untriggered hedge started the second model")
	}
}

// A bad hedge_after_ms is a 400 naming the field, as every redundancy option.
func TestHedgeAfterOutOfRangeIsRefused(t *testing.T) {
	e := newHedgeEnv(t)
	for _, s := range hedgeSurfaces {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", e.url+s.path,
			strings.NewReader(`{`+s.extra+`,"models":["fake/ok","fake/ok"],"redundancy":{"hedge_after_ms":5}}`))
		req.Header.Set("Authorization", "Bearer "+apikey.NewSecret())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || !strings.Contains(string(b), "redundancy.hedge_after_ms") {
			t.Errorf("%s: %d %s", s.name, res.StatusCode, b)
		}
		select {
		case <-e.obs.done:
		case <-time.After(5 * time.Second):
		}
	}
}

// A hedge holds its own quota before it starts: a user who can pay for one attempt only is not
// hedged — the chain waits for the slow model, and the report says why — while one who can pay
// for both is, and the cancelled attempt costs no points (points count answers).
func TestAHedgeNeedsItsQuota(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	body := `{"models":["fake/slow-first-token","fake/ok"],"redundancy":{"hedge_after_ms":100},"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		points     int
		report     string
		calledOK   bool
		pointsUsed int64
	}{
		{1, "fake/slow-first-token:served::quota", false, 1},
		{2, "fake/slow-first-token:cancelled:hedge_lost: fake/ok:served::", true, 1},
	} {
		usage := hedgeWithPoints(t, g, "hedger-", tc.points, body, tc.report, tc.calledOK)
		if usage.Get("points.used").Int() != tc.pointsUsed {
			t.Errorf("%d points: used %d, want %d: %s", tc.points, usage.Get("points.used").Int(), tc.pointsUsed, usage.Raw)
		}
	}
}

// hedgeWithPoints sends body with a fresh key whose user has points, checks the report lines
// ("model:status:reason:hedge_skipped") and whether fake/ok was called, and returns the key's
// /usage.
func hedgeWithPoints(t *testing.T, g *gatewaykit.Server, prefix string, points int, body, report string, calledOK bool) gjson.Result {
	t.Helper()
	user := prefix + strconv.Itoa(points)
	key := g.NewKey(t, `{"name":"`+user+`","userId":"`+user+`"}`)
	if status, _, b := g.Call(t, "PUT", "/admin/users/"+user, g.Admin, `{"monthlyPoints":`+strconv.Itoa(points)+`}`); status != 200 {
		t.Fatalf("setting the user: %d %s", status, b.Raw)
	}
	okCalls := g.Upstream.Fake.Calls("ok")
	status, _, b := g.Call(t, "POST", "/v1/chat/completions", key, body)
	var got []string
	for _, a := range b.Get("secureai.failover.attempts").Array() {
		got = append(got, a.Get("model").String()+":"+a.Get("status").String()+":"+a.Get("reason").String()+":"+a.Get("hedge_skipped").String())
	}
	if status != 200 || strings.Join(got, " ") != report {
		t.Errorf("%d points: %d report %q, want %q\n%s", points, status, strings.Join(got, " "), report, b.Raw)
	}
	if called := g.Upstream.Fake.Calls("ok") > okCalls; called != calledOK {
		t.Errorf("%d points: fake/ok called: %v, want %v", points, called, calledOK)
	}
	_, _, usage := g.Call(t, "GET", "/usage", key, "")
	return usage
}

// When the hedge too is slow, the primary is dropped for the third model (still two at a time),
// and each hedge is held and paid for: a key that can pay for one hedge but not two keeps both.
func TestASecondHedgeReplacesThePrimary(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	// Both slow models send their first token after 300 ms; the second hedge starts at 200 ms.
	body := `{"models":["fake/slow-first-token","other/slow-first-token","fake/ok"],"redundancy":{"hedge_after_ms":100},"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		points   int
		report   string
		calledOK bool
	}{
		{2, "fake/slow-first-token:served:: other/slow-first-token:cancelled:hedge_lost:quota", false},
		{3, "fake/slow-first-token:cancelled:hedge_lost: other/slow-first-token:cancelled:hedge_lost: fake/ok:served::", true},
	} {
		usage := hedgeWithPoints(t, g, "second-hedger-", tc.points, body, tc.report, tc.calledOK)
		// Points count answers: one, whichever served; the holds of the hedges are given back.
		if usage.Get("points.used").Int() != 1 || usage.Get("points.remaining").Int() != int64(tc.points-1) {
			t.Errorf("%d points: %s, want 1 used and the rest remaining", tc.points, usage.Get("points").Raw)
		}
	}
}

// A key's failoverDefaults may hedge: an admin sets hedge_after_ms (clamped into its range), and a
// request naming the first default model is hedged with the next.
func TestAKeysDefaultsHedge(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	key := g.NewKey(t, `{"name":"hedged","failoverDefaults":{"models":["fake/hang","fake/ok"],"hedge_after_ms":1}}`)
	status, _, b := g.Call(t, "POST", "/v1/chat/completions", key, `{"model":"fake/hang","messages":[{"role":"user","content":"hi"}]}`)
	a := b.Get("secureai.failover.attempts").Array()
	if status != 200 || len(a) != 2 || a[0].Get("reason").String() != "hedge_lost" || a[1].Get("status").String() != "served" || !a[1].Get("hedge").Bool() {
		t.Fatalf("%d %s", status, b.Raw)
	}
	_, _, listed := g.Call(t, "GET", "/admin/api-keys", g.Admin, "")
	found := false
	for _, k := range listed.Get("apiKeys").Array() {
		if k.Get("name").String() == "hedged" {
			found = true
			if got := k.Get("failoverDefaults.hedge_after_ms"); got.Int() != chain.MinHedgeAfterMS {
				t.Errorf("hedge_after_ms stored as %s, want it clamped to %d", got.Raw, chain.MinHedgeAfterMS)
			}
		}
	}
	if !found {
		t.Errorf("the key is not listed: %s", listed.Raw)
	}
}

// Issue 34 item 9, through the local server: a key whose defaults retry refuses a hedged request
// saying the way out, which works; hedge_after_ms null is unset; an admin can forbid hedging for a
// key (allowHedging false: a hedged request is a 403, any other is served), and such a key's
// defaults cannot hedge.
func TestHedgingAndTheKeysSettings(t *testing.T) {
	g := gatewaykit.ServeFakes(t, "")
	chat := func(key, redundancy string) (int, gjson.Result) {
		t.Helper()
		status, _, body := g.Call(t, "POST", "/v1/chat/completions", key, gatewaykit.ChatBody(`"models":["fake/ok","other/ok"],"redundancy":`+redundancy))
		return status, body
	}
	retrying := g.NewKey(t, `{"name":"retrying","failoverDefaults":{"models":["fake/ok","other/ok"],"retry":{"attempts":2}}}`)
	status, body := chat(retrying, `{"hedge_after_ms":500}`)
	if msg := body.Get("error.message").String(); status != 400 || body.Get("error.param").String() != "redundancy.hedge_after_ms" || !strings.Contains(msg, `"retry": {"attempts": 0}`) {
		t.Errorf("a hedge on a key whose defaults retry: %d %s, want a 400 saying the way out", status, body.Raw)
	}
	if status, body := chat(retrying, `{"hedge_after_ms":500,"retry":{"attempts":0}}`); status != 200 {
		t.Errorf("the way out: %d %s", status, body.Raw)
	}
	if status, body := chat(retrying, `{"hedge_after_ms":null}`); status != 200 {
		t.Errorf("hedge_after_ms null: %d %s, want it unset", status, body.Raw)
	}

	unhedged := g.NewKey(t, `{"name":"unhedged","allowHedging":false}`)
	status, body = chat(unhedged, `{"hedge_after_ms":500}`)
	if status != 403 || body.Get("error.code").String() != "hedging_not_allowed" || body.Get("error.param").String() != "redundancy.hedge_after_ms" {
		t.Errorf("a hedge on a key that may not hedge: %d %s, want 403 hedging_not_allowed", status, body.Raw)
	}
	if status, body := chat(unhedged, `{"timeout_ms":5000}`); status != 200 {
		t.Errorf("an unhedged request of that key: %d %s", status, body.Raw)
	}
	_, _, keys := g.Call(t, "GET", "/admin/api-keys", g.Admin, "")
	allowed := map[string]gjson.Result{}
	for _, k := range keys.Get("apiKeys").Array() {
		allowed[k.Get("name").String()] = k
	}
	if allowed["unhedged"].Get("allowHedging").Bool() || !allowed["retrying"].Get("allowHedging").Bool() {
		t.Errorf("allowHedging shown as %s and %s, want false and true (the default)", allowed["unhedged"].Get("allowHedging").Raw, allowed["retrying"].Get("allowHedging").Raw)
	}
	id := allowed["unhedged"].Get("id").String()
	status, _, body = g.Call(t, "PATCH", "/admin/api-keys/"+id, g.Admin, `{"failoverDefaults":{"models":["fake/ok"],"hedge_after_ms":300}}`)
	if status != 400 || !strings.HasPrefix(body.Get("message").String(), "failoverDefaults.hedge_after_ms") {
		t.Errorf("hedging defaults on a key that may not hedge: %d %s, want 400 naming failoverDefaults.hedge_after_ms", status, body.Raw)
	}
	g.NewKey(t, `{"name":"hedging","failoverDefaults":{"models":["fake/ok","other/ok"],"hedge_after_ms":300}}`)
	_, _, keys = g.Call(t, "GET", "/admin/api-keys?name=hedging", g.Admin, "")
	status, _, body = g.Call(t, "PATCH", "/admin/api-keys/"+keys.Get("apiKeys.0.id").String(), g.Admin, `{"allowHedging":false}`)
	if status != 400 || !strings.HasPrefix(body.Get("message").String(), "allowHedging") {
		t.Errorf("forbidding hedging on a key whose defaults hedge: %d %s, want 400 naming allowHedging", status, body.Raw)
	}
	status, _, body = g.Call(t, "PATCH", "/admin/api-keys/"+keys.Get("apiKeys.0.id").String(), g.Admin, `{"allowHedging":false,"failoverDefaults":{"models":["fake/ok","other/ok"]}}`)
	if status != 200 || body.Get("apiKey.allowHedging").Bool() {
		t.Errorf("forbidding hedging with defaults that no longer hedge: %d %s", status, body.Raw)
	}
}
