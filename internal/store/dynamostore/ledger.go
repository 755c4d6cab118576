package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/limits"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// The Store is internal/ledger's Store: a request's admission and its settlement are each ONE
// TransactWriteItems, so a warm request makes one DynamoDB round trip before its first attempt
// and one after it. A refused transaction names the item that refused in its cancellation
// reasons, so the refusal needs no read to say which window is full; the user's item comes back
// with its refusal (ReturnValuesOnConditionCheckFailure), so neither does telling a stale period
// from a short quota.

// Admit implements ledger.Store: one Update per window (windowUpdates) and the user's charge
// (chargeUpdate) in one transaction; with no windows, the charge alone (UpdateItem).
func (s *Store) Admit(ctx context.Context, keyID string, ws []limits.Window, userID string, c *billing.Charge) (int, error) {
	full := -1
	err := s.withHolds(ctx, userID, func() (err error) {
		full, err = s.admit(ctx, keyID, ws, userID, c)
		return err
	})
	return full, err
}

func (s *Store) admit(ctx context.Context, keyID string, ws []limits.Window, userID string, c *billing.Charge) (int, error) {
	if len(ws) == 0 {
		if c == nil {
			return -1, nil
		}
		return -1, s.charge(ctx, userID, *c)
	}
	items := s.windowUpdates(keyID, ws)
	if c != nil {
		u, err := s.chargeUpdate(userID, *c)
		if err != nil {
			return -1, err
		}
		items = append(items, types.TransactWriteItem{Update: u})
	}
	reasons, canceled, err := s.transact(ctx, s.tables.Limits, items)
	if err != nil || !canceled {
		return -1, err
	}
	// The windows first: a request over its limits is refused as such, whatever its quota.
	for i := range ws {
		if conditionFailed(reasons, i) {
			return i, nil
		}
	}
	if c != nil && conditionFailed(reasons, len(ws)) {
		return -1, s.chargeRefused(ctx, userID, *c, reasons[len(ws)].Item)
	}
	// The cancellation did not say which item refused: read.
	full, err := s.fullWindow(ctx, keyID, ws)
	if err != nil || full >= 0 {
		return full, err
	}
	return -1, &OpError{Op: "TransactWriteItems", Table: s.tables.Limits, Err: errUnexplained}
}

// Settle implements ledger.Store: the user's charge and the receipt's put in one transaction;
// either alone is one plain write (UpdateItem, PutItem).
func (s *Store) Settle(ctx context.Context, userID string, c *billing.Charge, rec *receipt.Record) error {
	switch {
	case rec == nil && c == nil:
		return nil
	case rec == nil:
		return s.Charge(ctx, userID, *c)
	case c == nil:
		return s.PutReceipt(ctx, *rec)
	}
	u, err := s.chargeUpdate(userID, *c)
	if err != nil {
		return err
	}
	item, err := receiptItem(*rec)
	if err != nil {
		return err
	}
	put, err := conditionalPut(s.tables.Receipts, item, receiptAbsent())
	if err != nil {
		return err
	}
	reasons, canceled, err := s.transact(ctx, s.tables.Users, []types.TransactWriteItem{{Update: u}, {Put: put}})
	switch {
	case err != nil || !canceled:
		return err
	case conditionFailed(reasons, 1):
		return receipt.ErrExists
	case conditionFailed(reasons, 0):
		return s.chargeRefused(ctx, userID, *c, reasons[0].Item)
	}
	return &OpError{Op: "TransactWriteItems", Table: s.tables.Users, Err: errUnexplained}
}
