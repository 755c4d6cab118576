package reqstats

import (
	"context"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
)

// Report is the answer of GET /admin/stats/requests?range=hour|day|week: the range's buckets,
// oldest first, each with its counts by surface and outcome, and their totals.
type Report struct {
	Success    bool         `json:"success"`
	Range      string       `json:"range"`
	Resolution string       `json:"resolution"`
	Buckets    []BucketView `json:"buckets"`
	Total      int64        `json:"total"`
	Served     int64        `json:"served"`
	Failed     int64        `json:"failed"`
}

// CountsView is one surface's counts.
type CountsView struct {
	Served int64 `json:"served"`
	Failed int64 `json:"failed"`
}

// BucketView is one bucket as the API shows it.
type BucketView struct {
	Start     time.Time  `json:"start"`
	Total     int64      `json:"total"`
	Served    int64      `json:"served"`
	Failed    int64      `json:"failed"`
	OpenAI    CountsView `json:"openai"`
	Classic   CountsView `json:"classic"`
	Messages  CountsView `json:"messages"`
	Responses CountsView `json:"responses"`
}

func view(b *Bucket) BucketView {
	of := func(s Surface) CountsView { return CountsView{b.N[s][Served], b.N[s][Failed]} }
	v := BucketView{Start: b.Start, OpenAI: of(OpenAI), Classic: of(Classic), Messages: of(Messages), Responses: of(Responses)}
	for s := range b.N {
		v.Served, v.Failed = v.Served+b.N[s][Served], v.Failed+b.N[s][Failed]
	}
	v.Total = v.Served + v.Failed
	return v
}

// Read reports the range named name ("" is the hour) ending at now; an unknown name is an input
// error naming the ranges.
func Read(ctx context.Context, store Store, name string, now time.Time) (*Report, error) {
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
		return nil, fault.Invalid("range", "range must be one of "+strings.Join(names, ", "))
	}
	bs, err := Series(ctx, store, *rg, now)
	if err != nil {
		return nil, err
	}
	rep := &Report{Success: true, Range: rg.Name, Resolution: rg.Res.String(), Buckets: make([]BucketView, len(bs))}
	for i := range bs {
		v := view(&bs[i])
		rep.Buckets[i] = v
		rep.Total, rep.Served, rep.Failed = rep.Total+v.Total, rep.Served+v.Served, rep.Failed+v.Failed
	}
	return rep, nil
}
