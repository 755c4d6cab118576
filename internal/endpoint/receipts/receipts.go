// Package receipts is the endpoint GET /receipts/{bundleId}: a served request's signed receipt,
// for the key that made it.
package receipts

import (
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/accountapi"
	"github.com/secureai-gateway/gateway/internal/api/classicapi"
	"github.com/secureai-gateway/gateway/internal/gateway"
)

// Endpoint is GET /receipts/{bundleId}.
var Endpoint = gateway.Endpoint{Function: "ReceiptsFunction", Routes: []string{"GET /receipts/{bundleId}", "GET /receipts/{$}"},
	Render: classicapi.Render, Build: New, Needs: gateway.NeedsReceipts}

// New builds the endpoint.
func New(d gateway.Deps) (http.Handler, error) {
	if d.Receipts == nil {
		return nil, &gateway.OffError{Endpoint: "GET /receipts/{bundleId}", Needs: "the receipts table (SECUREAI_TABLE_RECEIPTS)"}
	}
	d = d.WithDefaults()
	return gateway.Table(classicapi.Render, gateway.Reader(d, classicapi.Render), accountapi.Receipts{Store: d.Receipts}.Routes()), nil
}
