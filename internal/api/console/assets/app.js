// The console's one script: a hash router over the sections of index.html, each page a small
// loader that calls the gateway's API through /console/api/ (the session cookie authenticates;
// no key is ever kept in the browser). Every value from the API is written with textContent.
const $ = (id) => document.getElementById(id);
const PAGE = 20; // rows per page load: about one screen at 1280×900

class APIError extends Error {
  constructor(status, body) {
    super((body && (body.message || body.error?.message || body.error)) || `HTTP ${status}`);
    this.status = status; this.body = body;
  }
}

// api calls the gateway through the console; key, when given, is sent as the Authorization
// header (the playground's "call as"), never in the URL.
async function api(method, path, body, key) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers["Authorization"] = "Bearer " + key;
  let res;
  try {
    res = await fetch("api/" + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  } catch (e) {
    throw new APIError(0, { message: "the gateway did not answer (" + e.message + ")" });
  }
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    if (res.status === 401 && (data.error === "Session expired" || data.error === "Not signed in")) sessionEnded(`${data.error}: ${data.message}`);
    throw new APIError(res.status, data);
  }
  return data;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") e.addEventListener("click", v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return e;
}

function table(id, headers, rows, empty) {
  const t = $(id);
  t.replaceChildren();
  if (!rows.length) { t.append(el("tr", {}, el("td", { class: "empty" }, empty))); return; }
  t.append(el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { scope: "col" }, h)))));
  const tb = el("tbody");
  for (const r of rows) tb.append(el("tr", {}, ...r.map((c) => el("td", {}, c))));
  t.append(tb);
}

function banner(msg) { const b = $("banner"); b.textContent = msg || ""; b.hidden = !msg; }
const fmtTime = (s) => (s ? new Date(s).toLocaleString() : "");
const list = (s) => s.split(",").map((x) => x.trim()).filter(Boolean);

// showFieldErrors puts an API validation message next to the field it names.
function showFieldErrors(form, err, fallback) {
  form.querySelectorAll(".error[data-for]").forEach((e) => (e.textContent = ""));
  const msg = err.message;
  const names = [...form.querySelectorAll(".error[data-for]")].map((e) => e.dataset.for).sort((a, b) => b.length - a.length);
  const hit = names.find((n) => msg.includes(n));
  if (hit) form.querySelector(`.error[data-for="${hit}"]`).textContent = msg;
  else $(fallback).textContent = msg;
}

async function copy(id) {
  try { await navigator.clipboard.writeText($(id).textContent); } catch { /* clipboard refused: the text is selectable */ }
}

// ---------- session ----------
function sessionEnded(message) {
  $("nav").hidden = true; $("signout").hidden = true; $("who").textContent = "";
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== "signin";
  $("signin-error").textContent = message || "";
}

// session calls the console's own session route; a gateway that does not answer is an APIError
// with status 0, as in api().
async function session(method, body) {
  try {
    return await fetch("session", { method, credentials: "same-origin", ...(body && { headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }) });
  } catch (e) {
    throw new APIError(0, { message: "the gateway did not answer (" + e.message + ")" });
  }
}

async function startSession() {
  banner("");
  let res;
  try { res = await session("GET"); } catch (e) { sessionEnded(""); banner("Cannot reach the gateway: " + e.message + ". Reload the page to try again."); return; }
  const d = await res.json().catch(() => ({}));
  if (!res.ok) {
    sessionEnded(res.status === 401 && d.error !== "Not signed in" ? `${d.error}: ${d.message}` : "");
    if (res.status !== 401) banner(`${d.error || "Error " + res.status}: ${d.message || "the console could not check your session"}. Reload the page to try again.`);
    return;
  }
  $("who").textContent = `Signed in: ${d.name} (until ${fmtTime(d.expiresAt)})`;
  $("nav").hidden = false; $("signout").hidden = false;
  route();
}

$("signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("signin-key"); const key = input.value.trim(); input.value = "";
  $("signin-error").textContent = "";
  let res;
  try { res = await session("POST", { key }); } catch (e) { $("signin-error").textContent = e.message; return; }
  const d = await res.json().catch(() => ({}));
  if (!res.ok) { $("signin-error").textContent = `${d.error || "Error"}: ${d.message || res.status}`; return; }
  if (!location.hash) location.hash = "#overview";
  startSession();
});

// Sign-out says what happened: signed out (or the session had ended already), or — the session
// still alive on the server — that it failed, with the page kept to try again.
$("signout").addEventListener("click", async () => {
  let res;
  try { res = await session("DELETE"); } catch (e) { banner("Sign-out failed: " + e.message); return; }
  if (res.ok) return sessionEnded("Signed out.");
  const d = await res.json().catch(() => ({}));
  if (res.status === 401) return sessionEnded("Signed out (your session had already ended).");
  banner(`Sign-out failed: ${d.error || "Error " + res.status}: ${d.message || "try again"}. You are still signed in.`);
});

// ---------- router ----------
const pages = { overview, keys, users, webhooks, audit, breakers, playground };
async function route() {
  const name = (location.hash || "#overview").slice(1);
  const page = pages[name] ? name : "overview";
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== page;
  for (const a of document.querySelectorAll("nav a")) {
    if (a.getAttribute("href") === "#" + page) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  banner("");
  // A secret is shown once: leaving its page forgets it.
  for (const b of document.querySelectorAll(".secret")) { b.hidden = true; b.querySelector("code").textContent = ""; }
  try { await pages[page](); } catch (e) {
    if (e instanceof APIError && e.status === 401) return;
    banner(loadError(e));
    // What an earlier load showed is no longer known to be true: say so instead of showing it.
    for (const t of $(page).querySelectorAll("table")) t.replaceChildren(el("tr", {}, el("td", { class: "empty" }, "Not loaded: see the message above.")));
    for (const b of $(page).querySelectorAll('button[id$="-more"]')) b.hidden = true;
  }
}
// loadError tells an operator what a failed page load means: the gateway unreachable, its store
// down (a 5xx: try again), or the API's own message.
function loadError(e) {
  if (e instanceof APIError && e.status === 0) return "Cannot reach the gateway: " + e.message + ". Check that it is running, then reload.";
  if (e instanceof APIError && e.status >= 500) return `The gateway could not load this page (${e.status}): ${e.message}. Its store may be down; try again in a moment.`;
  return "Could not load this page: " + e.message;
}
window.addEventListener("hashchange", () => { if (!$("nav").hidden) route(); });

// ---------- overview ----------
// Each chart reads one event type of the audit log over the range, at most AUDIT_PAGES pages of
// 200: past that the count is a floor, and the page says so rather than under-report quietly.
const RANGES = { hour: [3600e3, 12], day: [86400e3, 24], week: [7 * 86400e3, 7] };
const AUDIT_PAGES = 5;
async function auditSince(type, since) {
  let logs = [], cursor = "";
  for (let i = 0; i < AUDIT_PAGES; i++) {
    const q = new URLSearchParams({ type, startDate: new Date(since).toISOString(), limit: "200" });
    if (cursor) q.set("cursor", cursor);
    const d = await api("GET", "admin/audit-logs?" + q);
    logs = logs.concat(d.logs || []);
    cursor = d.pagination?.nextCursor;
    if (!cursor) return { logs, more: false };
  }
  return { logs, more: true };
}

const SERIES = [
  { id: "failovers", type: "api:model_failover", label: "Failovers", cls: "bar" },
  { id: "exhausted", type: "api:chain_exhausted", label: "Exhausted chains", cls: "bar3" },
  // One limit event stands for its refusals (one event per key, limit and window).
  { id: "refusals", type: "api:limit_reached", label: "Limit refusals", cls: "bar2", weight: (e) => e.metadata?.data?.refusals || 1 },
];

// Requests come from the gateway's request counts (GET /admin/stats/requests: minute buckets for
// the hour, hour buckets for the day and week), which every process writes once a minute.
const REQUESTS = { id: "requests", label: "Requests", cls: "bar4" };
function requestsChart(d) {
  const b = d.buckets || [], step = d.resolution === "hour" ? 3600e3 : 60e3;
  chart($("ov-chart-requests"), REQUESTS, b.map((x) => x.total), b.length ? new Date(b[0].start).getTime() : Date.now(), step, false);
  return el("div", { class: "card" }, el("b", { id: "ov-requests" }, String(d.total)), `requests (${d.served} served, ${d.failed} failed)`);
}

async function overview() {
  const range = $("ov-range").value, [span, buckets] = RANGES[range];
  const since = Date.now() - span, step = span / buckets;
  const [br, stats, ...read] = await Promise.all([api("GET", "admin/circuit-breakers"), api("GET", "admin/stats/requests?range=" + range),
    ...SERIES.map((s) => auditSince(s.type, since))]);
  const slot = (t) => Math.max(0, Math.min(buckets - 1, Math.floor((new Date(t).getTime() - since) / step)));
  const cards = [requestsChart(stats)];
  SERIES.forEach((s, i) => {
    const counts = new Array(buckets).fill(0);
    for (const e of read[i].logs) counts[slot(e.timestamp)] += s.weight ? s.weight(e) : 1;
    const total = counts.reduce((a, b) => a + b, 0), floor = read[i].more ? "≥ " : "";
    cards.push(el("div", { class: "card" }, el("b", { id: "ov-" + s.id }, floor + total), s.label));
    chart($("ov-chart-" + s.id), s, counts, since, step, read[i].more);
  });
  const fails = read[0].logs, byModel = {}, byReason = {};
  for (const e of fails) {
    const d = e.metadata?.data || {};
    byModel[d.failedModel] = (byModel[d.failedModel] || 0) + 1;
    byReason[d.reason] = (byReason[d.reason] || 0) + 1;
  }
  const requests = new Set(fails.map((e) => e.metadata?.requestId)).size;
  cards.splice(2, 0, el("div", { class: "card" }, el("b", {}, String(requests)), "requests that failed over"));
  cards.push(el("div", { class: "card" }, el("b", {}, String((br.circuitBreakers || []).length)), "open breakers"));
  $("ov-cards").replaceChildren(...cards);
  const sorted = (o) => Object.entries(o).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, String(v)]);
  table("ov-models", ["Failed model", "Failovers"], sorted(byModel), "No failovers in this range.");
  table("ov-reasons", ["Reason", "Failovers"], sorted(byReason), "No failovers in this range.");
  table("ov-breakers", ["Subject", "Reason", "Opened", "Closes"], (br.circuitBreakers || []).map((b) => [b.subject, b.reason || "", fmtTime(b.openedAt), b.closesAt ? fmtTime(b.closesAt) : "when closed"]), "No breaker is open.");
}
$("ov-range").addEventListener("change", () => route());

// chart draws one series' count per time slot as an SVG bar chart (its numbers also in the
// label, for screen readers), or says the range had none.
function chart(box, series, counts, since, step, more) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (!total) { box.replaceChildren(el("p", { class: "empty" }, `No ${series.label.toLowerCase()} in this range.`)); return; }
  const NS = "http://www.w3.org/2000/svg", W = 600, H = 120, pad = 24;
  const max = Math.max(...counts), bw = (W - pad) / counts.length, gap = Math.min(2, bw / 4);
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H + 20}`); svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${series.label} per slot: ${counts.join(", ")}`);
  const add = (tag, attrs, text) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text) e.textContent = text; svg.append(e); return e; };
  add("text", { x: 0, y: 10 }, String(max));
  counts.forEach((v, i) => {
    const x = pad + i * bw, h = (v / max) * (H - 14);
    if (v) add("rect", { class: series.cls, x: x + gap, y: H - h, width: bw - 2 * gap, height: h }).append(Object.assign(document.createElementNS(NS, "title"), { textContent: `${v} ${series.label.toLowerCase()}` }));
    if (i % Math.ceil(counts.length / 6) === 0) add("text", { x, y: H + 14 }, new Date(since + i * step).toLocaleString([], { month: "numeric", day: "numeric", hour: "2-digit", minute: "2-digit" }));
  });
  box.replaceChildren(svg);
  if (more) box.append(el("p", { class: "hint" }, `More than ${AUDIT_PAGES * 200} events in this range: the chart shows the latest ${AUDIT_PAGES * 200}; narrow the range, or filter the audit log.`));
}

// ---------- keys ----------
// The search runs on the server (GET /admin/api-keys?name=…): the cursor pages through the
// matches, so "Next page" continues the same search.
let keyCursor = "", keyTerm = "";
async function keys(append) {
  if (!append) keyTerm = $("key-q").value.trim();
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (keyTerm) q.set("name", keyTerm);
  if (append && keyCursor) q.set("cursor", keyCursor);
  const d = await api("GET", "admin/api-keys?" + q);
  keyCursor = d.nextCursor || "";
  $("key-more").hidden = !keyCursor;
  // A console session (sessionOf: the key that opened it) is marked as one, with its expiry: it is
  // no admin key of its own, and ends with that key or at its expiry.
  table("key-table", ["Name", "Id", "Prefix", "Admin", "Limits", "Status", "Expires", ""], (d.apiKeys || []).map((k) => [
    k.sessionOf ? el("span", {}, k.name, " ", el("small", { class: "tag", "data-session": k.sessionOf, title: "opened by " + k.sessionOf }, "console session")) : k.name,
    k.id, k.prefix, k.admin ? (k.sessionOf ? "session" : "yes") : "",
    `${k.dailyLimit ?? "∞"}/day, ${k.monthlyLimit ?? "∞"}/month, ${k.rateLimit?.requestsPerMinute ?? "∞"}/min`,
    k.revokedAt ? "revoked" : k.expiresAt && new Date(k.expiresAt) < new Date() ? "expired" : "active",
    k.expiresAt ? fmtTime(k.expiresAt) : "never",
    k.revokedAt ? "" : el("span", {}, k.sessionOf ? "" : el("button", { type: "button", class: "link", onclick: () => editKey(k) }, "Edit"),
      el("button", { type: "button", class: "link", "data-revoke": k.id, onclick: () => revokeKey(k) }, k.sessionOf ? "End session" : "Revoke")),
  ]), keyTerm ? `No key's name contains "${keyTerm}".` : "No keys yet.");
}
$("key-search").addEventListener("submit", (e) => { e.preventDefault(); keys().catch((x) => banner(x.message)); });
$("key-more").addEventListener("click", () => keys(true).catch((e) => banner(e.message)));

function editKey(k) {
  $("kf-id").value = k.id; $("kf-name").value = k.name; $("kf-userId").value = k.userId || "";
  $("kf-dailyLimit").value = k.dailyLimit ?? ""; $("kf-monthlyLimit").value = k.monthlyLimit ?? "";
  $("kf-rpm").value = k.rateLimit?.requestsPerMinute ?? "";
  $("kf-allowedModels").value = (k.allowedModels || []).join(", ");
  $("kf-allowedSMLTPPolicies").value = (k.allowedSMLTPPolicies || []).join(", ");
  $("kf-failoverDefaults").value = k.failoverDefaults ? JSON.stringify(k.failoverDefaults) : "";
  $("kf-admin").checked = !!k.admin; $("kf-allowHedging").checked = k.allowHedging !== false;
  $("key-form").dataset.admin = String(!!k.admin); $("key-form").dataset.allowHedging = String(k.allowHedging !== false);
  $("key-form-title").textContent = "Edit " + k.name; $("kf-submit").textContent = "Save"; $("kf-cancel").hidden = false;
  $("kf-name").focus();
}
function resetKeyForm() {
  $("key-form").reset(); $("kf-id").value = ""; delete $("key-form").dataset.admin; delete $("key-form").dataset.allowHedging;
  $("key-form-title").textContent = "Create a key"; $("kf-submit").textContent = "Create key"; $("kf-cancel").hidden = true;
}
$("kf-cancel").addEventListener("click", resetKeyForm);

async function revokeKey(k) {
  if (!confirm(`Revoke the key "${k.name}" (${k.id})? Calls with it are refused from now on.`)) return;
  try { await api("DELETE", "admin/api-keys/" + encodeURIComponent(k.id)); await keys(); } catch (e) { banner("Revoke failed: " + e.message); }
}

$("key-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target, id = $("kf-id").value;
  const body = {}, num = (v) => (v.trim() === "" ? undefined : Number(v));
  body.name = $("kf-name").value.trim();
  if ($("kf-userId").value.trim()) body.userId = $("kf-userId").value.trim();
  for (const [k, input] of [["dailyLimit", "kf-dailyLimit"], ["monthlyLimit", "kf-monthlyLimit"]]) { const v = num($(input).value); if (v !== undefined) body[k] = v; }
  const rpm = num($("kf-rpm").value); if (rpm !== undefined) body.rateLimit = { requestsPerMinute: rpm };
  if ($("kf-allowedModels").value.trim()) body.allowedModels = list($("kf-allowedModels").value);
  if ($("kf-allowedSMLTPPolicies").value.trim()) body.allowedSMLTPPolicies = list($("kf-allowedSMLTPPolicies").value);
  // The boxes: on a new key, only what differs from the defaults (no admin, may hedge); on an
  // edit, only what changed (so saving a form never demotes or promotes a key by accident).
  for (const [k, box] of [["admin", "kf-admin"], ["allowHedging", "kf-allowHedging"]]) {
    const was = f.dataset[k], now = $(box).checked;
    if (id ? was !== undefined && was !== String(now) : now !== (k === "allowHedging")) body[k] = now;
  }
  const fd = $("kf-failoverDefaults").value.trim();
  f.querySelectorAll(".error").forEach((e) => (e.textContent = ""));
  if (fd) { try { body.failoverDefaults = JSON.parse(fd); } catch { f.querySelector('[data-for="failoverDefaults"]').textContent = "failoverDefaults is not valid JSON"; return; } }
  try {
    if (id) { await api("PATCH", "admin/api-keys/" + encodeURIComponent(id), body); resetKeyForm(); }
    else {
      const d = await api("POST", "admin/api-keys", body);
      $("key-secret-value").textContent = d.secret || d.apiKey?.secret || d.key || "";
      $("key-secret").hidden = false; f.reset();
    }
    await keys();
  } catch (e) { showFieldErrors(f, e, "kf-error"); }
});
$("key-secret-copy").addEventListener("click", () => copy("key-secret-value"));

// ---------- users & usage ----------
// A user's billing record, then each of the user's keys against its request limits (GET
// /admin/api-keys/{id}/usage): used of limit per window and when the window resets.
let userCursor = "", userListCursor = "";
async function users() {
  await listUsers();
  if ($("user-id").value.trim()) await showUser();
}
// listUsers shows every user (GET /admin/users), a page at a time; a user's id shows its record
// and keys below.
async function listUsers(append) {
  $("user-list-more").hidden = true; // one page at a time
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (append && userListCursor) q.set("cursor", userListCursor);
  const d = await api("GET", "admin/users?" + q);
  userListCursor = d.nextCursor || "";
  $("user-list-more").hidden = !userListCursor;
  const rows = (d.users || []).map((u) => [
    el("button", { type: "button", class: "link", "data-user": u.id, onclick: () => { $("user-id").value = u.id; showUser().catch((e) => ($("user-error").textContent = e.message)); } }, u.id),
    u.points.monthlyAllowance === null ? `${u.points.used} used (no quota)` : `${u.points.used} / ${u.points.monthlyAllowance}`,
    u.usageByModel.enabled ? `$${u.usageByModel.currentSpend.toFixed(2)} / $${u.usageByModel.dollarLimit.toFixed(2)}` : "off",
    fmtTime(u.createdAt)]);
  if (append) {
    const tbody = $("user-list").querySelector("tbody");
    for (const r of rows) tbody.append(el("tr", {}, ...r.map((c) => el("td", {}, c))));
    return;
  }
  table("user-list", ["User", "Points this month", "Usage by model", "Created"], rows, "No users yet: a key's user is created with the key.");
}
$("user-list-more").addEventListener("click", () => listUsers(true).catch((e) => banner(e.message)));
async function showUser(append) {
  const id = $("user-id").value.trim();
  $("user-error").textContent = "";
  if (!append) {
    userCursor = "";
    const d = await api("GET", "admin/users/" + encodeURIComponent(id));
    const u = d.user, p = u.points, m = u.usageByModel;
    table("user-view", ["Field", "Value"], [
      ["Points", p.monthlyAllowance === null ? `${p.used} used this month (no quota)` : `${p.used} used of ${p.monthlyAllowance} this month (${p.remaining} left)`],
      ["Points renew", `${fmtTime(p.nextRenewal)} (day ${p.renewalDay} of each month)`],
      ["Usage by model", m.enabled ? "enabled" : "off"],
      ["Budget (USD)", `${m.currentSpend.toFixed(2)} spent of ${m.dollarLimit.toFixed(2)} (${m.remainingBudget.toFixed(2)} left)`]], "");
    await showThresholds(id, u.budgetThresholds || []);
  }
  const q = new URLSearchParams({ userId: id, limit: String(PAGE) });
  if (append && userCursor) q.set("cursor", userCursor);
  const d = await api("GET", "admin/api-keys?" + q);
  userCursor = d.nextCursor || "";
  $("user-keys-more").hidden = !userCursor;
  const usage = await Promise.all((d.apiKeys || []).map((k) => api("GET", `admin/api-keys/${encodeURIComponent(k.id)}/usage`).then((r) => r.usage)));
  $("user-keys-title").hidden = false;
  table("user-keys", ["Key", "Per minute", "Per hour", "Today", "This month"], usage.map((u) => [
    u.name, win(u.rate_limit.requests_per_minute), win(u.rate_limit.requests_per_hour), win(u.daily), win(u.monthly)]),
  "This user has no keys.");
}
// showThresholds is the user's budget thresholds, editable, and the crossings announced lately
// (the billing:budget_threshold entries of the audit log).
async function showThresholds(id, thresholds) {
  $("user-thr").value = thresholds.join(", ");
  $("user-thr-title").hidden = false; $("user-thr-form").hidden = false; $("user-thr-error").textContent = "";
  const q = new URLSearchParams({ type: "billing:budget_threshold", userId: id, limit: "20" });
  const d = await api("GET", "admin/audit-logs?" + q);
  table("user-thr-events", ["When", "Budget", "Threshold", "Spend of limit"], (d.logs || []).map((e) => {
    const x = e.metadata?.data || {};
    const spend = x.budget === "dollars" ? `$${(x.spendDollars || 0).toFixed(2)} of $${(x.limitDollars || 0).toFixed(2)}` : `${x.spend} of ${x.limit} points`;
    return [fmtTime(e.timestamp), x.budget, `${x.threshold} %`, spend];
  }), "No threshold reached lately.");
}
$("user-thr-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const id = $("user-id").value.trim();
  const list = $("user-thr").value.split(",").map((v) => v.trim()).filter((v) => v !== "").map(Number);
  try {
    const d = await api("PATCH", "admin/users/" + encodeURIComponent(id), { budgetThresholds: list });
    await showThresholds(id, d.user.budgetThresholds || []);
  } catch (e) { if (e.status !== 401) $("user-thr-error").textContent = e.message; }
});

// win is one window's cell: used of limit, marked near (≥ 80 %) or at the limit, with its reset.
function win(w) {
  const cell = el("span", {}, el("span", { class: "count" }, w.limit === null ? `${w.used} (no limit)` : `${w.used} / ${w.limit}`),
    el("br"), el("small", { class: "hint" }, "resets " + fmtTime(w.reset_time)));
  if (w.limit !== null && w.used >= w.limit) cell.firstChild.className = "count full";
  else if (w.limit !== null && w.used >= 0.8 * w.limit) cell.firstChild.className = "count near";
  return cell;
}
$("user-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  showUser().catch((e) => {
    if (e.status === 401) return;
    $("user-view").replaceChildren(); $("user-keys").replaceChildren(); $("user-keys-title").hidden = true; $("user-keys-more").hidden = true;
    $("user-thr-events").replaceChildren(); $("user-thr-title").hidden = true; $("user-thr-form").hidden = true;
    $("user-error").textContent = e.message;
  });
});
$("user-keys-more").addEventListener("click", () => showUser(true).catch((e) => banner(e.message)));

// ---------- webhooks ----------
let catalog = [];
async function webhooks() {
  const d = await api("GET", "admin/webhooks");
  catalog = d.eventCatalog || [];
  table("wh-table", ["URL", "Events", "Enabled", "Failures", ""], (d.webhooks || []).map((w) => [
    w.url, (w.events || []).join(", "), w.enabled ? "yes" : "no" + (w.disabledReason ? ` (${w.disabledReason})` : ""), String(w.consecutiveFailures || 0),
    el("span", {},
      el("button", { type: "button", class: "link", onclick: () => deliveries(w) }, "Deliveries"),
      el("button", { type: "button", class: "link", onclick: () => whAction(w, "POST", "/test") }, "Send test"),
      el("button", { type: "button", class: "link", onclick: () => rotate(w) }, "Rotate secret"),
      el("button", { type: "button", class: "link", onclick: () => whAction(w, "PATCH", "", { enabled: !w.enabled }) }, w.enabled ? "Disable" : "Enable")),
  ]), "No webhook endpoints yet.");
}
async function whAction(w, method, suffix, body) {
  try { await api(method, "admin/webhooks/" + encodeURIComponent(w.id) + suffix, body); await webhooks(); if (suffix === "/test") await deliveries(w); }
  catch (e) { banner(e.message); if (suffix === "/test") await deliveries(w); }
}
async function rotate(w) {
  if (!confirm(`Rotate the signing secret of ${w.url}? The old one keeps signing for a day.`)) return;
  try { const d = await api("POST", "admin/webhooks/" + encodeURIComponent(w.id) + "/rotate-secret", {}); $("wh-secret-value").textContent = d.webhook.secret; $("wh-secret").hidden = false; }
  catch (e) { banner(e.message); }
}
async function deliveries(w) {
  const d = await api("GET", `admin/webhooks/${encodeURIComponent(w.id)}/deliveries?limit=${PAGE}`);
  $("wh-deliveries-title").textContent = "Deliveries to " + w.url;
  table("wh-deliveries", ["When", "Event", "Attempt", "Status", "Response", "Latency", "Next retry", "Error"], (d.deliveries || []).map((a) => [
    fmtTime(a.at), a.eventType, String(a.attempt), a.status, a.statusCode ? String(a.statusCode) : "—", a.latencyMs + " ms",
    a.nextAttemptAt ? fmtTime(a.nextAttemptAt) : "—", a.error || ""]), "No deliveries yet.");
}
$("wh-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target;
  try {
    const d = await api("POST", "admin/webhooks", { url: $("wh-url").value.trim(), description: $("wh-desc").value, events: list($("wh-events").value), enabled: true });
    $("wh-secret-value").textContent = d.webhook.secret; $("wh-secret").hidden = false; f.reset(); $("wh-error").textContent = "";
    await webhooks();
  } catch (e) { showFieldErrors(f, e, "wh-error"); }
});
$("wh-secret-copy").addEventListener("click", () => copy("wh-secret-value"));

// ---------- audit ----------
let auditCursor = "";
async function audit(append) {
  if ($("af-type").options.length === 1) {
    const d = await api("GET", "admin/webhooks");
    for (const t of d.eventCatalog || []) $("af-type").append(el("option", {}, t));
  }
  const q = new URLSearchParams({ limit: String(PAGE) });
  for (const [name, id] of [["type", "af-type"], ["severity", "af-severity"], ["startDate", "af-start"], ["endDate", "af-end"], ["userId", "af-user"], ["apiKeyId", "af-key"], ["search", "af-search"]]) {
    if ($(id).value) q.set(name, $(id).value);
  }
  if (append && auditCursor) q.set("cursor", auditCursor);
  $("audit-error").textContent = "";
  let d;
  try { d = await api("GET", "admin/audit-logs?" + q); } catch (e) { if (e.status === 400) { $("audit-error").textContent = e.message; return; } throw e; }
  auditCursor = d.pagination?.nextCursor || "";
  $("audit-more").hidden = !auditCursor;
  table("audit-table", ["When", "Type", "Severity", "Description", "Request", ""], (d.logs || []).map((e) => [
    fmtTime(e.timestamp), e.type, e.severity, e.description,
    e.metadata?.requestId ? el("button", { type: "button", class: "link", onclick: () => { $("af-search").value = e.metadata.requestId; $("af-type").value = ""; audit(); } }, e.metadata.requestId) : "",
    el("button", { type: "button", class: "link", onclick: () => { const p = $("audit-detail"); p.textContent = JSON.stringify(e, null, 2); p.hidden = false; p.focus(); } }, "Detail"),
  ]), "No audit entries match.");
}
$("audit-form").addEventListener("submit", (e) => { e.preventDefault(); audit().catch((x) => banner(x.message)); });
$("audit-more").addEventListener("click", () => audit(true).catch((e) => banner(e.message)));

// ---------- breakers ----------
async function breakers() {
  const d = await api("GET", "admin/circuit-breakers");
  table("br-table", ["Subject", "Reason", "Opened by", "Opened", "Closes", ""], (d.circuitBreakers || []).map((b) => [
    b.subject, b.reason || "", b.openedBy, fmtTime(b.openedAt), b.closesAt ? fmtTime(b.closesAt) : "when closed",
    el("button", { type: "button", class: "link", onclick: () => closeBreaker(b) }, "Close"),
  ]), "No breaker is open.");
}
async function closeBreaker(b) {
  const reason = prompt(`Close the breaker on ${b.subject}? Reason:`);
  if (reason === null) return;
  try { await api("DELETE", `admin/circuit-breakers/${encodeURIComponent(b.subjectType)}/${encodeURIComponent(b.subjectId)}?reason=${encodeURIComponent(reason)}`); await breakers(); }
  catch (e) { banner(e.message); }
}
$("br-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = ev.target;
  try { await api("POST", "admin/circuit-breakers", { subjectType: $("br-type").value, subjectId: $("br-id").value.trim(), reason: $("br-reason").value.trim() }); f.reset(); $("br-error").textContent = ""; await breakers(); }
  catch (e) { showFieldErrors(f, e, "br-error"); }
});

// ---------- playground ----------
async function playground() {
  if ($("pg-m1").options.length) return;
  const d = await api("GET", "v1/models");
  const ids = (d.data || []).map((m) => m.id).sort();
  for (const s of document.querySelectorAll(".pg-model")) {
    if (s.id !== "pg-m1") s.append(el("option", { value: "" }, "—"));
    for (const id of ids) s.append(el("option", { value: id }, id));
  }
}
// The playground calls one of the three chat routes; each gets the same chain in its own shape.
const SURFACES = {
  chat: { path: "api/v1/chat/completions", body: (prompt) => ({ messages: [{ role: "user", content: prompt }] }) },
  messages: { path: "api/v1/messages", body: (prompt) => ({ max_tokens: 1024, messages: [{ role: "user", content: prompt }] }) },
  responses: { path: "api/v1/responses", body: (prompt) => ({ input: prompt, store: false }) },
};
function chatBody(stream, surface = "chat") {
  const models = [...new Set([...document.querySelectorAll(".pg-model")].map((s) => s.value).filter(Boolean))];
  const redundancy = { on: [...document.querySelectorAll("#pg-on input:checked")].map((c) => c.value) };
  if ($("pg-timeout").value) redundancy.timeout_ms = Number($("pg-timeout").value);
  if ($("pg-ftt").value) redundancy.first_token_timeout_ms = Number($("pg-ftt").value);
  if ($("pg-hedge").value) redundancy.hedge_after_ms = Number($("pg-hedge").value);
  if ($("pg-retry").value) redundancy.retry = { attempts: Number($("pg-retry").value) };
  if ($("pg-interrupt").value) redundancy.on_interrupt = $("pg-interrupt").value;
  if ($("pg-skip").checked) redundancy.skip_unhealthy = true;
  return { models, redundancy, ...SURFACES[surface].body($("pg-prompt").value), stream };
}
// readFrame reads one streamed frame of a surface: the report, more text, or an error.
function readFrame(surface, c) {
  switch (surface) {
    case "messages":
      return { report: c.message?.secureai, text: c.delta?.text, error: c.type === "error" ? c.error?.message : undefined };
    case "responses":
      return { report: c.type === "response.created" ? c.response?.secureai : undefined, text: c.type === "response.output_text.delta" ? c.delta : undefined,
        error: c.type === "response.failed" ? c.response?.error?.message : undefined };
  }
  return { report: c.secureai, text: c.choices?.[0]?.delta?.content, error: c.error?.message };
}
function attempts(report) {
  table("pg-attempts", ["Model", "Status", "Reason", "Latency"], (report?.attempts || []).map((a) =>
    [a.model + (a.hedge ? " (hedge)" : "") + (a.retry ? ` (retry ${a.retry})` : ""), el("span", { class: "status-" + a.status }, a.status), a.reason || "", a.latency_ms + " ms"]),
  "Single model: no failover report.");
}
// policyCheck runs the dry run of the playground's request and shows it: on its own button, and
// before every Send.
async function policyCheck() {
  $("pg-policy").textContent = "…";
  try { const d = await api("POST", "policy-check", chatBody(false), $("pg-key").value.trim()); $("pg-policy").textContent = JSON.stringify(d, null, 2); }
  catch (e) { $("pg-policy").textContent = `${e.status}: ${e.message}`; }
}
$("pg-check").addEventListener("click", policyCheck);
$("pg-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("pg-answer").textContent = ""; $("pg-error").textContent = ""; $("pg-attempts").replaceChildren();
  await policyCheck();
  const key = $("pg-key").value.trim();
  const headers = { "Content-Type": "application/json" };
  if (key) headers["Authorization"] = "Bearer " + key;
  const surface = $("pg-surface").value;
  const res = await fetch(SURFACES[surface].path, { method: "POST", headers, body: JSON.stringify(chatBody(true, surface)), credentials: "same-origin" });
  if (!res.ok) {
    const d = await res.json().catch(() => ({}));
    if (res.status === 401 && (d.error === "Session expired" || d.error === "Not signed in")) return sessionEnded(d.message);
    $("pg-error").textContent = `${res.status}: ${d.error?.message || d.message || d.error}`;
    if (d.error?.attempts || d.attempts) attempts({ attempts: d.error?.attempts || d.attempts });
    return;
  }
  // Server-sent events: the first chunk carries the attempt report, then the text streams in.
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, i); buf = buf.slice(i + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("");
      if (!data || data === "[DONE]") continue;
      const f = readFrame(surface, JSON.parse(data));
      if (f.error) { $("pg-error").textContent = "stream ended with an error: " + f.error; continue; }
      if (f.report) { attempts(f.report.failover); $("pg-answer").dataset.served = f.report.served_model; }
      $("pg-answer").textContent += f.text || "";
    }
  }
});

startSession();
