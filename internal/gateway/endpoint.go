package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
)

// Endpoint is one endpoint of the gateway, all a deployment needs to serve it: the routes it
// answers (where the local server mounts it, what its function's API events name), the envelope
// its errors take before it is built, its builder, the features it uses, and the function that
// serves it in the cloud. Each lives in its package under internal/endpoint; the local server
// mounts every one on its mux (localserver.Endpoints); a Lambda function serves one
// (cloud.Cloud.Endpoint).
type Endpoint struct {
	// Function is the endpoint's function in template.yaml (its logical id).
	Function string
	Routes   []string
	Render   httpapi.Render
	Build    func(Deps) (http.Handler, error)
	Needs    Needs
}

// Needs are the features an endpoint uses. A deployment turns each on — the local server all of
// them, a function those its environment names (template.yaml gives each function exactly its
// endpoint's Needs; internal/systemtest/templatetest checks) — and the builder refuses to start without the
// ones it cannot serve without (an *OffError).
type Needs uint

const (
	// NeedsAdapters: the provider adapters (Deps.Providers), for the endpoints that reach
	// providers. Code, not configuration: the function's main passes them.
	NeedsAdapters Needs = 1 << iota
	// NeedsCredentials: the provider credentials, to call providers or to list the models whose
	// provider has one.
	NeedsCredentials
	NeedsIdempotency // Idempotency-Key records
	NeedsLimits      // request limit windows
	NeedsUsers       // users' quotas and spend; key and user administration
	NeedsReceipts    // stored receipts
	NeedsBreakers    // circuit breakers
	NeedsSigning     // the signing keyset: entitlement tokens, receipts' signatures, the JWKS
	NeedsWebhooks    // webhook endpoints, their deliveries, and the audit log
	NeedsEvents      // the event bus the features publish to
	// NeedsHealth: provider health shared with the deployment's other processes (skip_unhealthy
	// hears what every warm instance saw fail); without it each process counts alone.
	NeedsHealth
)

// Has reports whether n includes every feature of f.
func (n Needs) Has(f Needs) bool { return n&f == f }

// ChatNeeds are what a chat surface uses: everything that governs a completion.
const ChatNeeds = NeedsAdapters | NeedsCredentials | NeedsIdempotency | NeedsLimits | NeedsUsers | NeedsReceipts |
	NeedsBreakers | NeedsSigning | NeedsEvents | NeedsHealth
