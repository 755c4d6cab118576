package breaker

import (
	"context"
	"fmt"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// View is a breaker as the admin API shows it.
type View struct {
	Subject     string     `json:"subject"` // "key:<id>" or "user:<id>"
	SubjectType string     `json:"subjectType"`
	SubjectID   string     `json:"subjectId"`
	Reason      string     `json:"reason,omitempty"`
	OpenedBy    string     `json:"openedBy"`
	OpenedAt    time.Time  `json:"openedAt"`
	ClosesAt    *time.Time `json:"closesAt,omitempty"` // absent: open until an admin closes it
}

// ViewOf is st as the admin API shows it.
func ViewOf(st State) View {
	v := View{Subject: st.Subject.String(), SubjectType: st.Subject.Kind, SubjectID: st.Subject.ID, Reason: st.Reason,
		OpenedBy: st.OpenedBy, OpenedAt: st.OpenedAt.UTC()}
	if !st.Until.IsZero() {
		u := st.Until.UTC()
		v.ClosesAt = &u
	}
	return v
}

// OpenRequest is an admin's request to open a breaker (the body of POST /admin/circuit-breakers).
type OpenRequest struct {
	SubjectType string `json:"subjectType"`
	SubjectID   string `json:"subjectId"`
	Reason      string `json:"reason"`
	// DurationSeconds closes it on its own after that long; 0 or absent: open until closed.
	DurationSeconds int64 `json:"durationSeconds"`
}

// Limits of OpenRequest.
const (
	MaxReason   = 500
	MaxDuration = 30 * 24 * time.Hour
)

// OpenRequested validates req, naming the first wrong field in a fault.Invalid, checks that its
// subject exists with exists (its error — a fault.NotFound — is returned as it is; nil: not
// checked), and opens the breaker it asks for on behalf of actor.
func (b *Breakers) OpenRequested(ctx context.Context, req OpenRequest, actor string, exists func(context.Context, Subject) error) (State, error) {
	s := Subject{Kind: req.SubjectType, ID: req.SubjectID}
	switch err := s.Validate(); {
	case err != nil && req.SubjectType != KindKey && req.SubjectType != KindUser:
		return State{}, fault.Invalid("subjectType", err.Error())
	case err != nil:
		return State{}, fault.Invalid("subjectId", err.Error())
	case len(req.Reason) > MaxReason:
		return State{}, fault.Invalid("reason", fmt.Sprintf("reason is %d characters, at most %d", len(req.Reason), MaxReason))
	case req.DurationSeconds < 0 || time.Duration(req.DurationSeconds)*time.Second > MaxDuration:
		return State{}, fault.Invalid("durationSeconds", fmt.Sprintf("durationSeconds must be between 0 and %d", int64(MaxDuration/time.Second)))
	}
	if exists != nil {
		if err := exists(ctx, s); err != nil {
			return State{}, err
		}
	}
	st := State{Subject: s, Reason: req.Reason, OpenedBy: actor}
	if req.DurationSeconds > 0 {
		st.Until = b.cfg.Now().UTC().Add(time.Duration(req.DurationSeconds) * time.Second)
	}
	return b.Open(ctx, st)
}

// CloseRequested validates the subject an admin names and closes its breaker on behalf of actor:
// a fault.NotFound when none is open.
func (b *Breakers) CloseRequested(ctx context.Context, kind, id, actor string) (State, error) {
	s := Subject{Kind: kind, ID: id}
	if err := s.Validate(); err != nil {
		return State{}, fault.Invalid("subjectId", err.Error())
	}
	return b.Close(ctx, s, actor)
}
