// Package apierr maps the gateway's typed errors to what an API caller is told: an HTTP status,
// a short title, a message naming what is wrong, and OpenAI-style type/code/param. Each surface
// renders a Problem in its own envelope.
package apierr

import (
	"errors"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// Problem is an error as the caller sees it.
type Problem struct {
	Status   int
	Title    string // the classic envelope's short `error`
	Message  string
	Type     string
	Code     string
	Param    string
	Attempts []chain.Attempt // set when attempts were made
	// RetryAfter, on a 429, is when the caller may try again (sent as Retry-After).
	RetryAfter time.Duration
}

// New builds a Problem from its parts.
func New(status int, title, message, typ, code string) *Problem {
	return &Problem{Status: status, Title: title, Message: message, Type: typ, Code: code}
}

// BadRequest is a 400 naming the offending parameter.
func BadRequest(param, message string) *Problem {
	return &Problem{Status: 400, Title: "Invalid request", Message: message, Type: "invalid_request_error", Param: param}
}

// InvalidKey is the answer to a missing, unknown, revoked or expired key.
func InvalidKey(message string) *Problem {
	return &Problem{Status: 401, Title: "Invalid API key", Message: message, Type: "invalid_request_error", Code: "invalid_api_key"}
}

// OnBehalfDenied refuses a user_id that a non-admin key may not bill to.
func OnBehalfDenied() *Problem {
	return &Problem{Status: 403, Title: "Access denied", Type: "permission_error", Code: "on_behalf_of_denied", Param: "user_id",
		Message: "user_id: only an admin API key may act on behalf of another user"}
}

// Internal hides an unexpected error's details from the caller.
func Internal() *Problem {
	return &Problem{Status: 500, Title: "Internal error", Message: "the gateway failed unexpectedly; the request id identifies it in the logs", Type: "server_error", Code: "internal_error"}
}

// From classifies err. attempts are the chain's attempts so far, if any ran.
func From(err error, attempts []chain.Attempt) *Problem {
	var (
		p         *Problem
		input     *chain.InputError
		exhausted *chain.Exhausted
		model     *catalog.ModelError
		access    *completion.AccessError
		prov      *provider.Error
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &input):
		return BadRequest(input.Field, input.Error())
	case errors.As(err, &exhausted):
		typ := "server_error"
		if exhausted.Status() == 429 {
			typ = "rate_limit_error"
		}
		p := &Problem{Status: exhausted.Status(), Title: "All model attempts failed", Message: exhausted.Error(),
			Type: typ, Code: "all_models_failed", Attempts: exhausted.Attempts}
		if p.Status == http.StatusTooManyRequests {
			p.RetryAfter = exhausted.RetryAfter
		}
		return p
	case errors.As(err, &model) && model.Unavailable:
		return &Problem{Status: 503, Title: "Model unavailable", Message: model.Error(), Type: "server_error", Code: "model_unavailable", Param: "model"}
	case errors.As(err, &model):
		return &Problem{Status: 400, Title: "Unknown model", Message: model.Error(), Type: "invalid_request_error", Code: "model_not_found", Param: "model"}
	case errors.As(err, &access):
		return &Problem{Status: 403, Title: "Access denied", Message: access.Error(), Type: "permission_error", Code: "model_not_allowed", Param: "model"}
	case errors.As(err, &prov):
		status := prov.Status
		if status < 400 || status > 499 {
			status = http.StatusBadGateway
		}
		typ := prov.Type
		if typ == "" {
			typ = "invalid_request_error"
		}
		return &Problem{Status: status, Title: "Provider rejected the request", Message: prov.Message,
			Type: typ, Code: prov.Code, Param: prov.Param, Attempts: attempts}
	}
	return Internal()
}

func (p *Problem) Error() string { return p.Message }
