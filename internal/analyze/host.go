package analyze

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
)

// HostLoadEvent is the kind of the events that record the host's load
// before the first fault (a scenario samples /proc every window into
// host.csv and, until the first fault, writes the mean of every 5 s of
// samples as such an event): the noise guard reads them (Params.
// NoisyLoadPerCPU, NoisySteal), so its reason rests on the run's own
// record.
const HostLoadEvent = "host-load"

// HostLoad is the mean of some host samples (docs/output.md, host.csv).
type HostLoad struct {
	Load1    float64 // /proc/loadavg's 1-minute load average
	CPUs     int     // the machine's CPUs
	StealPct float64 // CPU steal, percent of all CPUs' time
	SelfPct  float64 // faultbench's own CPU, percent of one CPU
	// OtherPct is the CPU of everything but the run (hostload.Sample's
	// OtherPct), percent of one CPU, the mean of OtherSamples samples
	// (0: none, an older run's event).
	OtherPct     float64
	OtherSamples int
	Samples      int // how many samples the means are of
	Span         time.Duration
}

// Detail writes h as a host-load event's detail: key=value pairs a
// reader can read and ParseHostLoad parses back.
func (h HostLoad) Detail() string {
	other := ""
	if h.OtherSamples > 0 {
		other = fmt.Sprintf(" other_cpu_pct=%.1f other_samples=%d", h.OtherPct, h.OtherSamples)
	}
	return fmt.Sprintf("load1=%.2f cpus=%d steal_pct=%.2f faultbench_cpu_pct=%.1f%s samples=%d span_ms=%d",
		h.Load1, h.CPUs, h.StealPct, h.SelfPct, other, h.Samples, h.Span.Milliseconds())
}

// ParseHostLoad reads a host-load event's detail; ok is false when it is
// not one (a key missing or not a number).
func ParseHostLoad(detail string) (h HostLoad, ok bool) {
	kv := map[string]float64{}
	for _, f := range strings.Fields(detail) {
		k, v, found := strings.Cut(f, "=")
		if !found {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return HostLoad{}, false
		}
		kv[k] = x
	}
	for _, k := range []string{"load1", "cpus", "steal_pct", "faultbench_cpu_pct", "samples"} {
		if _, found := kv[k]; !found {
			return HostLoad{}, false
		}
	}
	h = HostLoad{Load1: kv["load1"], CPUs: int(kv["cpus"]), StealPct: kv["steal_pct"], SelfPct: kv["faultbench_cpu_pct"],
		Samples: int(kv["samples"]), Span: time.Duration(kv["span_ms"]) * time.Millisecond}
	if n, ok := kv["other_samples"]; ok && n > 0 {
		if v, ok := kv["other_cpu_pct"]; ok {
			h.OtherPct, h.OtherSamples = v, int(n)
		}
	}
	return h, true
}

// hostBefore is the host's load before t from the run's host-load events:
// the means weighted by samples, and the highest 5 s load mean; ok is
// false without such events.
func hostBefore(evs []event.Event, t time.Duration) (mean HostLoad, peakLoad1 float64, ok bool) {
	for _, e := range evs {
		if e.Kind != HostLoadEvent || e.Since() >= t {
			continue
		}
		h, good := ParseHostLoad(e.Detail)
		if !good || h.Samples <= 0 {
			continue
		}
		w := float64(h.Samples)
		mean.Load1 += h.Load1 * w
		mean.StealPct += h.StealPct * w
		mean.SelfPct += h.SelfPct * w
		mean.OtherPct += h.OtherPct * float64(h.OtherSamples)
		mean.OtherSamples += h.OtherSamples
		mean.Samples += h.Samples
		mean.Span += h.Span
		mean.CPUs = max(mean.CPUs, h.CPUs)
		peakLoad1 = max(peakLoad1, h.Load1)
	}
	if mean.Samples == 0 {
		return HostLoad{}, 0, false
	}
	n := float64(mean.Samples)
	mean.Load1, mean.StealPct, mean.SelfPct = mean.Load1/n, mean.StealPct/n, mean.SelfPct/n
	if mean.OtherSamples > 0 {
		mean.OtherPct /= float64(mean.OtherSamples)
	}
	return mean, peakLoad1, true
}

// hostNoise adds to rep the host's load before the first fault (a note)
// and the noise guard's host reasons: the CPU of everything but the run
// above NoisyOtherPerCPU of the machine (or, for events without it, a load
// average above NoisyLoadPerCPU per CPU), CPU steal above NoisySteal.
func (a *analyzer) hostNoise(rep *Report, evs []event.Event, first time.Duration) {
	h, peak, ok := hostBefore(evs, first)
	if !ok {
		return
	}
	other := ""
	if h.OtherSamples > 0 {
		other = fmt.Sprintf(", everything else's CPU %.0f %% of one", h.OtherPct)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("host before the first fault (%d samples): load average %.2f (5 s peak %.2f) on %d CPUs, CPU steal %.1f %%, faultbench's own CPU %.0f %% of one%s",
		h.Samples, h.Load1, peak, h.CPUs, h.StealPct, h.SelfPct, other))
	if h.OtherSamples > 0 {
		if lim := a.p.NoisyOtherPerCPU; lim > 0 && h.CPUs > 0 && h.OtherPct > lim*100*float64(h.CPUs) {
			rep.NoisyReasons = append(rep.NoisyReasons, fmt.Sprintf("other processes used %.0f %% of one CPU before the first fault (the machine's busy time minus faultbench's and the nodes' processes), more than %g %% of the %d CPUs: the machine ran other work (load average %.1f)",
				h.OtherPct, lim*100*float64(h.CPUs), h.CPUs, h.Load1))
		}
	} else if lim := a.p.NoisyLoadPerCPU; lim > 0 && h.CPUs > 0 && h.Load1 > lim*float64(h.CPUs) {
		rep.NoisyReasons = append(rep.NoisyReasons, fmt.Sprintf("host load average %.1f before the first fault (5 s peak %.1f) on %d CPUs, more than %g per CPU: the machine ran other work (faultbench's own CPU %.0f %% of one)",
			h.Load1, peak, h.CPUs, lim, h.SelfPct))
	}
	if lim := a.p.NoisySteal; lim > 0 && h.StealPct > lim*100 {
		rep.NoisyReasons = append(rep.NoisyReasons, fmt.Sprintf("CPU steal %.1f %% before the first fault, more than %g %%: the hypervisor took the CPUs", h.StealPct, lim*100))
	}
}
