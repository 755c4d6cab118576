// Package policycheck is the endpoint POST /policy-check: the dry run of a chat request (SPEC 6).
package policycheck

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/gateway"
	"github.com/secureai-gateway/gateway/internal/policycheck"
	"github.com/tidwall/gjson"
)

var routes = []string{"POST /policy-check"}

// Endpoint is POST /policy-check. It routes the chain's models (the adapters) and reads what the
// real call would check, read-only.
var Endpoint = gateway.Endpoint{Function: "PolicyCheckFunction", Routes: routes, Render: classicapi.Render, Build: New,
	Needs: gateway.NeedsAdapters | gateway.NeedsCredentials | gateway.NeedsUsers | gateway.NeedsLimits | gateway.NeedsBreakers}

// New builds the endpoint. It builds the providers only to route the chain's models; it calls
// none of them.
func New(d gateway.Deps) (http.Handler, error) {
	d = d.WithDefaults()
	svc, _, err := gateway.ChatOf(d)
	if err != nil {
		return nil, err
	}
	return dryRun(d, svc), nil
}

func dryRun(d gateway.Deps, svc *completion.Service) http.Handler {
	check := func(w http.ResponseWriter, r *http.Request) error {
		body, err := httpapi.ReadJSONObject(w, r, d.MaxBody)
		if err != nil {
			return err
		}
		in, invalid := chatInput(body)
		// Each check's status is what the body's own surface would answer.
		describe := classicapi.Describe
		if in.Surface == openaiapi.Surface {
			describe = openaiapi.Describe
		}
		httpapi.WriteJSON(w, http.StatusOK, policycheck.Build(svc.DryRun(r.Context(), in, invalid), describe))
		return nil
	}
	return gateway.Table(classicapi.Render, gateway.Reader(d, classicapi.Render), []httpapi.Route{{Pattern: routes[0], Handle: check}})
}

// chatInput reads a body of either chat surface: the classic one (it names an index or a
// prompt) or the OpenAI-compatible one.
func chatInput(body []byte) (completion.Input, error) {
	if f := gjson.GetManyBytes(body, "index", "prompt"); f[0].Exists() || f[1].Exists() {
		in, err := classicapi.Parse(body)
		if err != nil {
			return completion.Input{}, err
		}
		return in.Input, nil
	}
	return openaiapi.Read(body)
}
