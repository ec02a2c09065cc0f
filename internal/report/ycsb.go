// Package report turns measurements into what people read: the YCSB-style
// terminal summary and summary.json's totals (ycsb.go); report.html, one
// self-contained page of inline SVG charts and tables, and plots/*.png,
// the same charts rendered in Go (Render, from a run directory read by
// Load); and the side-by-side comparison of runs as text, Markdown, CSV or
// HTML (Compare). Sub-package live shows a run while it runs.
package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
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

// OpStats is one operation type's totals in summary.json.
type OpStats struct {
	Count        int64            `json:"count"`
	OK           int64            `json:"ok"`
	Errors       map[string]int64 `json:"errors"`
	Behind       int64            `json:"behind_schedule"`
	ThroughputOp float64          `json:"throughput_ops"`
	Latency      Latency          `json:"latency_us"`
	Service      Latency          `json:"service_time_us"`
}

// Latency is a histogram's summary in microseconds.
type Latency struct {
	Mean  float64 `json:"mean"`
	Min   int64   `json:"min"`
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P95   int64   `json:"p95"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p99_9"`
	Max   int64   `json:"max"`
	Count int64   `json:"count"`
}

// LatencyOf summarises h (nil gives zeros).
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Mean: h.Mean(), Min: h.Min(), Max: h.Max(), Count: h.TotalCount(),
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P95: h.ValueAtQuantile(95),
		P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9),
	}
}

// Totals is the measurement part of summary.json.
type Totals struct {
	RunTimeMs     float64            `json:"runtime_ms"`
	ThroughputOps float64            `json:"throughput_ops"`
	Operations    int64              `json:"operations"`
	OK            int64              `json:"ok"`
	Errors        map[string]int64   `json:"errors"`
	Behind        int64              `json:"behind_schedule"`
	PerOp         map[string]OpStats `json:"per_op"`
	All           OpStats            `json:"all"`
}

// TotalsOf converts measure totals into summary form.
func TotalsOf(t *measure.Totals) Totals {
	secs := t.Duration.Seconds()
	conv := func(o measure.OpTotals) OpStats {
		s := OpStats{OK: o.OK, Behind: o.Behind, Errors: map[string]int64{},
			Latency: LatencyOf(o.Intended), Service: LatencyOf(o.Service)}
		s.Count = o.OK
		for _, c := range outcome.ErrorClasses() {
			s.Errors[c.String()] = o.Errors[c]
			s.Count += o.Errors[c]
		}
		if secs > 0 {
			s.ThroughputOp = float64(o.OK) / secs
		}
		return s
	}
	out := Totals{RunTimeMs: float64(t.Duration) / float64(time.Millisecond), PerOp: map[string]OpStats{}}
	for _, o := range t.Ops {
		s := conv(o)
		if s.Count > 0 {
			out.PerOp[o.Name] = s
		}
	}
	out.All = conv(t.All)
	out.Operations, out.OK, out.Errors, out.Behind = out.All.Count, out.All.OK, out.All.Errors, out.All.Behind
	if secs > 0 {
		out.ThroughputOps = float64(out.All.Count) / secs
	}
	return out
}

// WriteYCSB prints the YCSB-style summary: [OVERALL] RunTime and
// Throughput, then per operation type Operations, latencies and Return
// counts. Error counts are split by faultbench's classes after YCSB's
// Return=ERROR line.
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
	for _, o := range t.Ops {
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

func sumErrors(o measure.OpTotals) int64 {
	var n int64
	for _, c := range outcome.ErrorClasses() {
		n += o.Errors[c]
	}
	return n
}

func writeOp(w io.Writer, name string, n int64, o measure.OpTotals, h *hdrhistogram.Histogram) {
	l := LatencyOf(h)
	fmt.Fprintf(w, "[%s], Operations, %d\n", name, n)
	fmt.Fprintf(w, "[%s], AverageLatency(us), %.2f\n", name, l.Mean)
	fmt.Fprintf(w, "[%s], MinLatency(us), %d\n", name, l.Min)
	fmt.Fprintf(w, "[%s], MaxLatency(us), %d\n", name, l.Max)
	fmt.Fprintf(w, "[%s], 50thPercentileLatency(us), %d\n", name, l.P50)
	fmt.Fprintf(w, "[%s], 95thPercentileLatency(us), %d\n", name, l.P95)
	fmt.Fprintf(w, "[%s], 99thPercentileLatency(us), %d\n", name, l.P99)
	fmt.Fprintf(w, "[%s], 99.9thPercentileLatency(us), %d\n", name, l.P999)
	fmt.Fprintf(w, "[%s], Return=OK, %d\n", name, o.OK)
	if e := sumErrors(o); e > 0 {
		fmt.Fprintf(w, "[%s], Return=ERROR, %d\n", name, e)
		for _, c := range outcome.ErrorClasses() {
			if o.Errors[c] > 0 {
				fmt.Fprintf(w, "[%s], Return=ERROR(%s), %d\n", name, strings.ToUpper(c.String()), o.Errors[c])
			}
		}
	}
	if o.Behind > 0 {
		fmt.Fprintf(w, "[%s], BehindSchedule, %d\n", name, o.Behind)
	}
}
