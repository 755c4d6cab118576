package receipt

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// MaxBundleID is the longest bundle id GET /receipts/{bundleId} accepts (SPEC 8).
const MaxBundleID = 128

// Handler serves GET /receipts/{bundleId} to the key that made the request. Register it under
// that pattern (the id is read with r.PathValue("bundleId")) and also under "GET /receipts/{$}"
// so a missing id gets its 400. Store and Fail are required.
type Handler struct {
	Store Store
	// Fail writes err (a *fault.Error) in the surface's envelope.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
}

// writeBehind is a Store that commits writes some time after it takes them (the embedded store):
// a receipt lost in a crash within that window is missing, and a 404 says so.
type writeBehind interface {
	WriteBehind() time.Duration
}

// Response is the body of a found receipt.
type Response struct {
	Success  bool   `json:"success"`
	BundleID string `json:"bundle_id"`
	// Receipt is the compact JWS: verify it against /.well-known/jwks.json.
	Receipt string `json:"receipt"`
	// Claims is the receipt's payload, decoded for reading; only the JWS is proof.
	Claims json.RawMessage `json:"claims"`
	JWKS   string          `json:"jwks_url"`
}

func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller := identity.Key(r.Context())
	if caller == nil {
		h.Fail(w, r, fault.New(fault.Unauthenticated, "Invalid API key", "this route needs an API key"))
		return
	}
	id := r.PathValue("bundleId")
	switch {
	case id == "":
		h.Fail(w, r, fault.Invalid("bundleId", "the receipt's bundle id is missing: GET /receipts/{bundleId}"))
		return
	case len(id) > MaxBundleID:
		h.Fail(w, r, fault.Invalid("bundleId", fmt.Sprintf("bundle id is %d characters, at most %d", len(id), MaxBundleID)))
		return
	}
	rec, err := h.Store.Receipt(r.Context(), id)
	// Another key's receipt is answered exactly like a missing one, so ids cannot be probed.
	if errors.Is(err, ErrNotFound) || err == nil && rec.KeyID != caller.ID {
		msg := "no receipt " + id + " for this API key"
		if wb, ok := h.Store.(writeBehind); ok {
			msg += fmt.Sprintf(" (this store commits receipts every %s, so a receipt issued less than %[1]s before the gateway stopped abnormally — kill -9, power loss — may have been lost)",
				wb.WriteBehind())
		}
		h.Fail(w, r, fault.New(fault.NotFound, "Not found", msg))
		return
	}
	if err != nil {
		h.Fail(w, r, fault.Dependency("the receipt store", "the receipt store cannot be read now", err))
		return
	}
	var payload []byte
	parts := strings.Split(rec.JWS, ".")
	if len(parts) == 3 {
		payload, err = base64.RawURLEncoding.DecodeString(parts[1])
	}
	if len(parts) != 3 || err != nil {
		h.Fail(w, r, fault.New(fault.Internal, "Internal error", "stored receipt is corrupt").Wrap(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "private, no-store")
	_ = json.NewEncoder(w).Encode(Response{Success: true, BundleID: id, Receipt: rec.JWS, Claims: payload, JWKS: "/.well-known/jwks.json"})
}
