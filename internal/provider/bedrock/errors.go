package bedrock

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
)

// classify maps an SDK error, from the call or from the event stream, onto the failover reasons
// by the exception's name, which is Bedrock's documented error contract.
func (a *adapter) classify(err error, model string) error {
	var refused *provider.SendHookError
	if errors.As(err, &refused) {
		return refused
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var signing *v4.SigningError
	if errors.As(err, &signing) {
		return provider.NotConfigured(a.name, "has no usable AWS credentials", err)
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return provider.TransportError(err)
		}
		// What is left is the SDK failing to decode what Bedrock sent: a bad event-stream frame
		// (checksum, length) or a payload that is not the documented JSON.
		return &provider.Error{Reason: chain.ServerError, Type: "server_error", Message: "provider " + a.name + " sent a malformed response", Err: err}
	}
	e := &provider.Error{Message: "provider " + a.name + ": " + api.ErrorMessage(), Err: err}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		e.Status = re.HTTPStatusCode()
		e.RetryAfter = provider.RetryAfter(re.Response.Header, time.Now())
	}
	status := e.Status
	switch code := api.ErrorCode(); code {
	case "ThrottlingException", "ServiceQuotaExceededException":
		e.Reason, e.Type = chain.RateLimit, "rate_limit_error"
	case "ServiceUnavailableException", "InternalServerException", "ModelNotReadyException", "ModelStreamErrorException":
		e.Reason, e.Type = chain.ServerError, "server_error"
	case "ModelTimeoutException":
		e.Reason, e.Type = chain.Timeout, "server_error"
	case "AccessDeniedException":
		// The gateway's IAM role lacks access to the model: not the caller's fault.
		e.Status, e.Type = http.StatusBadGateway, provider.UpstreamAuthType
		e.Message = "provider " + a.name + " was denied access to model " + model + " (check the IAM policy and the model access settings)"
	case "ResourceNotFoundException":
		e.Status, e.Type, e.Code = http.StatusNotFound, "invalid_request_error", "model_not_found"
		e.Message = "provider " + a.name + " has no model " + model + " in this region"
	case "ValidationException":
		e.Status, e.Type = http.StatusBadRequest, "invalid_request_error"
		// Bedrock names no code for a too-long prompt; its messages say "too long".
		if lower := strings.ToLower(api.ErrorMessage()); strings.Contains(lower, "too long") || strings.Contains(lower, "context window") || strings.Contains(lower, "input length") {
			e.Code = provider.ContextLengthCode
		}
	default:
		e.Reason, e.Type = provider.ReasonForStatus(status), "server_error"
		if e.Reason == "" {
			e.Type = "invalid_request_error"
			if status == 0 || status >= 400 {
				e.Status = http.StatusBadRequest
			}
		}
	}
	return e
}
