package reqstats

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Handler serves GET /admin/stats/requests?range=hour|day|week: the range's buckets, oldest
// first, each with its counts by surface and outcome. It authenticates no one: the admin API
// wraps it.
type Handler struct {
	Store Store
	Fail  func(http.ResponseWriter, *http.Request, error)
	Now   func() time.Time // nil: time.Now
}

// Route is where Handler is mounted.
const Route = "GET /admin/stats/requests"

type countsView struct {
	Served int64 `json:"served"`
	Failed int64 `json:"failed"`
}

type bucketView struct {
	Start   time.Time  `json:"start"`
	Total   int64      `json:"total"`
	Served  int64      `json:"served"`
	Failed  int64      `json:"failed"`
	OpenAI  countsView `json:"openai"`
	Classic countsView `json:"classic"`
}

func view(b *Bucket) bucketView {
	v := bucketView{Start: b.Start,
		OpenAI:  countsView{b.N[OpenAI][Served], b.N[OpenAI][Failed]},
		Classic: countsView{b.N[Classic][Served], b.N[Classic][Failed]}}
	v.Served, v.Failed = v.OpenAI.Served+v.Classic.Served, v.OpenAI.Failed+v.Classic.Failed
	v.Total = v.Served + v.Failed
	return v
}

func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("range")
	if name == "" {
		name = "hour"
	}
	var rg *Range
	names := make([]string, len(Ranges))
	for i := range Ranges {
		names[i] = Ranges[i].Name
		if Ranges[i].Name == name {
			rg = &Ranges[i]
		}
	}
	if rg == nil {
		h.Fail(w, r, fault.Invalid("range", "range must be one of "+strings.Join(names, ", ")))
		return
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	bs, err := Series(r.Context(), h.Store, *rg, now())
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	out := make([]bucketView, len(bs))
	var total bucketView
	for i := range bs {
		out[i] = view(&bs[i])
		total.Total, total.Served, total.Failed = total.Total+out[i].Total, total.Served+out[i].Served, total.Failed+out[i].Failed
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "range": rg.Name, "resolution": rg.Res.String(),
		"buckets": out, "total": total.Total, "served": total.Served, "failed": total.Failed})
}
