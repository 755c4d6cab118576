package templatetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// corsRequestHeaders are the request headers a browser must be allowed to send: the ones the
// gateway reads (the API key, the JSON body's type, a retry's Idempotency-Key), and those the
// official OpenAI SDKs add to every request (openai-node's platform headers), which the gateway
// ignores but a refused preflight would block.
var corsRequestHeaders = []string{"Authorization", "Content-Type", "Idempotency-Key",
	"X-Stainless-Arch", "X-Stainless-Lang", "X-Stainless-OS", "X-Stainless-Package-Version",
	"X-Stainless-Retry-Count", "X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Timeout"}

// anthropicRequestHeaders are what the Anthropic SDKs add from a browser, on the Messages paths:
// the key (x-api-key), the version and beta headers, and the header that opts into browser use.
var anthropicRequestHeaders = []string{"X-Api-Key", "Anthropic-Version", "Anthropic-Beta",
	"Anthropic-Dangerous-Direct-Browser-Access"}

// CORS deploys: with AllowedOrigins set, every path of the transformed API answers its preflight
// in API Gateway with the origin as a string, the headers the gateway reads and exactly the
// methods the path has, and every function names the origin on its answers, as do API Gateway's
// own; with the default,
// no path answers OPTIONS and no Access-Control header is configured anywhere.
func TestCORS(t *testing.T) {
	for _, origin := range []string{"'https://app.example.com'", "'*'"} {
		t.Run(origin, func(t *testing.T) {
			c := transformed(t, map[string]string{"AllowedOrigins": origin})
			methods := map[string][]string{} // path → its methods other than OPTIONS
			preflights := map[string]apiRoute{}
			for _, r := range c.routes(t) {
				if r.method == "options" {
					preflights[r.path] = r
					continue
				}
				methods[r.path] = append(methods[r.path], strings.ToUpper(r.method))
			}
			for path, ms := range methods {
				if path == "/console" || strings.HasPrefix(path, "/console/") {
					// The web console is served to its own origin only (a SameSite=Strict
					// session, cross-origin requests refused): no preflight may admit another.
					if _, ok := preflights[path]; ok {
						t.Errorf("%s has a CORS preflight: the console must stay same-origin", path)
					}
					continue
				}
				pre, ok := preflights[path]
				if !ok {
					t.Errorf("%s has no CORS preflight (OPTIONS)", path)
					continue
				}
				if dig(pre.integration, "type") != "mock" {
					t.Errorf("OPTIONS %s: integration %v, want API Gateway's mock", path, dig(pre.integration, "type"))
				}
				params, _ := dig(pre.integration, "responses", "default", "responseParameters").(map[string]any)
				header := func(name string) string {
					v, ok := params["method.response.header."+name].(string)
					if !ok {
						t.Errorf("OPTIONS %s: %s is %v, want a string", path, name, params["method.response.header."+name])
					}
					return strings.Trim(v, "'")
				}
				if got := header("Access-Control-Allow-Origin"); "'"+got+"'" != origin {
					t.Errorf("OPTIONS %s: Access-Control-Allow-Origin %q, want %s", path, got, origin)
				}
				allowed := strings.Split(header("Access-Control-Allow-Headers"), ",")
				wanted := corsRequestHeaders
				if path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/") {
					wanted = append(slices.Clone(wanted), anthropicRequestHeaders...)
				}
				for _, h := range wanted {
					if !slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSpace(a), h) }) {
						t.Errorf("OPTIONS %s: Access-Control-Allow-Headers %v lacks %s", path, allowed, h)
					}
				}
				want := append(slices.Clone(ms), "OPTIONS")
				slices.Sort(want)
				got := strings.Split(header("Access-Control-Allow-Methods"), ",")
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("OPTIONS %s: Access-Control-Allow-Methods %v, want the path's own %v", path, got, want)
				}
				header("Access-Control-Max-Age")
				for name := range params {
					declared := strings.TrimPrefix(name, "method.response.header.")
					if dig(pre.op, "responses", "200", "headers", declared) == nil {
						t.Errorf("OPTIONS %s maps %s, which its method response does not declare (API Gateway refuses the import)", path, declared)
					}
				}
			}
			for path := range preflights {
				if methods[path] == nil {
					t.Errorf("OPTIONS %s: a preflight for a path with no route", path)
				}
			}
			// API Gateway's own answers (a throttled 429, an unknown path's 403, a 504) too.
			for _, api := range c.ofType("AWS::ApiGateway::RestApi") {
				for _, resp := range []string{"DEFAULT_4XX", "DEFAULT_5XX"} {
					got := dig(c.props(t, api), "Body", "x-amazon-apigateway-gateway-responses", resp, "responseParameters",
						"gatewayresponse.header.Access-Control-Allow-Origin")
					if got != origin {
						t.Errorf("%s's %s answers carry Access-Control-Allow-Origin %v, want %s", api, resp, got, origin)
					}
				}
			}
			for _, fn := range c.ofType("AWS::Lambda::Function") {
				if got := dig(c.props(t, fn), "Environment", "Variables", "SECUREAI_CORS_ORIGIN"); got != origin {
					t.Errorf("%s answers with SECUREAI_CORS_ORIGIN %v, want %s", fn, got, origin)
				}
			}
		})
	}

	t.Run("off", func(t *testing.T) {
		c := transformed(t, nil)
		if c.params["AllowedOrigins"] != "''" {
			t.Fatalf("AllowedOrigins defaults to %s, want '' (off)", c.params["AllowedOrigins"])
		}
		for _, r := range c.routes(t) {
			if r.method == "options" {
				t.Errorf("with CORS off, %s answers a preflight", r)
			}
		}
		for id := range c.Resources {
			b, err := json.Marshal(c.props(t, id))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "Access-Control-") {
				t.Errorf("with CORS off, %s configures an Access-Control header: %s", id, b)
			}
		}
		for _, fn := range c.ofType("AWS::Lambda::Function") {
			if got := dig(c.props(t, fn), "Environment", "Variables", "SECUREAI_CORS_ORIGIN"); got != "''" {
				t.Errorf("%s: SECUREAI_CORS_ORIGIN %v, want '' (off)", fn, got)
			}
		}
	})
}
