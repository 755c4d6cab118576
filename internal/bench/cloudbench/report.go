package cloudbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/secureai-gateway/gateway/internal/bench/latencybench"
)

// Targets of issue 17: sequential round trips before the first attempt and after the provider
// answered.
const (
	TargetWarmBeforeDynamo = 1 // DynamoDB rounds before the first attempt, warm
	TargetWarmAfterDynamo  = 1 // DynamoDB rounds after the provider answered, warm
	TargetColdBefore       = 3 // AWS rounds (secrets and DynamoDB) before the first attempt, cold
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func startName(cold bool) string {
	if cold {
		return "cold"
	}
	return "warm"
}

// Report prints the run's tables and verdict and reports whether every target was met.
func Report(w io.Writer, r *Run) (met bool) {
	ds := r.Config.Delays
	lo, hi := ds[0], ds[len(ds)-1]
	var keys []struct {
		mode string
		cold bool
	}
	for _, c := range r.Cells {
		if c.Delay == lo {
			keys = append(keys, struct {
				mode string
				cold bool
			}{c.Mode, c.Cold})
		}
	}

	held, service := map[time.Duration]time.Duration{}, map[time.Duration]time.Duration{}
	for _, d := range ds {
		var hs, sv []time.Duration
		for _, c := range r.Cells {
			if c.Delay == d {
				for _, req := range c.Requests {
					for _, s := range req.Calls {
						hs, sv = append(hs, s.Held), append(sv, s.Answer.Sub(s.Arrive)-s.Held)
					}
				}
			}
		}
		slices.Sort(hs)
		slices.Sort(sv)
		held[d], service[d] = latencybench.Percentile(hs, 50), latencybench.Percentile(sv, 50)
	}
	fmt.Fprintf(w, "Latency p50 (ms) per invocation, as the emulator answers it (streams buffered), and the slope:\n")
	fmt.Fprintf(w, "(p50 at D=%s − p50 at D=%s) / %s = the sequential AWS round trips on the path. The proxy really held a call\n", hi, lo, hi-lo)
	fmt.Fprintf(w, "p50 %s ms at D=%s and %s ms at D=%s (timer overshoot); \"held slope\" divides by that difference instead.\n", ms(held[lo]), lo, ms(held[hi]), hi)
	fmt.Fprintf(w, "moto's own time per call (answer − arrival − hold), p50: %s ms at D=%s, %s ms at D=%s: each round adds that difference / (D difference) to the slope.\n",
		ms(service[lo]), lo, ms(service[hi]), hi)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "mode\tstart\tn\t"
	for _, d := range ds {
		head += "D=" + d.String() + "\t"
	}
	fmt.Fprintln(tw, head+"slope\theld slope\trounds in records at D="+hi.String()+"\tfirst AWS call at (ms)\t")
	slopes := map[string]float64{}
	for _, k := range keys {
		line := fmt.Sprintf("%s\t%s\t%d\t", k.mode, startName(k.cold), len(r.Cell(lo, k.mode, k.cold).Requests))
		for _, d := range ds {
			line += ms(latencybench.Percentile(r.Cell(d, k.mode, k.cold).Latencies(), 50)) + "\t"
		}
		s := Slope(latencybench.Percentile(r.Cell(lo, k.mode, k.cold).Latencies(), 50),
			latencybench.Percentile(r.Cell(hi, k.mode, k.cold).Latencies(), 50), lo, hi)
		slopes[k.mode+startName(k.cold)] = s
		var total []int
		var first []time.Duration
		for _, req := range r.Cell(hi, k.mode, k.cold).Requests {
			pr := RoundsOf(req)
			total = append(total, pr.Before+pr.During+pr.After)
			if len(req.Calls) > 0 {
				first = append(first, slices.MinFunc(req.Calls, func(a, b Span) int { return a.Arrive.Compare(b.Arrive) }).Arrive.Sub(req.Start))
			}
		}
		slices.Sort(first)
		hs := Slope(latencybench.Percentile(r.Cell(lo, k.mode, k.cold).Latencies(), 50),
			latencybench.Percentile(r.Cell(hi, k.mode, k.cold).Latencies(), 50), held[lo], held[hi])
		fmt.Fprintf(tw, "%s%.1f\t%.1f\t%s\t%s\t\n", line, s, hs, stat(StatOf(total)), ms(latencybench.Percentile(first, 50)))
	}
	tw.Flush()

	fmt.Fprintf(w, "\nSequential round trips from the proxy's records, median [max] over each cell's requests:\n")
	fmt.Fprintf(w, "before = arrived before the first upstream attempt; during = while the attempts ran; after = after the provider answered\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tstart\tD\tbefore AWS\tbefore DynamoDB\tduring\tafter AWS\tafter DynamoDB\tcalls/req\tbackground calls/req\t")
	stats := map[string][5]Stat{} // by mode+start+delay
	for _, k := range keys {
		for _, d := range ds {
			c := r.Cell(d, k.mode, k.cold)
			var b, bd, du, a, ad []int
			calls := 0
			for _, req := range c.Requests {
				pr := RoundsOf(req)
				b, bd, du, a, ad = append(b, pr.Before), append(bd, pr.BeforeDynamo), append(du, pr.During), append(a, pr.After), append(ad, pr.AfterDynamo)
				calls += len(req.Calls)
			}
			st := [5]Stat{StatOf(b), StatOf(bd), StatOf(du), StatOf(a), StatOf(ad)}
			stats[k.mode+startName(k.cold)+d.String()] = st
			n := float64(len(c.Requests))
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", k.mode, startName(k.cold), d,
				stat(st[0]), stat(st[1]), stat(st[2]), stat(st[3]), stat(st[4]), float64(calls)/n, float64(len(c.Stray))/n)
		}
	}
	tw.Flush()

	fmt.Fprintf(w, "\nCall order of one representative request (the median-latency one) per cell at D=%s:\n", hi)
	for _, k := range keys {
		c := r.Cell(hi, k.mode, k.cold)
		if req, ok := Median(c.Requests); ok {
			fmt.Fprintf(w, "%s %s (%s ms):\n", k.mode, startName(k.cold), ms(req.End.Sub(req.Start)))
			callOrder(w, req)
		}
	}

	fmt.Fprintf(w, "\nCalls per warm request by operation, averaged over every delay's warm requests (before / during / after the attempts; background = between invocations):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\toperation\tper request\tbefore\tduring\tafter\tbackground\t")
	for _, k := range keys {
		if k.cold {
			continue
		}
		var reqs []Request
		var stray []Span
		for _, d := range ds {
			c := r.Cell(d, k.mode, false)
			reqs, stray = append(reqs, c.Requests...), append(stray, c.Stray...)
		}
		for _, o := range CallsPerRequest(reqs, stray) {
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", k.mode, o.Op, o.Total(), o.Before, o.During, o.After, o.Background)
		}
	}
	tw.Flush()

	if r.Cell(hi, "failover", false) != nil {
		failoverReport(w, r, hi, slopes)
	}

	met = true
	verdict := func(ok bool, what string) {
		word := "met"
		if !ok {
			word, met = "NOT met", false
		}
		fmt.Fprintf(w, "  %-7s %s\n", word, what)
	}
	fmt.Fprintf(w, "\nVerdict against issue 17's targets (records at D=%s, median over the cell; [max] shown):\n", hi)
	for _, mode := range []string{"plain", "stream"} {
		st := stats[mode+"warm"+hi.String()]
		verdict(st[1].Median <= TargetWarmBeforeDynamo, fmt.Sprintf("%s warm: %s sequential DynamoDB round trips before the first attempt (target ≤ %d)", mode, stat(st[1]), TargetWarmBeforeDynamo))
		verdict(st[4].Median <= TargetWarmAfterDynamo, fmt.Sprintf("%s warm: %s sequential DynamoDB round trips after the provider answered (target ≤ %d)", mode, stat(st[4]), TargetWarmAfterDynamo))
		cs := stats[mode+"cold"+hi.String()]
		verdict(cs[0].Median <= TargetColdBefore, fmt.Sprintf("%s cold: %s sequential AWS round trips before the first attempt (target ≤ %d)", mode, stat(cs[0]), TargetColdBefore))
	}
	return met
}

func stat(s Stat) string {
	if s.Max == s.Median {
		return fmt.Sprint(s.Median)
	}
	return fmt.Sprintf("%d [%d]", s.Median, s.Max)
}

// callOrder prints a request's AWS calls and upstream attempts in arrival order, each with its
// phase and its times from the invoke's start.
func callOrder(w io.Writer, r Request) {
	type line struct {
		s       Span
		attempt bool
	}
	var lines []line
	for _, c := range r.Calls {
		lines = append(lines, line{c, false})
	}
	for _, a := range r.Attempts {
		lines = append(lines, line{a, true})
	}
	slices.SortFunc(lines, func(a, b line) int { return a.s.Arrive.Compare(b.s.Arrive) })
	p := r.Split()
	phase := func(s Span) string {
		for name, spans := range map[string][]Span{"before": p.Before, "during": p.During, "after": p.After} {
			if slices.Contains(spans, s) {
				return name
			}
		}
		return "?"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		at := fmt.Sprintf("%7s–%-7s", ms(l.s.Arrive.Sub(r.Start)), ms(l.s.Answer.Sub(r.Start)))
		if l.attempt {
			fmt.Fprintf(tw, "    %s\tATTEMPT\tupstream model %s\t\n", at, l.s.Op)
			continue
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t\n", at, phase(l.s), l.s.Op, l.s.Detail)
	}
	fmt.Fprintf(tw, "    %7s\tEND\t(invoke answered)\t\n", ms(r.End.Sub(r.Start)))
	tw.Flush()
}

// failoverReport shows where PutEvents falls in failover requests: whether it ran beside the
// other calls or the invocation's end waited for it alone, and the failover's slope beside a
// plain request's.
func failoverReport(w io.Writer, r *Run, hi time.Duration, slopes map[string]float64) {
	c := r.Cell(hi, "failover", false)
	var puts, twoAttempts, overlapped, last int
	var lastBy []time.Duration
	for _, req := range c.Requests {
		if len(req.Attempts) >= 2 {
			twoAttempts++
		}
		for _, s := range req.Calls {
			if !strings.HasSuffix(s.Op, ".PutEvents") {
				continue
			}
			puts++
			var others time.Time // the last answer of the request's other calls
			beside := false
			for _, o := range req.Calls {
				if o == s {
					continue
				}
				if o.Answer.After(others) {
					others = o.Answer
				}
				if o.Arrive.Before(s.Answer) && s.Arrive.Before(o.Answer) {
					beside = true
				}
			}
			if beside {
				overlapped++
			}
			if s.Answer.After(others) {
				last++
				lastBy = append(lastBy, s.Answer.Sub(others))
			}
		}
	}
	slices.Sort(lastBy)
	fmt.Fprintf(w, "\nFailover (%s, whose upstream answers 500, then %s) at D=%s, %d warm requests, %d with both attempts:\n",
		latencybench.FailModel, latencybench.Model, hi, len(c.Requests), twoAttempts)
	fmt.Fprintf(w, "  %d PutEvents calls in the invocations (%d between them); %d ran beside another AWS call (the settlement);\n",
		puts, countOp(c.Stray, ".PutEvents"), overlapped)
	fmt.Fprintf(w, "  %d were answered after every other call of their request, so the invocation's end waited on them (flush before the stream ends), by p50 %s ms.\n",
		last, ms(latencybench.Percentile(lastBy, 50)))
	diff := slopes["failoverwarm"] - slopes["plainwarm"]
	off := "yes"
	if overlapped < puts || diff >= 1 {
		off = "NO"
	}
	fmt.Fprintf(w, "  Slope: failover %.1f vs plain %.1f sequential round trips (%+.1f). PutEvents off the sequential path (every one beside another call, slopes within 1): %s.\n",
		slopes["failoverwarm"], slopes["plainwarm"], diff, off)
}

func countOp(spans []Span, suffix string) int {
	n := 0
	for _, s := range spans {
		if strings.HasSuffix(s.Op, suffix) {
			n++
		}
	}
	return n
}
