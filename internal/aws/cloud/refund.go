package cloud

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// RefundSweep is the scheduled refund-sweep function's handler: it refunds every reservation
// whose hold expired (its request's deadline and the hold margin passed without a settlement),
// each exactly once (dynamostore.Store.RefundExpired), and logs how many. A failure is returned,
// so the invocation errs (the function's Errors alarm) and the next run tries again.
func (c *Cloud) RefundSweep(ctx context.Context, _ events.EventBridgeEvent) error {
	n, err := c.Store.RefundExpired(ctx, time.Now())
	if n > 0 {
		c.Log.InfoContext(ctx, "refunded reservations not settled by their deadline", "count", n)
	}
	return err
}
