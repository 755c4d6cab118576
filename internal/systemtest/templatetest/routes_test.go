package templatetest

import (
	"slices"
	"strings"
	"testing"
)

// sdkRequests are requests as the clients send them — the OpenAI SDKs' chat and models calls
// (models.retrieve sends the id's slash unescaped), the classic surface, Claude Code's and the
// Anthropic SDKs' Messages calls, Codex's and the Agents SDK's Responses calls, the admin API —
// and the function of the stack each must reach.
var sdkRequests = []struct{ method, path, function string }{
	{"POST", "/v1/chat/completions", "OpenAIChatFunction"},
	{"POST", "/chat/completions", "ClassicChatFunction"},
	{"POST", "/v1/messages", "MessagesFunction"},
	{"POST", "/v1/messages/count_tokens", "MessagesFunction"},
	{"POST", "/v1/responses", "ResponsesFunction"},
	{"GET", "/v1/models", "ModelsFunction"},
	{"GET", "/v1/models/openai/gpt-5-nano", "ModelsFunction"},
	{"GET", "/v1/models/anthropic/claude-sonnet-4", "ModelsFunction"},
	{"GET", "/v1/models/demo/ok", "ModelsFunction"},
	{"GET", "/v1/models/bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", "ModelsFunction"},
	{"POST", "/policy-check", "PolicyCheckFunction"},
	{"GET", "/usage", "UsageFunction"},
	{"GET", "/receipts/bnd_01JD3Q8ZK7X4M2N5P6R7S8T9V0", "ReceiptsFunction"},
	{"GET", "/.well-known/jwks.json", "JWKSFunction"},
	{"GET", "/openapi.json", "JWKSFunction"},
	{"GET", "/admin/api-keys", "AdminFunction"},
	{"POST", "/admin/api-keys", "AdminFunction"},
	{"PATCH", "/admin/api-keys/key_1", "AdminFunction"},
	{"DELETE", "/admin/webhooks/wh_1", "AdminFunction"},
	{"DELETE", "/admin/circuit-breakers/user/u1", "AdminFunction"},
	{"POST", "/admin/webhooks/wh_1/rotate-secret", "AdminFunction"},
	{"GET", "/admin/audit-logs", "AdminFunction"},
}

// matchPath reports whether an API Gateway resource path matches a request path: a literal
// segment matches itself, {name} one non-empty segment, and a final {name+} one or more.
func matchPath(resource, path string) bool {
	res := strings.Split(strings.Trim(resource, "/"), "/")
	req := strings.Split(strings.Trim(path, "/"), "/")
	for i, seg := range res {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "+}") {
			return i == len(res)-1 && len(req) > i && !slices.Contains(req[i:], "")
		}
		if i >= len(req) || req[i] == "" {
			return false
		}
		if !(strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}")) && seg != req[i] {
			return false
		}
	}
	return len(req) == len(res)
}

func TestMatchPath(t *testing.T) {
	for _, c := range []struct {
		resource, path string
		want           bool
	}{
		{"/v1/models/{id}", "/v1/models/gpt-4o", true},
		{"/v1/models/{id}", "/v1/models/openai/gpt-5-nano", false}, // the deployed 403 of issue 18
		{"/v1/models/{id+}", "/v1/models/openai/gpt-5-nano", true},
		{"/v1/models/{id+}", "/v1/models/gpt-4o", true},
		{"/v1/models/{id+}", "/v1/models", false},
		{"/v1/models/{id+}", "/v1/models/", false},
		{"/v1/models", "/v1/models", true},
		{"/v1/models", "/v1/models/x", false},
		{"/admin/{proxy+}", "/admin/api-keys/key_1", true},
		{"/usage", "/usages", false},
	} {
		if got := matchPath(c.resource, c.path); got != c.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", c.resource, c.path, got, c.want)
		}
	}
}

// Every route matches what clients send: each request above finds, in the transformed API, a
// resource and method (or ANY) whose integration is its function. API Gateway picks the most
// specific match; here each request must match exactly one Lambda route, so no choice arises.
func TestSDKRequestsReachTheirFunctions(t *testing.T) {
	c := transformed(t, nil)
	routes := c.routes(t)
	for _, req := range sdkRequests {
		var matched []apiRoute
		for _, r := range routes {
			if r.function == "" {
				continue // the CORS preflights' mock integrations
			}
			if (r.method == strings.ToLower(req.method) || r.method == "x-amazon-apigateway-any-method") && matchPath(r.path, req.path) {
				matched = append(matched, r)
			}
		}
		switch {
		case len(matched) == 0:
			t.Errorf("%s %s matches no route of the API: API Gateway answers 403 Missing Authentication Token", req.method, req.path)
		case len(matched) > 1:
			t.Errorf("%s %s matches several routes: %v", req.method, req.path, matched)
		case matched[0].function != req.function:
			t.Errorf("%s %s reaches %s (%s), want %s", req.method, req.path, matched[0].function, matched[0], req.function)
		}
	}
}
