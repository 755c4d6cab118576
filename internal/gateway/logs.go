package gateway

import (
	"context"
	"errors"
	"log/slog"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
)

// logObserver gives the access line its completion facts and writes one line per failover
// transition, and one for a bill or receipt that could not be kept after an answer was served.
type logObserver struct{ log *slog.Logger }

func (l logObserver) FailedOver(ctx context.Context, f completion.Failover) {
	l.log.LogAttrs(ctx, slog.LevelWarn, "failover", slog.String("request_id", f.RequestID), slog.String("key_id", keyID(f.Key)),
		slog.String("failed_model", f.Failed), slog.String("reason", string(f.Reason)), slog.String("next_model", f.Next),
		slog.Int64("latency_ms", f.Latency.Milliseconds()))
}

func (l logObserver) Finished(ctx context.Context, o completion.Outcome) {
	attempts := 0
	for _, a := range o.Report.Attempts {
		if a.Status != chain.Skipped {
			attempts++
		}
	}
	if attempts == 0 && o.Served != "" {
		attempts = 1 // a single-model request has no report
	}
	httpapi.NoteCompletion(ctx, keyID(o.Key), o.Served, attempts)
	for i, err := range []error{o.BillingErr, o.ReceiptErr} {
		// The settlement and the receipt are one write: its failure is both errors, logged once.
		if err != nil && (i == 0 || !errors.Is(err, o.BillingErr)) {
			l.log.ErrorContext(ctx, "recording a served request failed", "request_id", o.RequestID, "err", err)
		}
	}
}

func keyID(k *apikey.Key) string {
	if k == nil {
		return ""
	}
	return k.ID
}
