package gateway

import (
	"time"

	"github.com/secureai-gateway/gateway/internal/idempotency"
)

// lambdaMaxDuration is the longest a Lambda invocation can run: with no local budget, an
// idempotency claim must outlast it, or a repeat could take over a request still running.
const lambdaMaxDuration = 15 * time.Minute

// newGuard runs Idempotency-Key requests of both chat surfaces; nil without a store.
func newGuard(d Deps) *idempotency.Guard {
	if d.Idempotency == nil {
		return nil
	}
	lease := lambdaMaxDuration + time.Minute
	if d.Budget > 0 {
		lease = d.Budget + time.Minute
	}
	return &idempotency.Guard{Store: d.Idempotency, TTL: idempotency.TTL, Lease: lease}
}
