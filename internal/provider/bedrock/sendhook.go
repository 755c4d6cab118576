package bedrock

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// withSendHook returns the per-call options that run hook on each HTTP request the SDK sends,
// or none when hook is nil, so a call without one costs nothing more.
//
// The SDK serialises the request itself, so its bytes exist only inside the middleware stack.
// The hook runs in the Finalize step after the retry loop (once per HTTP request) and before
// SigV4 signing (so headers it adds are signed): by then the body is final, and only headers
// follow.
func withSendHook(hook provider.SendHook) []func(*bedrockruntime.Options) {
	if hook == nil {
		return nil
	}
	return []func(*bedrockruntime.Options){func(o *bedrockruntime.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Insert(sendHook{hook}, "Signing", middleware.Before)
		})
	}}
}

type sendHook struct{ hook provider.SendHook }

func (sendHook) ID() string { return "GatewaySendHook" }

// HandleFinalize reads the serialised body and rewinds it for the signer and the transport, as
// the SDK's own payload hashing does: the stream is a seekable reader over the serialised bytes,
// so what the hook sees is what is sent.
func (m sendHook) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("bedrock: send hook: unexpected request type %T", in.Request)
	}
	var body []byte
	if stream := req.GetStream(); stream != nil {
		var err error
		if body, err = io.ReadAll(stream); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("bedrock: send hook: read the request body: %w", err)
		}
		if err := req.RewindStream(); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("bedrock: send hook: rewind the request body: %w", err)
		}
	}
	extra, err := m.hook.Call(ctx, body)
	if err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	for k, v := range extra {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	return next.HandleFinalize(ctx, in)
}
