package openapitest

import (
	"context"
	"net/http"
)

// Documented reports whether docs/openapi.yaml describes r's route and method. A test that drives
// routes the document does not describe yet validates the documented ones (Handler) and serves
// the rest as they are; once the document gains a route, its exchanges are validated too.
func Documented(r *http.Request) bool {
	rt, err := router()
	if err != nil {
		return false
	}
	vr := r.Clone(context.Background())
	vr.Body = http.NoBody
	_, _, err = rt.FindRoute(vr)
	return err == nil
}
