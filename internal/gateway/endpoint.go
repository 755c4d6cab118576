package gateway

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/api/console"
	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/openaiapi"
)

// Endpoint is one endpoint of the gateway, all a deployment needs to serve it: the routes it
// answers (where the local server mounts it, what its function's API events name), the envelope
// its errors take before it is built, its builder, the features it uses, and the function that
// serves it in the cloud. The local server mounts every one on its mux (New); a Lambda function
// serves one (cloud.Cloud.Endpoint).
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
)

// Has reports whether n includes every feature of f.
func (n Needs) Has(f Needs) bool { return n&f == f }

// chatNeeds are what a chat surface uses: everything that governs a completion.
const chatNeeds = NeedsAdapters | NeedsCredentials | NeedsIdempotency | NeedsLimits | NeedsUsers | NeedsReceipts |
	NeedsBreakers | NeedsSigning | NeedsEvents

// The gateway's endpoints.
var (
	Models = Endpoint{Function: "ModelsFunction", Routes: modelsRoutes, Render: openaiapi.Render, Build: NewModels,
		Needs: NeedsCredentials}
	OpenAIChat = Endpoint{Function: "OpenAIChatFunction", Routes: openAIChatRoutes, Render: openaiapi.Render,
		Build: NewOpenAIChat, Needs: chatNeeds}
	ClassicChat = Endpoint{Function: "ClassicChatFunction", Routes: classicChatRoutes, Render: classicapi.Render,
		Build: NewClassicChat, Needs: chatNeeds}
	// PolicyCheck routes the chain's models (the adapters) and reads what the real call would
	// check, read-only.
	PolicyCheck = Endpoint{Function: "PolicyCheckFunction", Routes: policyCheckRoutes, Render: classicapi.Render,
		Build: NewPolicyCheck, Needs: NeedsAdapters | NeedsCredentials | NeedsUsers | NeedsLimits | NeedsBreakers}
	Usage = Endpoint{Function: "UsageFunction", Routes: usageRoutes, Render: classicapi.Render, Build: NewUsage,
		Needs: NeedsUsers | NeedsLimits}
	Receipts = Endpoint{Function: "ReceiptsFunction", Routes: receiptRoutes, Render: classicapi.Render,
		Build: NewReceipts, Needs: NeedsReceipts}
	// Public are the routes that need no key: the JWKS and the API description.
	Public = Endpoint{Function: "JWKSFunction", Routes: []string{jwksRoute, openAPIRoute}, Render: classicapi.Render,
		Build: NewPublic, Needs: NeedsSigning}
	Admin = Endpoint{Function: "AdminFunction", Routes: adminRoutes, Render: classicapi.Render, Build: NewAdmin,
		Needs: NeedsUsers | NeedsLimits | NeedsBreakers | NeedsWebhooks | NeedsEvents}
	// Console serves the pages and, in process, the routes they call: the chat playground's
	// completions included, so it uses what a chat surface uses (but no Idempotency-Key). Its
	// routes are constants so that the value is built at compile time: a value computed at init
	// makes every function link its builder, and NewConsole builds the chat endpoints.
	Console = Endpoint{Function: "ConsoleFunction", Routes: []string{console.Path, console.Path + "/"}, Render: classicapi.Render, Build: NewConsole,
		Needs: chatNeeds&^NeedsIdempotency | NeedsWebhooks}
)

// Endpoints are every endpoint a function serves, in the order the local server mounts them.
func Endpoints() []Endpoint {
	return []Endpoint{Models, OpenAIChat, ClassicChat, PolicyCheck, Admin, Usage, Public, Receipts, Console}
}
