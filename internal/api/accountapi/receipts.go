package accountapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
	"github.com/secureai-gateway/gateway/internal/receipt"
)

// Receipts serves GET /receipts/{bundleId} to the key that made the request.
type Receipts struct {
	Store receipt.Store
}

// Routes is the table of the receipt route; GET /receipts/ (no id) gets its 400 too.
func (h Receipts) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /receipts/{bundleId}", Handle: h.get},
		{Pattern: "GET /receipts/{$}", Handle: h.get},
	}
}

// writeBehind is a Store that commits writes some time after it takes them (the embedded store):
// a receipt lost in a crash within that window is missing, and a 404 says so.
type writeBehind interface {
	WriteBehind() time.Duration
}

// ReceiptResponse is the body of a found receipt.
type ReceiptResponse struct {
	Success  bool   `json:"success"`
	BundleID string `json:"bundle_id"`
	// Receipt is the compact JWS: verify it against /.well-known/jwks.json.
	Receipt string `json:"receipt"`
	// Claims is the receipt's payload, decoded for reading; only the JWS is proof.
	Claims json.RawMessage `json:"claims"`
	JWKS   string          `json:"jwks_url"`
}

func (h Receipts) get(w http.ResponseWriter, r *http.Request) error {
	caller := identity.Key(r.Context())
	if caller == nil {
		return fault.New(fault.Unauthenticated, "Invalid API key", "this route needs an API key")
	}
	id := r.PathValue("bundleId")
	switch {
	case id == "":
		return fault.Invalid("bundleId", "the receipt's bundle id is missing: GET /receipts/{bundleId}")
	case len(id) > receipt.MaxBundleID:
		return fault.Invalid("bundleId", fmt.Sprintf("bundle id is %d characters, at most %d", len(id), receipt.MaxBundleID))
	}
	rec, err := h.Store.Receipt(r.Context(), id)
	// Another key's receipt is answered exactly like a missing one, so ids cannot be probed.
	if errors.Is(err, receipt.ErrNotFound) || err == nil && rec.KeyID != caller.ID {
		msg := "no receipt " + id + " for this API key"
		if wb, ok := h.Store.(writeBehind); ok {
			msg += fmt.Sprintf(" (this store commits receipts every %s, so a receipt issued less than %[1]s before the gateway stopped abnormally — kill -9, power loss — may have been lost)",
				wb.WriteBehind())
		}
		return fault.New(fault.NotFound, "Not found", msg)
	}
	if err != nil {
		return fault.Dependency("the receipt store", "the receipt store cannot be read now", err)
	}
	var payload []byte
	parts := strings.Split(rec.JWS, ".")
	if len(parts) == 3 {
		payload, err = base64.RawURLEncoding.DecodeString(parts[1])
	}
	if len(parts) != 3 || err != nil {
		return fault.New(fault.Internal, "Internal error", "stored receipt is corrupt").Wrap(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "private, no-store")
	_ = json.NewEncoder(w).Encode(ReceiptResponse{Success: true, BundleID: id, Receipt: rec.JWS, Claims: payload, JWKS: "/.well-known/jwks.json"})
	return nil
}
