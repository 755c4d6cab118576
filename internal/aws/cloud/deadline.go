package cloud

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/store/keycache"
)

// retryAfter is what a caller is told to wait after a dependency outage.
const retryAfter = time.Second

// beforeDeadline returns ctx ending reserve before its deadline; ctx itself when it has none.
func beforeDeadline(ctx context.Context, reserve time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-reserve))
	}
	return ctx, func() {}
}

// endBeforeDeadline makes every SDK call built from cfg end reserve before its caller's
// deadline, retries included: a DynamoDB table or a secret that accepts a connection and never
// answers leaves the function the reserve to say so. No client built from cfg streams a response
// past its call (Bedrock has its own configuration), so ending the context on return is safe.
func endBeforeDeadline(cfg *aws.Config, reserve time.Duration) {
	cfg.APIOptions = append(cfg.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("SecureAIEndBeforeDeadline",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				ctx, cancel := beforeDeadline(ctx, reserve)
				defer cancel()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// Keys is the functions' key lookup: the warm-function cache over the key store, which a caller
// waits on until the reserve before its deadline at most (the cache's shared read runs detached
// from any one caller). A store that fails or does not answer in time is a dependency outage
// (fault.Unavailable: 503 with Retry-After), not an internal error.
type Keys struct{ inner *keycache.Cache }

// KeyByHash looks the key up by the SHA-256 of its secret.
func (k *Keys) KeyByHash(ctx context.Context, hash string) (*apikey.Key, error) {
	ctx, cancel := beforeDeadline(ctx, reserve)
	defer cancel()
	key, err := k.inner.KeyByHash(ctx, hash)
	if err != nil && !errors.Is(err, apikey.ErrNotFound) {
		return nil, dependencyError("the key store", err)
	}
	return key, err
}

// dependencyError marks err as an outage of what (fault.Unavailable) when it is one: the call
// ran out of time, or failed the way the SDK would retry (a lost connection, a 5xx, a throttle).
// Other errors (access denied, a missing table) are the deployment's fault and stay as they are.
func dependencyError(what string, err error) error {
	if fault.KindOf(err) == fault.Unavailable || !outage(err) {
		return err
	}
	return fault.New(fault.Unavailable, "Service unavailable", what+" is unavailable; retry shortly").
		WithCode("service_unavailable").WithRetryAfter(retryAfter).Wrap(err)
}

func outage(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}
