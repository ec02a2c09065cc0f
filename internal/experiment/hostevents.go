package experiment

import (
	"runtime"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/hostload"
)

// hostEventSpan is how many seconds of host samples one host-load event
// averages.
const hostEventSpan = 5 * time.Second

// hostEvents returns the host sampler's callback that records the host's
// load before the first fault (at firstFault after start, the run's t=0)
// into evs: one analyze.HostLoadEvent per hostEventSpan of samples, the
// last one (possibly shorter) when the first fault's time has come, each
// at the time of its last sample; nothing after. The noise guard reads
// them (analyze.Params.NoisyOtherPerCPU: the other processes' CPU, the
// mean of the samples that scanned the process trees).
func hostEvents(evs *event.Log, start time.Time, firstFault time.Duration) func(hostload.Sample) {
	var sum analyze.HostLoad
	var from, last time.Duration
	done := false
	flush := func(to time.Duration) {
		if sum.Samples == 0 {
			return
		}
		n := float64(sum.Samples)
		h := analyze.HostLoad{Load1: sum.Load1 / n, CPUs: runtime.NumCPU(), StealPct: sum.StealPct / n, SelfPct: sum.SelfPct / n,
			Samples: sum.Samples, Span: to - from, OtherSamples: sum.OtherSamples}
		if sum.OtherSamples > 0 {
			h.OtherPct = sum.OtherPct / float64(sum.OtherSamples)
		}
		evs.Add(event.Event{Kind: analyze.HostLoadEvent, Detail: h.Detail(), Wall: start.Add(last)})
		sum = analyze.HostLoad{}
	}
	return func(smp hostload.Sample) {
		if done {
			return
		}
		if smp.At >= firstFault {
			flush(last)
			done = true
			return
		}
		if sum.Samples == 0 {
			from = smp.At
		}
		sum.Load1 += smp.Load1
		sum.StealPct += smp.StealPct
		sum.SelfPct += smp.SelfPct
		if smp.OtherOK {
			sum.OtherPct += smp.OtherPct
			sum.OtherSamples++
		}
		sum.Samples++
		last = smp.At
		if smp.At-from >= hostEventSpan {
			flush(smp.At)
		}
	}
}
