package classicapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/tidwall/gjson"
)

// Metadata is the gateway's report in every classic answer (SPEC section 5).
type Metadata struct {
	ConversationID     string        `json:"conversation_id"`
	IndexUsed          string        `json:"index_used"`
	PolicyUsed         string        `json:"smltp_policy_used"`
	PolicySource       string        `json:"smltp_policy_source"`
	PolicyHash         string        `json:"smltp_policy_hash"`
	ServedModel        string        `json:"served_model"`
	RequestedModel     string        `json:"requested_model"`
	Failover           *chain.Report `json:"failover,omitempty"`
	SMLTP              *SMLTP        `json:"smltp,omitempty"`
	BillingFallback    bool          `json:"billing_fallback,omitempty"`
	RAGEnabled         bool          `json:"rag_enabled"`
	DocumentsRetrieved int           `json:"documents_retrieved"`
	Sources            []string      `json:"sources"`
}

// SMLTP names the signed receipt of a served request.
type SMLTP struct {
	BundleID   string `json:"bundle_id"`
	ReceiptURL string `json:"receipt_url"`
}

// Usage carries both token vocabularies: OpenAI's and the input/output one.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
}

func usageOf(u provider.Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

// envelope is a non-streamed success. Choices are the provider's, copied without decoding.
type envelope struct {
	Success  bool            `json:"success"`
	ID       string          `json:"id"`
	Object   string          `json:"object"`
	Created  int64           `json:"created"`
	Model    string          `json:"model"`
	Choices  json.RawMessage `json:"choices"`
	Usage    Usage           `json:"usage"`
	Metadata Metadata        `json:"metadata"`
}

// metadata builds the report for an answer served by served.
func (a *answer) metadata(served string, report chain.Report) Metadata {
	pol := a.call.Policy
	m := Metadata{
		ConversationID: a.conversationID, IndexUsed: a.in.Index,
		PolicyUsed: pol.Name, PolicySource: pol.Source, PolicyHash: pol.Hash,
		ServedModel: served, RequestedModel: a.call.Plan.Targets[0].Model, Sources: []string{},
	}
	if id := a.call.BundleID(); id != "" {
		m.SMLTP = &SMLTP{BundleID: id, ReceiptURL: "/receipts/" + id}
	}
	m.BillingFallback = a.call.BillingFallback()
	if len(a.call.Plan.Targets) > 1 {
		m.Failover = &report
	}
	return m
}

func (a *answer) envelope(body []byte, u provider.Usage, served string, report chain.Report) ([]byte, error) {
	choices := gjson.GetBytes(body, "choices")
	raw := json.RawMessage("[]")
	if choices.IsArray() {
		raw = json.RawMessage(choices.Raw)
	}
	return json.Marshal(envelope{Success: true, ID: a.id, Object: "chat.completion", Created: a.created, Model: served,
		Choices: raw, Usage: usageOf(u), Metadata: a.metadata(served, report)})
}

// problem is the classic error envelope.
type problem struct {
	Success   bool            `json:"success"`
	Error     string          `json:"error"`
	Message   string          `json:"message"`
	RequestID string          `json:"request_id"`
	ResetTime *time.Time      `json:"reset_time,omitempty"` // when the limit that refused resets
	Attempts  []chain.Attempt `json:"attempts,omitempty"`
}

// titles are the classic envelope's short `error` for each kind, when the error names none.
var titles = [...]string{
	fault.Internal: "Internal error", fault.InvalidRequest: "Invalid request", fault.Unauthenticated: "Invalid API key",
	fault.Forbidden: "Access denied", fault.NotFound: "Not found", fault.MethodNotAllowed: "Method not allowed",
	fault.Conflict: "Conflict", fault.Unprocessable: "Unprocessable request", fault.TooLarge: "Request too large",
	fault.RequestTimeout: "Request timeout", fault.RateLimited: "Rate limit exceeded", fault.QuotaExceeded: "Quota exceeded",
	fault.ChainExhausted: "All model attempts failed", fault.ChainRateLimited: "All model attempts failed",
	fault.UpstreamRejected: "Provider rejected the request", fault.UpstreamAuth: "Provider credential refused",
	fault.ModelUnavailable: "Model unavailable", fault.CircuitOpen: "Circuit open", fault.Unavailable: "Service unavailable",
	fault.NotImplemented: "Not implemented", fault.Interrupted: "Stream interrupted", fault.Canceled: "Canceled",
}

// Describe is what the classic envelope says of err: its status, short title and message.
func Describe(err error) (status int, title, message string) {
	f := fault.From(err)
	title = f.Title
	if title == "" && int(f.K) < len(titles) {
		title = titles[f.K]
	}
	return httpapi.Status(f), title, fault.Clip(f.Message, fault.MaxMessage)
}

// Render writes err in the classic error envelope {success:false, error, message, request_id,
// attempts?}. It has httpapi.Render's signature so authentication errors use it too.
func Render(w http.ResponseWriter, r *http.Request, err error) {
	_, title, message := Describe(err)
	f := fault.From(err)
	p := problem{Error: title, Message: message, RequestID: identity.RequestID(r.Context()), Attempts: chain.AttemptsOf(err)}
	if !f.ResetAt.IsZero() {
		p.ResetTime = &f.ResetAt
	}
	httpapi.WriteError(w, r, f, p)
}

var _ httpapi.Render = Render

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
