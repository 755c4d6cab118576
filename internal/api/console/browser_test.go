package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/testkit/gatewaykit"
)

// EnvScreenshots names a folder to keep the browser test's screenshots in (the README's come
// from there); unset, they go to the test's temporary folder.
const EnvScreenshots = "SECUREAI_CONSOLE_SCREENSHOTS"

// newServer is the gateway as `make run` serves it (localserver.Deps on the embedded store, the
// demo provider), on a loopback port. The browser's traffic (the console's pages and its proxy) is
// not the OpenAPI document's, so it is served unvalidated.
func newServer(t *testing.T) *gatewaykit.Server {
	t.Helper()
	cat, stopDemo, err := gateway.Catalog("", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopDemo) // after the gateway (cleanups run last first)
	return gatewaykit.Serve(t, cat, gatewaykit.Env(), gatewaykit.Unvalidated())
}

// browser starts the distribution's Chromium, headless, on a fresh profile. A missing Chromium
// fails the test with how to install it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("the console's browser test needs Chromium: run `make test-tools` as root (it runs apt-get install -y chromium), " +
			"or install Debian's chromium package yourself (sudo apt-get install chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx (no timeout here)
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

func screenshotDir(t *testing.T) string {
	if dir := os.Getenv(EnvScreenshots); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

type step = chromedp.Action[chromedp.Void]

// waitText waits until the text of the element sel contains want.
func waitText(sel, want string) step {
	return waitFor(fmt.Sprintf(`(document.querySelector(%q)?.textContent || "").includes(%q)`, sel, want))
}

// waitFor waits until the JavaScript expression is truthy.
func waitFor(expr string) step {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))
}

// js runs a statement in the page.
func js(stmt string) step { return chromedp.Evaluate[chromedp.Void](stmt) }

// TestConsoleInABrowser walks the console as an operator does, in Chromium: sign in (a normal key
// refused), see the empty overview, create a key and search keys by name, use the key for a
// failover and an exhausted chain in the playground and run into a limit with another, see those
// requests and all three on the overview's charts, see a user's keys against their limits, find the failover in
// the audit log, revoke the key and see its next call refused, register a webhook receiver and
// see its delivery, see an expired session, sign out, and see the gateway with its store down and
// then unreachable. Every page is screenshotted; every request the page made is checked to carry
// no key in its URL.
func TestConsoleInABrowser(t *testing.T) {
	s := newServer(t)
	bctx := browser(t)
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	defer cancel()
	shots := screenshotDir(t)

	var mu sync.Mutex
	var urls []string
	go func() {
		for ev, err := range chromedp.Events(ctx, network.RequestWillBeSent) {
			if err != nil {
				return
			}
			mu.Lock()
			urls = append(urls, ev.Request.URL)
			mu.Unlock()
		}
	}()
	run := func(what string, steps ...step) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
			t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.textContent || ""`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		run("settle before "+name, chromedp.Sleep(150*time.Millisecond))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := func(name string) step { return chromedp.Navigate(s.URL + "/console/#" + name) }
	id := func(v string) chromedp.ID { return chromedp.ID(v) }
	css := func(v string) chromedp.CSS { return chromedp.CSS(v) }

	// A normal key is refused with a clear message; the admin key signs in.
	status, _, normal := s.Call(t, "POST", "/admin/api-keys", s.Admin, `{"name":"not an admin"}`)
	if status != http.StatusCreated {
		t.Fatalf("creating a normal key: %d %s", status, normal.Raw)
	}
	run("sign-in form", chromedp.Navigate(s.URL+"/console"), chromedp.WaitVisible(id("signin-key")))
	run("normal key refused", chromedp.SendKeys(id("signin-key"), normal.Get("secret").String()),
		chromedp.Click(css(`#signin-form button[type="submit"]`)), waitText("#signin-error", "Not an admin key"))
	shot("signin")
	run("sign in", chromedp.SendKeys(id("signin-key"), s.Admin), chromedp.Click(css(`#signin-form button[type="submit"]`)),
		chromedp.WaitVisible(id("overview")), waitText("#who", "bootstrap admin"))

	// The session cookie: HttpOnly, SameSite=Strict, with an expiry (not Secure: this is loopback).
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == console.CookieName {
			session = c
		}
	}
	switch {
	case session == nil:
		t.Fatalf("no %s cookie after signing in: %v", console.CookieName, cookies.Cookies)
	case !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Session || session.Expires <= float64(time.Now().Unix()):
		t.Errorf("session cookie flags: httpOnly %v sameSite %v session %v expires %v", session.HTTPOnly, session.SameSite, session.Session, session.Expires)
	case session.Value == s.Admin:
		t.Error("the session cookie holds the admin key itself")
	}
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie`))
	if err != nil || strings.Contains(stored, "sk-") {
		t.Errorf("a key is readable by the page's script (%v): %s", err, stored)
	}

	// Nothing has happened yet: every chart and table says so.
	run("empty overview", waitText("#ov-chart-requests", "No requests in this range."), waitText("#ov-requests", "0"),
		waitText("#ov-chart-failovers", "No failovers in this range."),
		waitText("#ov-chart-exhausted", "No exhausted chains in this range."), waitText("#ov-chart-refusals", "No limit refusals in this range."),
		waitText("#ov-models", "No failovers in this range."), waitText("#ov-breakers", "No breaker is open."), waitText("#ov-exhausted", "0"))
	shot("overview-empty")

	// Create a key; its secret is shown once.
	run("create a key", page("keys"), chromedp.WaitVisible(id("kf-name")),
		chromedp.SendKeys(id("kf-name"), "browser test key"), chromedp.Click(id("kf-submit")),
		chromedp.WaitVisible(id("key-secret")), waitText("#key-table", "browser test key"))
	secret := text("#key-secret-value")
	if !strings.HasPrefix(secret, "sk-") {
		t.Fatalf("the created key's secret shown is %q", secret)
	}
	// Issue 34 item 16: the list marks this console session as one, with its expiry; the form's
	// admin box makes an admin key.
	run("the session in the key list", waitFor(`(() => { const r = [...document.querySelectorAll("#key-table tbody tr")].find(r => r.querySelector("[data-session]"));
		return r && r.cells[3].textContent === "session" && r.cells[6].textContent !== "never" && r.cells[7].textContent.includes("End session") && !r.cells[7].textContent.includes("Edit"); })()`),
		waitFor(`[...document.querySelectorAll("#key-table tbody tr")].some(r => r.cells[0].textContent === "browser test key" && r.cells[6].textContent === "never")`))
	run("create an admin key", chromedp.SendKeys(id("kf-name"), "browser admin key"), chromedp.Click(id("kf-admin")), chromedp.Click(id("kf-submit")),
		chromedp.WaitVisible(id("key-secret")),
		waitFor(`[...document.querySelectorAll("#key-table tbody tr")].some(r => r.cells[0].textContent === "browser admin key" && r.cells[3].textContent === "yes")`))
	// A validation error appears next to its field.
	run("validation error", chromedp.SendKeys(id("kf-name"), "bad limits"), chromedp.SendKeys(id("kf-dailyLimit"), "-5"),
		chromedp.Click(id("kf-submit")), waitText(`[data-for="dailyLimit"]`, "dailyLimit"))
	shot("keys")

	// The search runs on the server, its cursor paging through the matches only: 23 keys named
	// "Search target n" among others, searched in another case, fill one page of 20 and 3 more.
	for i := range 23 {
		if status, _, k := s.Call(t, "POST", "/admin/api-keys", s.Admin, fmt.Sprintf(`{"name":"Search target %d"}`, i)); status != http.StatusCreated {
			t.Fatalf("creating a key: %d %s", status, k.Raw)
		}
	}
	rows := `document.querySelectorAll("#key-table tbody tr")`
	onlyTargets := `[...document.querySelectorAll("#key-table tbody tr")].every(r => r.cells[0].textContent.startsWith("Search target"))`
	run("search keys", chromedp.SetValue(id("key-q"), "search TARGET"), chromedp.Click(css(`#key-search button[type="submit"]`)),
		waitFor(rows+`.length === 20 && `+onlyTargets), chromedp.WaitVisible(id("key-more")), chromedp.Click(id("key-more")),
		waitFor(rows+`.length === 3 && `+onlyTargets), waitFor(`document.getElementById("key-more").hidden`))
	// From the keyboard: typed, then Enter.
	run("search with no match", js(`document.getElementById("key-q").value = ""`), chromedp.SendKeys(id("key-q"), "no such key"+kb.Enter),
		waitText("#key-table", `No key's name contains "no such key".`))
	shot("keys-search-empty")
	run("search for the new key", chromedp.SetValue(id("key-q"), "BROWSER TEST"), chromedp.Click(css(`#key-search button[type="submit"]`)),
		waitFor(rows+`.length === 1`), waitText("#key-table", "browser test key"))

	// The playground: the policy check, then the failover demo/error-500 → demo/ok with the new key.
	playground := chromedp.Steps(page("playground"), waitFor(`document.querySelectorAll("#pg-m2 option").length > 2`),
		chromedp.SetValue(id("pg-m1"), "demo/error-500"), chromedp.SetValue(id("pg-m2"), "demo/ok"),
		chromedp.SetValue(id("pg-key"), secret))
	run("policy check", playground, chromedp.Click(id("pg-check")), waitText("#pg-policy", `"allowed": true`))
	run("failover", chromedp.Click(id("pg-send")), waitText("#pg-attempts", "served"),
		waitText("#pg-attempts", "server_error"), waitFor(`document.getElementById("pg-answer").textContent.length > 0`))
	served, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("pg-answer").dataset.served`))
	if err != nil || served != "demo/ok" {
		t.Errorf("the playground's answer came from %q (%v), want demo/ok", served, err)
	}
	shot("playground")

	// The same chain through the agent surfaces: each stream's report and text reach the page.
	for _, surface := range []string{"messages", "responses"} {
		run("failover on "+surface, chromedp.SetValue(id("pg-surface"), surface), chromedp.Click(id("pg-send")),
			waitText("#pg-attempts", "server_error"), waitText("#pg-answer", "demo provider"))
		if served, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("pg-answer").dataset.served`)); err != nil || served != "demo/ok" {
			t.Errorf("%s: the playground's answer came from %q (%v), want demo/ok", surface, served, err)
		}
	}
	run("back to chat", chromedp.SetValue(id("pg-surface"), "chat"))

	// A chain whose every model fails: the caller's 502, with its attempts.
	run("exhausted chain", chromedp.SetValue(id("pg-m2"), "demo/refused"), chromedp.Click(id("pg-send")),
		waitText("#pg-error", "502"), waitText("#pg-attempts", "connection_error"))

	// A key over its daily limit: its third call is refused.
	status, _, limited := s.Call(t, "POST", "/admin/api-keys", s.Admin, `{"name":"limited key","userId":"team-console","dailyLimit":2}`)
	if status != http.StatusCreated {
		t.Fatalf("creating a limited key: %d %s", status, limited.Raw)
	}
	var codes []int
	for range 3 {
		code, _, _ := s.Call(t, "POST", "/v1/chat/completions", limited.Get("secret").String(), `{"model":"demo/ok","messages":[{"role":"user","content":"hi"}]}`)
		codes = append(codes, code)
	}
	if codes[2] != http.StatusTooManyRequests {
		t.Fatalf("the limited key's calls answered %v, want the third refused (429)", codes)
	}

	// The overview counts the seven chat requests made (the playground's failover on each of the
	// three surfaces and its exhausted chain, the limited key's two served calls and its refusal:
	// 5 served, 2 failed), the four failovers, the exhausted chain and the refusal (the audit log is written in the background,
	// the request counts every 200 ms in tests: reload until they show).
	run("overview", page("overview"), chromedp.WaitVisible(id("ov-range")),
		waitFor(`(() => { const n = (id) => document.getElementById(id)?.textContent;
			if (n("ov-requests") === "7" && n("ov-failovers") === "4" && n("ov-exhausted") === "1" && n("ov-refusals") === "1") return true;
			document.getElementById("ov-range").dispatchEvent(new Event("change")); return false; })()`),
		waitText("#ov-models", "demo/error-500"), waitText("#ov-reasons", "server_error"),
		chromedp.WaitVisible(css("#ov-chart-failovers rect.bar")), chromedp.WaitVisible(css("#ov-chart-exhausted rect.bar3")),
		chromedp.WaitVisible(css("#ov-chart-refusals rect.bar2")), chromedp.WaitVisible(css("#ov-chart-requests rect.bar4")),
		waitText("#ov-cards", "5 served, 2 failed"))
	shot("overview")
	for _, r := range []string{"hour", "week"} {
		run("overview over the last "+r, chromedp.SetValue(id("ov-range"), r), js(`document.getElementById("ov-range").dispatchEvent(new Event("change"))`),
			waitFor(`document.getElementById("ov-exhausted")?.textContent === "1" && document.getElementById("ov-refusals")?.textContent === "1" &&
				document.getElementById("ov-requests")?.textContent === "7"`))
	}
	run("overview at phone width", chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(css("#ov-chart-exhausted rect.bar3")))
	shot("overview-phone")
	run("back to desktop width", chromedp.EmulateViewport(1280, 900))

	// A user's keys against their limits: the limited key's day is full, with its reset.
	// Issue 34 item 16: every user is listed; one's id shows its record and keys.
	run("users", page("users"), chromedp.WaitVisible(id("user-id")), waitText("#user-list", "no quota"),
		waitFor(`(() => { if (document.querySelector('#user-list [data-user="team-console"]')) return true;
			const more = document.getElementById("user-list-more"); if (!more.hidden) more.click(); return false; })()`),
		chromedp.Click(css(`#user-list [data-user="team-console"]`)), waitText("#user-view", "Points"),
		waitText("#user-keys", "limited key"), waitText("#user-keys", "2 / 2"), waitText("#user-keys", "resets"),
		chromedp.WaitVisible(css("#user-keys .count.full")))
	shot("users")
	// Its budget thresholds: the defaults, changed through the panel (sorted by the API), and an
	// invalid one refused naming the field.
	run("budget thresholds", waitFor(`document.getElementById("user-thr").value === "50, 80, 100"`),
		chromedp.SetValue(id("user-thr"), "90, 40"), chromedp.Click(css(`#user-thr-form button[type="submit"]`)),
		waitFor(`document.getElementById("user-thr").value === "40, 90"`), waitText("#user-thr-events", "No threshold reached lately"),
		chromedp.SetValue(id("user-thr"), "150"), chromedp.Click(css(`#user-thr-form button[type="submit"]`)),
		waitText("#user-thr-error", "budgetThresholds"))
	run("unknown user", chromedp.SetValue(id("user-id"), "nobody-here"), chromedp.Click(css(`#user-form button[type="submit"]`)),
		waitText("#user-error", "nobody-here"))

	// The audit page shows the failover; its request id filters to the request's entries.
	run("audit", page("audit"), waitFor(`document.querySelectorAll("#af-type option").length > 2`),
		chromedp.SetValue(id("af-type"), "api:model_failover"), chromedp.Click(css(`#audit-form button[type="submit"]`)),
		// The filtered table, not the one before it (which lists the failover too, among others).
		waitFor(`(() => { const rows = [...document.querySelectorAll("#audit-table tbody tr")];
			return rows.length > 0 && rows.every(r => r.cells.length > 1 && r.cells[1].textContent === "api:model_failover"); })()`),
		chromedp.Click(css(`#audit-table tbody td:nth-child(5) button`)),
		waitFor(`document.getElementById("af-search").value.length > 0`), waitText("#audit-table", "api:model_failover"),
		js(`[...document.querySelectorAll("#audit-table tbody tr")].find(r => r.cells[1].textContent === "api:model_failover").cells[5].querySelector("button").click()`),
		waitText("#audit-detail", `"failedModel": "demo/error-500"`))
	shot("audit")

	// Issue 34 item 16: the playground's redundancy options reach the request — a hedge after
	// 500 ms beside a model that is slow to its first token — and Send runs the policy check too.
	run("hedged", playground, js(`document.getElementById("pg-policy").textContent = ""`),
		chromedp.SetValue(id("pg-m1"), "demo/slow-first-token"), chromedp.SetValue(id("pg-m2"), "demo/ok"),
		chromedp.SendKeys(id("pg-hedge"), "500"), chromedp.SetValue(id("pg-retry"), "0"), chromedp.SetValue(id("pg-interrupt"), "resume"),
		chromedp.Click(id("pg-skip")), chromedp.Click(id("pg-send")),
		waitText("#pg-attempts", "hedge_lost"), waitText("#pg-attempts", "(hedge)"), waitText("#pg-policy", `"allowed": true`))
	run("hedging off again", js(`document.getElementById("pg-hedge").value = ""`), chromedp.SetValue(id("pg-retry"), ""),
		chromedp.SetValue(id("pg-interrupt"), ""), chromedp.Click(id("pg-skip")))

	// Revoke the key (confirming), then its next call in the playground is refused.
	run("revoke", page("keys"), waitText("#key-table", "browser test key"), js(`window.confirm = () => true`),
		js(`[...document.querySelectorAll("#key-table tbody tr")].find(r => r.cells[0].textContent === "browser test key").querySelector("[data-revoke]").click()`),
		waitFor(`[...document.querySelectorAll("#key-table tbody tr")].some(r => r.cells[0].textContent === "browser test key" && r.cells[5].textContent === "revoked")`))
	run("revoked key refused", playground, chromedp.Click(id("pg-send")), waitText("#pg-error", "401"))

	// A webhook receiver on loopback gets the test event.
	received := make(chan http.Header, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-SecureAI-Event") != "webhook:test" {
			return // the endpoint takes every event ("*"); only the test one is awaited
		}
		select {
		case received <- r.Header.Clone():
		default:
		}
	}))
	defer receiver.Close()
	run("webhook", page("webhooks"), chromedp.WaitVisible(id("wh-url")),
		chromedp.SendKeys(id("wh-url"), receiver.URL+"/hook"), chromedp.Click(css(`#wh-form button[type="submit"]`)),
		chromedp.WaitVisible(id("wh-secret")), waitText("#wh-table", receiver.URL),
		js(`[...document.querySelectorAll("#wh-table button")].find(b => b.textContent === "Send test").click()`),
		waitText("#wh-deliveries", "webhook:test"), waitText("#wh-deliveries", "200"))
	select {
	case h := <-received:
		if h.Get("X-SecureAI-Event") != "webhook:test" {
			t.Errorf("the receiver got event %q", h.Get("X-SecureAI-Event"))
		}
	case <-time.After(10 * time.Second):
		t.Error("the webhook receiver got nothing")
	}
	// A receiver that fails: its deliveries show the failed attempt and when the retry is due
	// (every console action is an event, so its first delivery comes without being asked for).
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer failing.Close()
	run("failing webhook", chromedp.SendKeys(id("wh-url"), failing.URL+"/down"), chromedp.Click(css(`#wh-form button[type="submit"]`)),
		waitText("#wh-table", failing.URL),
		waitFor(`(() => { if ([...document.querySelectorAll("#wh-deliveries tbody tr")].some(r => r.cells[3].textContent === "failed" && r.cells[4].textContent === "503" && r.cells[6].textContent !== "—")) return true;
			[...document.querySelectorAll("#wh-table tbody tr")].find(r => r.cells[0].textContent.endsWith("/down")).querySelector("button").click(); return false; })()`))
	shot("webhooks")
	run("breakers", page("breakers"), chromedp.WaitVisible(id("br-id")), chromedp.SendKeys(id("br-id"), "team-console"),
		chromedp.SetValue(id("br-type"), "user"), chromedp.SendKeys(id("br-reason"), "browser test"),
		chromedp.Click(css(`#br-form button[type="submit"]`)), waitText("#br-table", "user:team-console"))
	shot("breakers")

	// A session that ends sends the operator back to the sign-in form, saying so. (An admin
	// revokes it through the admin API, as a day's wait would expire it: a session's expiry
	// cannot change.)
	status, _, sessions := s.Call(t, "GET", "/admin/api-keys?name=console%20session&limit=200", s.Admin, "")
	var sessionID string
	for _, k := range sessions.Get("apiKeys").Array() {
		if p := k.Get("prefix").String(); p != "" && strings.HasPrefix(session.Value, p) && !k.Get("revokedAt").Exists() {
			sessionID = k.Get("id").String()
		}
	}
	if status != http.StatusOK || sessionID == "" {
		t.Fatalf("finding the session's key: %d %s", status, sessions.Raw)
	}
	if status, _, k := s.Call(t, "DELETE", "/admin/api-keys/"+sessionID, s.Admin, ""); status != http.StatusOK {
		t.Fatalf("revoking the session: %d %s", status, k.Raw)
	}
	run("ended session", page("keys"), chromedp.WaitVisible(id("signin-key")), waitText("#signin-error", "Session expired"),
		waitText("#signin-error", "sign in again"), waitFor(`getComputedStyle(document.getElementById("nav")).display === "none"`))
	shot("session-expired")
	run("sign in again", chromedp.SendKeys(id("signin-key"), s.Admin), chromedp.Click(css(`#signin-form button[type="submit"]`)),
		chromedp.WaitVisible(id("keys")), waitText("#key-table", "browser test key"))
	cookies, err = chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies.Cookies {
		if c.Name == console.CookieName {
			session = c
		}
	}

	// Sign out ends the session on the server: its cookie no longer works anywhere.
	run("sign out", chromedp.Click(id("signout")), chromedp.WaitVisible(id("signin-key")), waitText("#signin-error", "Signed out."))
	req, _ := http.NewRequest("GET", s.URL+"/console/api/admin/api-keys", nil)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: session.Value})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out session's cookie still gets %d", res.StatusCode)
	}

	// Every change made in the console is an audit entry naming it (written in the background:
	// the last ones may take a moment).
	wanted := []string{"sign_in ", "sign_out ", "request POST /admin/api-keys", "request POST /v1/chat/completions",
		"request POST /policy-check", "request DELETE /admin/api-keys/", "request POST /admin/webhooks", "request POST /admin/circuit-breakers"}
	var missing []string
	var all string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status, _, logs := s.Call(t, "GET", "/admin/audit-logs?type=admin:console_action&limit=200", s.Admin, "")
		if status != http.StatusOK {
			t.Fatalf("audit query: %d %s", status, logs.Raw)
		}
		var got []string
		for _, e := range logs.Get("logs").Array() {
			got = append(got, e.Get("metadata.data.action").String()+" "+e.Get("metadata.data.target.id").String())
		}
		all, missing = strings.Join(got, "\n"), nil
		for _, want := range wanted {
			if !strings.Contains(all, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Errorf("no console audit entries %q among:\n%s", missing, all)
	}

	// The store goes down under a signed-in console: the page says what failed and what to do.
	run("sign in for the outage", chromedp.SendKeys(id("signin-key"), s.Admin), chromedp.Click(css(`#signin-form button[type="submit"]`)),
		chromedp.WaitVisible(id("nav")), js(`location.hash = "#audit"`), chromedp.WaitVisible(id("audit-form")))
	if err := s.Store.Close(); err != nil {
		t.Fatalf("closing the store: %v", err)
	}
	run("store down", js(`location.hash = "#keys"`), chromedp.WaitVisible(id("banner")),
		waitText("#banner", "The gateway could not load this page (5"), waitText("#banner", "try again"),
		waitText("#key-table", "Not loaded"), waitFor(`document.getElementById("key-more").hidden`))
	shot("store-down")

	// The gateway stops: the page says it cannot reach it.
	s.Stop()
	run("gateway unreachable", js(`location.hash = "#webhooks"`), waitText("#banner", "Cannot reach the gateway"))
	shot("unreachable")

	// No request the console made carried a key in its URL.
	cancel()
	mu.Lock()
	defer mu.Unlock()
	if len(urls) < 10 {
		t.Errorf("only %d requests recorded", len(urls))
	}
	for _, u := range urls {
		if strings.Contains(u, "sk-") || strings.Contains(u, s.Admin[3:]) || strings.Contains(u, secret[3:]) {
			t.Errorf("a request URL carries a key: %s", u)
		}
	}
}
