package templatetest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/aws/cloud"
)

// apiRoute is one method of the transformed API's OpenAPI body and the integration behind it.
type apiRoute struct {
	path, method string // method as the body names it: get, post, x-amazon-apigateway-any-method…
	op           any    // the body's operation object
	integration  map[string]any
	function     string // the Lambda function's logical id, "" for a non-Lambda integration
}

var integrationFunction = regexp.MustCompile(`/functions/\$\{([A-Za-z0-9]+)\.Arn\}/`)

// routes returns every method of every AWS::ApiGateway::RestApi body, sorted by path and method.
func (c cfn) routes(t *testing.T) []apiRoute {
	t.Helper()
	var out []apiRoute
	for _, api := range c.ofType("AWS::ApiGateway::RestApi") {
		paths, ok := dig(c.props(t, api), "Body", "paths").(map[string]any)
		if !ok {
			t.Fatalf("RestApi %s has no OpenAPI Body with paths", api)
		}
		for path, methods := range paths {
			for method, op := range methods.(map[string]any) {
				integ, _ := dig(op, "x-amazon-apigateway-integration").(map[string]any)
				r := apiRoute{path: path, method: method, op: op, integration: integ}
				if m := integrationFunction.FindStringSubmatch(fmt.Sprint(dig(integ, "uri"))); m != nil {
					r.function = m[1]
				}
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].path+" "+out[i].method < out[j].path+" "+out[j].method
	})
	return out
}

func (r apiRoute) String() string { return strings.ToUpper(r.method) + " " + r.path }

// millis reads a JSON number (or numeric string) of milliseconds; ok false when absent.
func millis(v any) (time.Duration, bool) {
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case string:
		if _, err := fmt.Sscan(x, &n); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return time.Duration(n * float64(time.Millisecond)), true
}

const (
	// apiGatewayDefaultTimeout is a REST integration's timeout when none is set, streaming or not.
	apiGatewayDefaultTimeout = 29 * time.Second
	// streamLimit is the longest a streaming integration may be configured to (and the longest a
	// Lambda function runs): what the README promises a chat stream.
	streamLimit = 15 * time.Minute
)

// Streams outlive 29 s, and nothing buffered is cut by API Gateway before it answers: each
// Lambda route's integration timeout covers its function's Timeout less the handler's deadline
// reserve (cloud.DeadlineReserve), so the function's own answer — a stream's deadline_exceeded
// frame, a buffered 503 — reaches the caller. The chat and console routes stream for 15 minutes.
func TestIntegrationTimeoutsCoverTheFunctions(t *testing.T) {
	c := transformed(t, nil)
	streaming := map[string]bool{}
	for _, r := range c.routes(t) {
		if dig(r.integration, "type") == "mock" { // CORS preflights
			continue
		}
		if r.function == "" {
			t.Errorf("%s: integration %v calls no function of the stack", r, r.integration)
			continue
		}
		fn := c.props(t, r.function)
		timeout, ok := dig(fn, "Timeout").(float64)
		if !ok {
			t.Errorf("%s: function %s has no Timeout", r, r.function)
			continue
		}
		runs := time.Duration(timeout) * time.Second
		integ, set := millis(dig(r.integration, "timeoutInMillis"))
		if !set {
			integ = apiGatewayDefaultTimeout
		}
		stream := dig(r.integration, "responseTransferMode") == "STREAM"
		if stream != strings.Contains(fmt.Sprint(dig(r.integration, "uri")), "/response-streaming-invocations") {
			t.Errorf("%s: responseTransferMode %v with uri %v: streaming needs both", r, dig(r.integration, "responseTransferMode"), dig(r.integration, "uri"))
		}
		if stream {
			streaming[r.String()] = true
			if integ != streamLimit || runs != streamLimit {
				t.Errorf("%s streams for %v (integration timeoutInMillis %v) from %s running %v; want both %v",
					r, integ, dig(r.integration, "timeoutInMillis"), r.function, runs, streamLimit)
			}
		} else if integ > apiGatewayDefaultTimeout {
			t.Errorf("%s: a buffered integration's timeout is at most %v, this one is %v", r, apiGatewayDefaultTimeout, integ)
		}
		if answers := runs - cloud.DeadlineReserve; answers >= integ {
			t.Errorf("%s: %s answers by %v (Timeout %v less the %v reserve), after its integration's %v timeout",
				r, r.function, answers, runs, cloud.DeadlineReserve, integ)
		}
	}
	// Every route of a chat surface (count_tokens too: it shares the Messages function), and the
	// console's (its playground streams the answer).
	wanted := []string{"GET /console", "GET /console/{proxy+}", "POST /console/{proxy+}", "PUT /console/{proxy+}",
		"PATCH /console/{proxy+}", "DELETE /console/{proxy+}"}
	for _, e := range chatEndpoints() {
		wanted = append(wanted, e.Routes...)
	}
	for _, want := range wanted {
		if !streaming[want] {
			t.Errorf("%s does not stream through API Gateway", want)
		}
	}
	if len(streaming) != len(wanted) {
		t.Errorf("streaming routes %v, want exactly %v", streaming, wanted)
	}
}

// The API's endpoint type is stated, Regional — whose streamed responses may stay idle for 5
// minutes (30 s on an edge-optimized one) — and a stream waiting for its first content token is
// sent a keep-alive comment well within that (cloud.StreamKeepAlive).
func TestStreamsAreKeptAliveWithinTheRegionalIdleLimit(t *testing.T) {
	c := transformed(t, nil)
	apis := c.ofType("AWS::ApiGateway::RestApi")
	if len(apis) == 0 {
		t.Fatal("no RestApi in the transformed template")
	}
	for _, api := range apis {
		types, _ := dig(c.props(t, api), "EndpointConfiguration", "Types").([]any)
		if len(types) != 1 || types[0] != "REGIONAL" {
			t.Errorf("RestApi %s's endpoint types are %v, want [REGIONAL] stated (an edge-optimized API idles streams out after 30 s)", api, types)
		}
	}
	if cloud.StreamKeepAlive <= 0 || cloud.StreamKeepAlive >= cloud.APIGatewayIdleLimit {
		t.Errorf("keep-alive every %v, want more often than the %v idle limit", cloud.StreamKeepAlive, cloud.APIGatewayIdleLimit)
	}
}
