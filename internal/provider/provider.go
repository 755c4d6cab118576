// Package provider defines what the gateway needs from an LLM provider: one call, plain or
// streamed, in the OpenAI Chat Completions shape. Adapters translate to and from their own wire
// format and classify their failures into the failover reasons of package chain.
package provider

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/fault"
)

// Request is one attempt's call. Body holds the caller's OpenAI-shaped request bytes exactly as
// received (gateway extensions included); adapters must not modify it, because every attempt of a
// chain translates the same bytes afresh. Whether it streams is which method it is given to:
// Provider.Stream or Provider.Complete (a "stream" member of Body is the adapter's to set).
type Request struct {
	Body   []byte
	Model  string // the provider's own model id (the catalog's upstream id)
	Region string // the region the catalog places this model in, when the provider has regions
	// OnSend, when set, sees every upstream HTTP request of this attempt just before it is sent.
	// Nil costs nothing.
	OnSend SendHook
	// Native is the caller's request in its own wire, for a surface other than Chat Completions;
	// nil on the chat surfaces. An adapter of that wire sends it instead of translating Body.
	Native *Native
}

// SendHook is called exactly once per upstream HTTP request with the request's final body: the
// translated bytes exactly as they go on the wire, so a token can carry their SHA-256. body must
// not be modified or kept. The header it returns is added to the request (replacing fields of
// the same name; on Bedrock before SigV4 signing, so it is signed too). An error aborts the
// attempt with nothing sent; the adapter returns it as a *SendHookError.
type SendHook func(ctx context.Context, body []byte) (http.Header, error)

// Call runs h on body, wrapping its error in a *SendHookError.
func (h SendHook) Call(ctx context.Context, body []byte) (http.Header, error) {
	header, err := h(ctx, body)
	if err != nil {
		return nil, &SendHookError{Err: err}
	}
	return header, nil
}

// SendHookError is an attempt that Request.OnSend refused before anything was sent. It is final,
// whatever Err wraps: the refusal is the gateway's own decision, which another model of the chain
// would meet again. Err is the hook's error as returned, for errors.As.
type SendHookError struct{ Err error }

func (e *SendHookError) Error() string { return "request refused before sending: " + e.Err.Error() }

func (e *SendHookError) Unwrap() error { return e.Err }

// FailoverReason implements chain.Classified: never a failover, even when Err carries a reason.
func (e *SendHookError) FailoverReason() chain.Reason { return "" }

// Usage is token accounting as the provider reported it.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Response is a complete, non-streamed answer.
type Response struct {
	Body  []byte // an OpenAI chat.completion object, or the provider's own answer when Native
	Usage Usage
	// Native is true for an answer in the wire of Request.Native, passed through.
	Native bool
}

// Chunk is one streamed event, already in OpenAI chat.completion.chunk form.
type Chunk struct {
	// Data is the chunk's JSON; never nil. It may alias the adapter's read buffer and is valid
	// only until the next Recv: a consumer that keeps a chunk longer copies it.
	Data []byte
	// Content is true when the chunk carries a non-empty content, refusal or tool_calls delta:
	// the "first content token" that locks a stream to its model.
	Content bool
	// Usage is set on the chunk that reports token usage; UsageOnly marks a chunk that exists only
	// for that (empty choices), which is dropped unless the caller asked for usage.
	Usage     *Usage
	UsageOnly bool
	// Finish is true when the chunk carries a finish_reason.
	Finish bool
	// Native is true for an event of Request.Native's wire, passed through: Data is the event's
	// data, whose type member names it.
	Native bool
}

// Stream yields chunks. Recv returns io.EOF once the stream is complete; any other error is an
// interruption (classified with FailoverReason when it happens before the first content token).
// Close releases the connection and may be called at any time, concurrently with Recv.
type Stream interface {
	Recv() (Chunk, error)
	Close() error
}

// Buffered is implemented by streams that can tell whether their next chunk has already arrived,
// so the gateway can send several chunks with one flush instead of one each, without waiting.
type Buffered interface {
	Buffered() bool
}

// Provider is one configured upstream.
type Provider interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Error is a failed provider call. Reason is the failover reason; an empty Reason means the failure
// is final (the request's own fault: bad request, context too long, content filtered, unknown model)
// and is returned to the caller with Status, Type, Code and Message.
type Error struct {
	Reason     chain.Reason
	Status     int    // the upstream HTTP status, 0 when there was none
	Type       string // OpenAI-style error type, e.g. "invalid_request_error"
	Code       string // e.g. "context_length_exceeded", "content_filter"
	Param      string
	Message    string // safe to show the caller: never a credential
	RetryAfter time.Duration
	Err        error // the underlying cause, for logs
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider error %d (%s): %s", e.Status, e.kind(), e.Message)
	}
	return fmt.Sprintf("provider error (%s): %s", e.kind(), e.Message)
}

func (e *Error) kind() string {
	if e.Reason != "" {
		return string(e.Reason)
	}
	return "final"
}

func (e *Error) Unwrap() error { return e.Err }

// RetryAfterHint implements chain.RetryHinter.
func (e *Error) RetryAfterHint() time.Duration { return e.RetryAfter }

// UpstreamAuthType is the error type of a provider that refused the gateway's own credential.
const UpstreamAuthType = "upstream_auth_error"

// Fault implements fault.Describer: what the caller is told when this error ends a chain. A
// provider's refusal keeps its status and type; a credential the provider refused or lacks is the
// operator's problem, never the caller's.
func (e *Error) Fault() *fault.Error {
	f := &fault.Error{K: fault.UpstreamRejected, Title: "Provider rejected the request", Message: e.Message,
		Type: e.Type, Code: e.Code, Param: e.Param, Status: e.Status, Err: e}
	switch {
	case e.Type == notConfigured:
		f.K, f.Title, f.Code = fault.ModelUnavailable, "Model unavailable", "model_unavailable"
	case e.Type == UpstreamAuthType:
		f.K, f.Title = fault.UpstreamAuth, "Provider credential refused"
	case e.Reason != "" || e.Status < 400 || e.Status > 499:
		// The provider failing rather than refusing: only an attempt's error, which a chain
		// reports as exhausted.
		f.K, f.Title, f.Type = fault.ChainExhausted, "Provider failed", "server_error"
	case f.Type == "":
		f.Type = "invalid_request_error"
	}
	return f
}

// FailoverReason implements chain.Classified.
// A context-length refusal says so, so that a chain whose `on` names context_length can fail over
// to a larger window; any other chain still treats it as final.
func (e *Error) FailoverReason() chain.Reason {
	if e.Reason == "" && e.Code == ContextLengthCode {
		return chain.ContextLength
	}
	return e.Reason
}

// ContextLengthCode is the code every adapter gives a provider's context-length refusal.
const ContextLengthCode = "context_length_exceeded"

// Config is what the catalog knows of one configured provider; each adapter package's New takes it.
type Config struct {
	Name    string // the provider's name in the catalog, e.g. "anthropic" or "groq"
	Type    string // the wire format: "openai", "anthropic", "gemini" or "bedrock"
	BaseURL string // for HTTP providers; empty means the provider's public endpoint
	APIKey  string // the resolved credential; empty when none is configured
	Region  string // default region (Bedrock)
	// Client is shared by every HTTP provider so connections are pooled process-wide.
	Client *http.Client
	// Responses: an "openai" provider that also serves the Responses API (passthrough of
	// /v1/responses requests).
	Responses bool
}
