// Package report turns measurements into what people read: the YCSB-style
// terminal summary and summary.json's totals (ycsb.go), the end of a
// scenario's terminal summary (summary.go); the one list of metric rows
// that the terminal's results table, compare and report.html render
// (table.go); report.html, one self-contained page of inline SVG charts
// and tables, and plots/*.png, the same charts rendered in Go (Render,
// from a run directory read by Load); and the side-by-side comparison of
// runs as text, Markdown, CSV or HTML (Compare). Package live shows a run
// while it runs.
package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/rundir"
)

// LatencyBasis says which latency the YCSB summary shows, as YCSB's
// measurement.interval property: "intended" (from the intended start; the
// faultbench default), "op" (service time, YCSB's default) or "both".
type LatencyBasis string

// The bases.
const (
	Intended LatencyBasis = "intended"
	Service  LatencyBasis = "op"
	Both     LatencyBasis = "both"
)

// ParseLatencyBasis validates a measurement.interval value.
func ParseLatencyBasis(s string) (LatencyBasis, error) {
	switch LatencyBasis(s) {
	case Intended, Service, Both:
		return LatencyBasis(s), nil
	}
	return "", fmt.Errorf("must be op, intended or both")
}

// WriteYCSB prints the YCSB-style summary: [OVERALL] RunTime and
// Throughput, then per operation type Operations, latencies and Return
// counts: Return=NOT_FOUND for reads of missing keys (as YCSB), and the
// failures split by faultbench's classes after YCSB's Return=ERROR line.
// The [READ] and [UPDATE] rows include the read and the update of each
// READ-MODIFY-WRITE (measure.Totals.Parts), as YCSB's DBWrapper counts
// them; [OVERALL] counts each operation of the workload once.
func WriteYCSB(w io.Writer, t *measure.Totals, basis LatencyBasis) {
	secs := t.Duration.Seconds()
	var all int64
	for _, o := range t.Ops {
		all += o.OK + sumErrors(o)
	}
	fmt.Fprintf(w, "[OVERALL], RunTime(ms), %.0f\n", secs*1000)
	tp := 0.0
	if secs > 0 {
		tp = float64(all) / secs
	}
	fmt.Fprintf(w, "[OVERALL], Throughput(ops/sec), %.1f\n", tp)
	if n := t.CutCount(); n > 0 {
		fmt.Fprintf(w, "[OVERALL], Cut(in flight at the deadline), %d\n", n)
	}
	if h := t.All.Wake; h != nil && h.TotalCount() > 0 {
		// the harness's own share of the intended-start latency
		fmt.Fprintf(w, "[OVERALL], WakeLagP50(us), %d\n", h.ValueAtQuantile(50))
		fmt.Fprintf(w, "[OVERALL], WakeLagP99(us), %d\n", h.ValueAtQuantile(99))
	}
	for i, o := range t.Ops {
		if i < len(t.Parts) {
			o = withPart(o, t.Parts[i])
		}
		n := o.OK + sumErrors(o)
		if n == 0 {
			continue
		}
		switch basis {
		case Service:
			writeOp(w, o.Name, n, o, o.Service)
		case Both:
			writeOp(w, o.Name, n, o, o.Service)
			writeOp(w, "Intended-"+o.Name, n, o, o.Intended)
		default:
			writeOp(w, o.Name, n, o, o.Intended)
		}
	}
}

// withPart returns o with the parts of other operations that are what o is
// (measure.Totals.Parts: the read and the update of a READ-MODIFY-WRITE)
// added, as YCSB's [READ] and [UPDATE] rows count them; o itself is not
// modified.
func withPart(o, p measure.OpTotals) measure.OpTotals {
	if p.OK+sumErrors(p) == 0 {
		return o
	}
	o.OK += p.OK
	for _, c := range outcome.ErrorClasses() {
		o.Errors[c] += p.Errors[c]
	}
	o.Behind += p.Behind
	o.Intended, o.Service = merged(o.Intended, p.Intended), merged(o.Service, p.Service)
	return o
}

// merged returns a new histogram holding a's and b's values (nil ones are
// empty).
func merged(a, b *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	tmpl := a
	if tmpl == nil {
		tmpl = b
	}
	if tmpl == nil {
		return nil
	}
	h := hdrhistogram.New(tmpl.LowestTrackableValue(), tmpl.HighestTrackableValue(), int(tmpl.SignificantFigures()))
	for _, x := range []*hdrhistogram.Histogram{a, b} {
		if x != nil {
			h.Merge(x)
		}
	}
	return h
}

func sumErrors(o measure.OpTotals) int64 {
	var n int64
	for _, c := range outcome.ErrorClasses() {
		n += o.Errors[c]
	}
	return n
}

func writeOp(w io.Writer, name string, n int64, o measure.OpTotals, h *hdrhistogram.Histogram) {
	l := rundir.LatencyOf(h)
	fmt.Fprintf(w, "[%s], Operations, %d\n", name, n)
	fmt.Fprintf(w, "[%s], AverageLatency(us), %.2f\n", name, l.Mean)
	fmt.Fprintf(w, "[%s], MinLatency(us), %d\n", name, l.Min)
	fmt.Fprintf(w, "[%s], MaxLatency(us), %d\n", name, l.Max)
	fmt.Fprintf(w, "[%s], 50thPercentileLatency(us), %d\n", name, l.P50)
	fmt.Fprintf(w, "[%s], 95thPercentileLatency(us), %d\n", name, l.P95)
	fmt.Fprintf(w, "[%s], 99thPercentileLatency(us), %d\n", name, l.P99)
	fmt.Fprintf(w, "[%s], 99.9thPercentileLatency(us), %d\n", name, l.P999)
	fmt.Fprintf(w, "[%s], Return=OK, %d\n", name, o.OK)
	if n := o.Errors[outcome.NotFound]; n > 0 {
		fmt.Fprintf(w, "[%s], Return=NOT_FOUND, %d\n", name, n)
	}
	var e int64
	for _, c := range outcome.FailureClasses() {
		e += o.Errors[c]
	}
	if e > 0 {
		fmt.Fprintf(w, "[%s], Return=ERROR, %d\n", name, e)
		for _, c := range outcome.FailureClasses() {
			if o.Errors[c] > 0 {
				fmt.Fprintf(w, "[%s], Return=ERROR(%s), %d\n", name, strings.ToUpper(c.String()), o.Errors[c])
			}
		}
	}
	if o.Behind > 0 {
		fmt.Fprintf(w, "[%s], BehindSchedule, %d\n", name, o.Behind)
	}
}

// WriteErrorSamples prints, per operation and error class, the first error
// text of that kind (runner.Result.Samples), in the summary's line format:
// "[READ], SampleError(OTHER), not found".
func WriteErrorSamples(w io.Writer, samples map[string]map[string]string) {
	for _, op := range slices.Sorted(maps.Keys(samples)) {
		for _, cls := range slices.Sorted(maps.Keys(samples[op])) {
			text := strings.ReplaceAll(samples[op][cls], "\n", " ")
			if len(text) > 300 {
				text = text[:300] + "..."
			}
			fmt.Fprintf(w, "[%s], SampleError(%s), %s\n", op, strings.ToUpper(cls), text)
		}
	}
}

// WriteClients prints the per-client spread in the YCSB summary's style:
// each client group's throughput and latency percentiles (over every
// operation type and per type) and the coefficients of variation across
// clients. Nothing for nil or fewer than two clients.
func WriteClients(w io.Writer, s *analyze.ClientSpread) {
	if s == nil || len(s.Clients) < 2 {
		return
	}
	cv := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.4f", v)
	}
	uniform := "no"
	if s.Uniform {
		uniform = "yes"
	}
	fmt.Fprintf(w, "[CLIENTS], Clients, %d\n", len(s.Clients))
	fmt.Fprintf(w, "[CLIENTS], ThroughputCV, %s\n", cv(s.ThroughputCV))
	fmt.Fprintf(w, "[CLIENTS], Uniform(CV<%g), %s\n", analyze.UniformCV, uniform)
	fmt.Fprintf(w, "[CLIENTS], MeanLatencyCV, %s\n[CLIENTS], 95thPercentileLatencyCV, %s\n[CLIENTS], 99thPercentileLatencyCV, %s\n",
		cv(s.MeanLatencyCV), cv(s.P95CV), cv(s.P99CV))
	for _, op := range slices.Sorted(maps.Keys(s.PerOp)) {
		o := s.PerOp[op]
		fmt.Fprintf(w, "[CLIENTS %s], 95thPercentileLatency(us) mean/max over clients, %.0f/%d, CV %s\n", op, o.MeanP95Us, o.MaxP95Us, cv(o.P95CV))
		fmt.Fprintf(w, "[CLIENTS %s], 99thPercentileLatency(us) mean/max over clients, %.0f/%d, CV %s\n", op, o.MeanP99Us, o.MaxP99Us, cv(o.P99CV))
	}
	for _, c := range s.Clients {
		fmt.Fprintf(w, "[CLIENT %d], Workers, %d\n[CLIENT %d], Throughput(ops/sec), %.1f\n", c.Client, c.Workers, c.Client, c.ThroughputOps)
		fmt.Fprintf(w, "[CLIENT %d], Operations, %d, failed, %d\n", c.Client, c.OK+c.Errors, c.Errors)
		fmt.Fprintf(w, "[CLIENT %d], AverageLatency(us), %.1f, 50th/95th/99th(us), %d/%d/%d\n", c.Client, c.Latency.Mean, c.Latency.P50, c.Latency.P95, c.Latency.P99)
		for _, op := range slices.Sorted(maps.Keys(c.PerOp)) {
			l := c.PerOp[op]
			fmt.Fprintf(w, "[CLIENT %d %s], 50th/95th/99th(us), %d/%d/%d\n", c.Client, op, l.P50, l.P95, l.P99)
		}
	}
}
