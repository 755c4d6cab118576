package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/event"
)

// Writer is the audit log's consumer of events (the audit-writer Lambda, the local bus).
type Writer struct {
	Store     Store
	Retention time.Duration // how long entries are kept; 0 means Retention
}

// Write stores the entry for e, once however often e is delivered.
func (w *Writer) Write(ctx context.Context, e event.Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	keep := w.Retention
	if keep == 0 {
		keep = Retention
	}
	if _, err := w.Store.Put(ctx, FromEvent(e), e.Created.Add(keep)); err != nil {
		return fmt.Errorf("audit: storing %s: %w", e.ID, err)
	}
	return nil
}
