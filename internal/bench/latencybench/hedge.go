package latencybench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
)

// The hedging benchmark (issue 23): a provider whose time to first token is heavy-tailed, and the
// time to first token a streaming caller sees through the gateway with no failover, with
// sequential failover after a first-token timeout, and with a hedge (hedge_after_ms).

// Tail models: three catalog models on the tail upstream, drawing their delays independently.
const (
	TailModel         = "bench/tail-a"
	TailFallbackModel = "bench/tail-b"
	TailThirdModel    = "bench/tail-c"
)

// TailUpstream delays each request's response — and so its first token — by Fast, or by Slow
// for a share SlowShare of requests drawn at random, then answers as Upstream does. It counts the
// requests it receives: the attempts the gateway made.
type TailUpstream struct {
	Fast, Slow time.Duration
	SlowShare  float64

	mu    sync.Mutex
	rng   *rand.Rand
	calls atomic.Int64
}

// NewTailUpstream draws from a fixed seed, so runs differ only by the order requests arrive in.
func NewTailUpstream(fast, slow time.Duration, slowShare float64) *TailUpstream {
	return &TailUpstream{Fast: fast, Slow: slow, SlowShare: slowShare, rng: rand.New(rand.NewPCG(23, 23))}
}

func (u *TailUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	u.mu.Lock()
	d := u.Fast
	if u.rng.Float64() < u.SlowShare {
		d = u.Slow
	}
	u.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		Upstream{}.ServeHTTP(w, r)
	case <-r.Context().Done(): // the gateway cancelled the attempt
	}
}

func tailCatalog(base string) *catalog.Catalog {
	return &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{"bench": {Type: "openai", BaseURL: base + "/v1"}},
		Models: map[string]*catalog.Model{
			TailModel:         {Name: TailModel, Provider: "bench", Upstream: UpstreamModel},
			TailFallbackModel: {Name: TailFallbackModel, Provider: "bench", Upstream: UpstreamModel},
			TailThirdModel:    {Name: TailThirdModel, Provider: "bench", Upstream: UpstreamModel},
		},
	}
}

// HedgeConfig is one hedging benchmark.
type HedgeConfig struct {
	Requests, Concurrency int
	Fast, Slow            time.Duration // the upstream's two times to first token
	SlowShare             float64
	FirstTokenTimeout     time.Duration // the sequential mode's first_token_timeout_ms on the first model
	HedgeAfter            time.Duration // the hedged mode's hedge_after_ms
}

// HedgeRow is one mode's result.
type HedgeRow struct {
	Mode     string
	TTFT     []time.Duration // sorted; requests that failed are not in it
	Failed   int
	Attempts float64 // upstream requests per request
}

// hedgeModes are each mode's name and chain fields.
func hedgeModes(c HedgeConfig) [][2]string {
	ftt, after := c.FirstTokenTimeout.Milliseconds(), c.HedgeAfter.Milliseconds()
	return [][2]string{
		{"no failover", modelField(TailModel)},
		{fmt.Sprintf("sequential, first_token_timeout_ms %d", ftt),
			fmt.Sprintf(`"models":[{"model":%q,"first_token_timeout_ms":%d},{"model":%q,"first_token_timeout_ms":%d},%q]`, TailModel, ftt, TailFallbackModel, ftt, TailThirdModel)},
		{fmt.Sprintf("hedged, hedge_after_ms %d", after),
			fmt.Sprintf(`"models":[%q,%q,%q],"redundancy":{"hedge_after_ms":%d}`, TailModel, TailFallbackModel, TailThirdModel, after)},
	}
}

// RunHedge measures each mode with Requests streamed requests at Concurrency, on a fresh upstream
// and gateway in this process.
func RunHedge(ctx context.Context, c HedgeConfig, progress io.Writer) ([]HedgeRow, error) {
	var rows []HedgeRow
	for _, m := range hedgeModes(c) {
		up := NewTailUpstream(c.Fast, c.Slow, c.SlowShare)
		env, err := start(Options{}, up, tailCatalog)
		if err != nil {
			return nil, err
		}
		row, err := runTail(ctx, env, c, chatBody(m[1], true))
		env.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m[0], err)
		}
		row.Mode, row.Attempts = m[0], float64(up.calls.Load())/float64(c.Requests)
		fmt.Fprintf(progress, "  %s: done\n", row.Mode)
		rows = append(rows, row)
	}
	return rows, nil
}

// runTail sends c.Requests streamed requests and records each one's time to its first body bytes:
// the gateway sends nothing of a stream before its first content token.
func runTail(ctx context.Context, env *Env, c HedgeConfig, body []byte) (HedgeRow, error) {
	client := NewClient(c.Concurrency)
	var (
		row  HedgeRow
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range c.Concurrency {
		wg.Go(func() {
			buf := make([]byte, 4096)
			for next.Add(1) <= int64(c.Requests) {
				ttft, ok := tailRequest(ctx, client, env, body, buf)
				mu.Lock()
				if ok {
					row.TTFT = append(row.TTFT, ttft)
				} else {
					row.Failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(row.TTFT)
	if row.Failed == c.Requests {
		return row, fmt.Errorf("every request failed")
	}
	return row, nil
}

func tailRequest(ctx context.Context, client *http.Client, env *Env, body, buf []byte) (time.Duration, bool) {
	req, err := http.NewRequestWithContext(ctx, "POST", env.GatewayURL, bytes.NewReader(body))
	if err != nil {
		return 0, false
	}
	req.Header.Set("Authorization", "Bearer "+env.Secret)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	n, _ := res.Body.Read(buf)
	ttft := time.Since(start)
	_, _ = io.Copy(io.Discard, res.Body)
	return ttft, res.StatusCode == http.StatusOK && n > 0
}

// ReportHedge prints the table and checks issue 23's target: hedging's p99 within
// 2 × hedge_after_ms + the fallback's p50 (the upstream's fast time, as measured without
// failover), at no more than 1.15 attempts per request. It reports whether the target was met.
func ReportHedge(w io.Writer, c HedgeConfig, rows []HedgeRow) bool {
	fmt.Fprintf(w, "\n| mode | p50 TTFT | p95 TTFT | p99 TTFT | attempts/request | failed |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f | %d |\n", r.Mode, ms(Percentile(r.TTFT, 50)), ms(Percentile(r.TTFT, 95)),
			ms(Percentile(r.TTFT, 99)), r.Attempts, r.Failed)
	}
	if len(rows) < 3 {
		return false
	}
	hedged, fallbackP50 := rows[2], Percentile(rows[0].TTFT, 50)
	bound := 2*c.HedgeAfter + fallbackP50
	p99 := Percentile(hedged.TTFT, 99)
	ok := p99 <= bound && hedged.Attempts <= 1.15 && hedged.Failed == 0
	fmt.Fprintf(w, "\nTarget: hedged p99 %s <= 2 x %s + fallback p50 %s = %s, at %.3f <= 1.15 attempts/request: %v\n",
		ms(p99), ms(c.HedgeAfter), ms(fallbackP50), ms(bound), hedged.Attempts, ok)
	return ok
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
