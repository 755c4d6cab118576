package breaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Admin serves /admin/circuit-breakers behind the admin authentication:
//
//	GET    /admin/circuit-breakers                               → List
//	POST   /admin/circuit-breakers                               → Open
//	DELETE /admin/circuit-breakers/{subjectType}/{subjectId}     → Close
//
// Breakers and Fail are required.
type Admin struct {
	Breakers *Breakers
	// Fail writes err (a *fault.Error) in the admin envelope.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
}

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

func view(st State) View {
	v := View{Subject: st.Subject.String(), SubjectType: st.Subject.Kind, SubjectID: st.Subject.ID, Reason: st.Reason,
		OpenedBy: st.OpenedBy, OpenedAt: st.OpenedAt.UTC()}
	if !st.Until.IsZero() {
		u := st.Until.UTC()
		v.ClosesAt = &u
	}
	return v
}

// OpenRequest is the body of POST /admin/circuit-breakers.
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

// maxBody bounds the body of POST /admin/circuit-breakers: without it a decoder reads a body of
// any size into memory (the largest valid one is under 1 KiB).
const maxBody = 64 << 10

// List answers {"success":true,"circuitBreakers":[…]}.
func (a Admin) List(w http.ResponseWriter, r *http.Request) {
	all, err := a.Breakers.List(r.Context())
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	out := make([]View, len(all))
	for i, st := range all {
		out[i] = view(st)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "circuitBreakers": out})
}

// Open answers 201 {"success":true,"circuitBreaker":{…}}.
func (a Admin) Open(w http.ResponseWriter, r *http.Request) {
	var req OpenRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			a.Fail(w, r, fault.New(fault.TooLarge, "Request too large", fmt.Sprintf("the body is over %d bytes", maxBody)))
			return
		}
		a.Fail(w, r, fault.Invalid("", "body must be a JSON object {subjectType, subjectId, reason?, durationSeconds?}: "+err.Error()))
		return
	}
	s := Subject{Kind: req.SubjectType, ID: req.SubjectID}
	switch err := s.Validate(); {
	case err != nil && req.SubjectType != KindKey && req.SubjectType != KindUser:
		a.Fail(w, r, fault.Invalid("subjectType", err.Error()))
		return
	case err != nil:
		a.Fail(w, r, fault.Invalid("subjectId", err.Error()))
		return
	case len(req.Reason) > MaxReason:
		a.Fail(w, r, fault.Invalid("reason", fmt.Sprintf("reason is %d characters, at most %d", len(req.Reason), MaxReason)))
		return
	case req.DurationSeconds < 0 || time.Duration(req.DurationSeconds)*time.Second > MaxDuration:
		a.Fail(w, r, fault.Invalid("durationSeconds", fmt.Sprintf("durationSeconds must be between 0 and %d", int64(MaxDuration/time.Second))))
		return
	}
	st := State{Subject: s, Reason: req.Reason, OpenedBy: actor(r)}
	if req.DurationSeconds > 0 {
		st.Until = a.Breakers.cfg.Now().UTC().Add(time.Duration(req.DurationSeconds) * time.Second)
	}
	st, err := a.Breakers.Open(r.Context(), st)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "circuitBreaker": view(st)})
}

// Close answers {"success":true,"circuitBreaker":{…}} with the breaker it closed, 404 when none
// is open.
func (a Admin) Close(w http.ResponseWriter, r *http.Request) {
	s := Subject{Kind: r.PathValue("subjectType"), ID: r.PathValue("subjectId")}
	if err := s.Validate(); err != nil {
		a.Fail(w, r, fault.Invalid("subjectId", err.Error()))
		return
	}
	st, err := a.Breakers.Close(r.Context(), s, actor(r))
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "circuitBreaker": view(st)})
}

func actor(r *http.Request) string {
	if k := identity.Key(r.Context()); k != nil {
		return "admin:" + k.ID
	}
	return "admin"
}

// writeJSON is not httpapi.WriteJSON because the stores (boltstore, dynamostore) import breaker
// and must not depend on the HTTP edge.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
