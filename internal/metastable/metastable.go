// Package metastable judges whether a run came back after its trigger: a
// load spike, a pause, partition or restart of a node (Bronson et al.,
// "Metastable Failures in Distributed Systems", HotOS 2021; Huang et al.,
// "Metastable Failures in the Wild", OSDI 2022). After the trigger ends,
// does goodput return to within a tolerance of its pre-trigger level and
// the p99 latency under a target — and how long did that take (time to
// recover) — or does the system stay degraded until the run ends
// (metastable)? The verdict is computed from windows.csv's rows and the
// trigger's interval alone (docs/metrics.md, Metastability); the recovery
// map of a sweep arranges verdicts by trigger strength and load.
package metastable

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/properties"
)

// SummaryKey is the verdict's top-level key in summary.json.
const SummaryKey = "metastable"

// The verdicts.
const (
	Recovered  = "recovered"  // goodput and latency came back and held
	Metastable = "metastable" // still degraded when the run ended
	Unknown    = "unknown"    // cannot be judged (no trigger, too few windows before or after it)
)

// Trigger is what pushed the system: its interval since t = 0 (the start
// of the run, warm-up included) and what it was.
type Trigger struct {
	Kind  string        `json:"kind"` // "spike", or the fault actions ("pause", "partition+heal", ...)
	Start time.Duration `json:"-"`
	End   time.Duration `json:"-"`
	What  string        `json:"what,omitempty"`
}

// Params are the verdict's thresholds.
type Params struct {
	// GoodputTol: recovered goodput is at least (1 - GoodputTol) × the
	// pre-trigger goodput. Default 0.10.
	GoodputTol float64
	// LatencyTarget is the p99 latency a recovered window stays under;
	// 0: LatencyFactor × the pre-trigger p99 (the median of the
	// pre-trigger windows' p99), at least MinLatencyTarget.
	LatencyTarget time.Duration
	// LatencyFactor: default 3.
	LatencyFactor float64
	// Hold is how long both conditions must hold, in whole windows
	// (rounded up, at least one), to count as recovered. Default 3 s.
	Hold time.Duration
}

// MinLatencyTarget is the least derived latency target: below it a
// window's p99 is noise of the machine.
const MinLatencyTarget = time.Millisecond

// DefaultParams are the documented defaults.
func DefaultParams() Params {
	return Params{GoodputTol: 0.10, LatencyFactor: 3, Hold: 3 * time.Second}
}

func (p Params) withDefaults() Params {
	d := DefaultParams()
	if p.GoodputTol <= 0 {
		p.GoodputTol = d.GoodputTol
	}
	if p.LatencyFactor <= 0 {
		p.LatencyFactor = d.LatencyFactor
	}
	if p.Hold <= 0 {
		p.Hold = d.Hold
	}
	return p
}

// Verdict is summary.json's metastable section.
type Verdict struct {
	Verdict string  `json:"verdict"` // Recovered, Metastable or Unknown
	Reason  string  `json:"reason"`  // one sentence: why
	Trigger Trigger `json:"trigger"`
	// TriggerStartMs and TriggerEndMs are the trigger's interval, ms
	// since t = 0.
	TriggerStartMs float64 `json:"trigger_start_ms"`
	TriggerEndMs   float64 `json:"trigger_end_ms"`
	// BaselineGoodputOps is the mean goodput (successful operations per
	// second) of the whole windows before the trigger (warm-up excluded);
	// BaselineP99Us the median of their p99 latencies.
	BaselineGoodputOps float64 `json:"baseline_goodput_ops"`
	BaselineP99Us      float64 `json:"baseline_p99_us"`
	BaselineWindows    int     `json:"baseline_windows_count"`
	// GoodputFloorOps and LatencyTargetUs are the recovery conditions.
	GoodputFloorOps float64 `json:"goodput_floor_ops"`
	LatencyTargetUs float64 `json:"latency_target_us"`
	HoldMs          float64 `json:"hold_ms"`
	// RecoveredAtMs is the start of the first window from which both
	// conditions held for Hold; TimeToRecoverMs is its distance from the
	// trigger's end (0 when the first window after the trigger already
	// qualifies). Absent unless recovered.
	RecoveredAtMs   *float64 `json:"recovered_at_ms,omitempty"`
	TimeToRecoverMs *float64 `json:"time_to_recover_ms,omitempty"`
	// AfterWindows is the number of whole windows after the trigger;
	// DegradedWindows how many of them failed a condition.
	AfterWindows    int `json:"after_windows_count"`
	DegradedWindows int `json:"degraded_windows_count"`
	// FinalGoodputOps and FinalP99Us are the last Hold of the run (its
	// whole windows): where the system ended.
	FinalGoodputOps float64 `json:"final_goodput_ops"`
	FinalP99Us      float64 `json:"final_p99_us"`
	// RetriesBeforeOps and RetriesAfterOps are the client's retries per
	// second (windows.csv's RETRY series) before the trigger and after it
	// (0 without a retry policy): a retry storm that outlives its trigger.
	RetriesBeforeOps float64 `json:"retries_before_ops"`
	RetriesAfterOps  float64 `json:"retries_after_ops"`
}

// IsMetastable reports a metastable verdict.
func (v *Verdict) IsMetastable() bool { return v != nil && v.Verdict == Metastable }

// Short is the verdict in a few words: "recovered in 2.0 s",
// "metastable", "unknown".
func (v *Verdict) Short() string {
	if v == nil {
		return ""
	}
	if v.Verdict == Recovered && v.TimeToRecoverMs != nil {
		return fmt.Sprintf("recovered in %.1f s", *v.TimeToRecoverMs/1000)
	}
	return v.Verdict
}

// TriggerFrom finds the trigger of a run: a load spike's interval (spike
// at, for, since t = 0; zero duration: none) and the fault events of the
// schedule, from the first fault-inject to the last fault-injected,
// fault-restore or fault-restored (a paused node resumed and serving, a
// partition healed, a restarted node up). Several make one trigger from
// the first start to the last end. ok is false when there is none.
func TriggerFrom(spikeAt, spikeFor time.Duration, spikeFactor float64, evs []event.Event) (Trigger, bool) {
	var t Trigger
	found := false
	add := func(kind string, s, e time.Duration) {
		if !found {
			t.Start, t.End, found = s, e, true
		} else {
			t.Start, t.End = min(t.Start, s), max(t.End, e)
		}
		if t.Kind == "" {
			t.Kind = kind
		} else if !slices.Contains(splitKinds(t.Kind), kind) {
			t.Kind += "+" + kind
		}
	}
	if spikeFor > 0 && spikeFactor > 0 && spikeFactor != 1 {
		add("spike", spikeAt, spikeAt+spikeFor)
		t.What = fmt.Sprintf("rate x %g for %v", spikeFactor, spikeFor)
	}
	for _, e := range evs {
		switch e.Kind {
		case event.FaultInject:
			add(actionOf(e), e.Since(), e.Since())
			if t.What == "" {
				t.What = e.Detail
			}
		case event.FaultInjected, event.FaultRestore, event.FaultRestored:
			if found {
				t.End = max(t.End, e.Since())
			}
		}
	}
	return t, found
}

func splitKinds(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '+' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// actionOf is a fault event's action (older files: Detail's first word).
func actionOf(e event.Event) string {
	if e.Action != "" {
		return e.Action
	}
	for i := 0; i < len(e.Detail); i++ {
		if e.Detail[i] == ' ' {
			return e.Detail[:i]
		}
	}
	return e.Detail
}

// window is what the verdict reads of one whole window.
type window struct {
	start, end time.Duration
	goodput    float64 // ok/s
	p99        float64 // µs; 0 without successes
	index      int
	retries    int64
}

// Judge gives the verdict over a run's windows (windows.csv rows, every
// op; ALL and RETRY are used) for trigger t.
func Judge(rows []measure.WindowRow, t Trigger, p Params) *Verdict {
	p = p.withDefaults()
	v := &Verdict{Verdict: Unknown, Trigger: t, TriggerStartMs: ms(t.Start), TriggerEndMs: ms(t.End), HoldMs: ms(p.Hold)}
	var all []window
	retries := map[int]int64{}
	var step time.Duration
	for _, r := range rows {
		if r.Phase != measure.PhaseRun || r.Partial {
			continue
		}
		switch r.Op {
		case measure.RetryOp:
			retries[r.Index] = r.OK + r.ErrorCount()
		case measure.AllOps:
			d := r.End - r.Start
			if d <= 0 {
				continue
			}
			step = d
			all = append(all, window{start: r.Start, end: r.End, goodput: float64(r.OK) / d.Seconds(), p99: r.P99Us, index: r.Index})
		}
	}
	for i := range all {
		all[i].retries = retries[all[i].index]
	}
	var before, after []window
	for _, w := range all {
		switch {
		case w.end <= t.Start:
			before = append(before, w)
		case w.start >= t.End:
			after = append(after, w)
		}
	}
	v.BaselineWindows, v.AfterWindows = len(before), len(after)
	if step <= 0 {
		v.Reason = "no whole windows after the warm-up"
		return v
	}
	hold := int(math.Ceil(float64(p.Hold) / float64(step)))
	hold = max(hold, 1)
	v.HoldMs = ms(time.Duration(hold) * step)
	if len(before) == 0 {
		v.Reason = "no whole window between the warm-up and the trigger: nothing to compare with"
		return v
	}
	var sum float64
	var p99s []float64
	var rb int64
	for _, w := range before {
		sum += w.goodput
		if w.p99 > 0 {
			p99s = append(p99s, w.p99)
		}
		rb += w.retries
	}
	v.BaselineGoodputOps = sum / float64(len(before))
	v.RetriesBeforeOps = float64(rb) / (time.Duration(len(before)) * step).Seconds()
	if len(p99s) > 0 {
		slices.Sort(p99s)
		v.BaselineP99Us = p99s[len(p99s)/2]
	}
	v.GoodputFloorOps = (1 - p.GoodputTol) * v.BaselineGoodputOps
	target := p.LatencyTarget
	if target <= 0 {
		target = max(time.Duration(p.LatencyFactor*v.BaselineP99Us)*time.Microsecond, MinLatencyTarget)
	}
	v.LatencyTargetUs = float64(target.Microseconds())
	if v.BaselineGoodputOps <= 0 {
		v.Reason = "no successful operation before the trigger"
		return v
	}
	if len(after) > 0 {
		var ra int64
		for _, w := range after {
			ra += w.retries
		}
		v.RetriesAfterOps = float64(ra) / (time.Duration(len(after)) * step).Seconds()
		tail := after[max(len(after)-hold, 0):]
		var g float64
		for _, w := range tail {
			g += w.goodput
			v.FinalP99Us = max(v.FinalP99Us, w.p99)
		}
		v.FinalGoodputOps = g / float64(len(tail))
	}
	good := func(w window) bool {
		return w.goodput >= v.GoodputFloorOps && w.goodput > 0 && w.p99 <= v.LatencyTargetUs
	}
	run := 0
	for i, w := range after {
		if !good(w) {
			v.DegradedWindows++
			run = 0
			continue
		}
		run++
		if run == hold && v.RecoveredAtMs == nil {
			first := after[i-hold+1]
			at := ms(first.start)
			ttr := max(ms(first.start-t.End), 0)
			v.RecoveredAtMs, v.TimeToRecoverMs = &at, &ttr
		}
	}
	switch {
	case v.RecoveredAtMs != nil:
		v.Verdict = Recovered
		v.Reason = fmt.Sprintf("goodput >= %.0f ops/s (pre-trigger %.0f - %g %%) and p99 <= %s held for %s from %.1f s after the trigger",
			v.GoodputFloorOps, v.BaselineGoodputOps, p.GoodputTol*100, fmtUs(v.LatencyTargetUs), fmtMs(v.HoldMs), *v.TimeToRecoverMs/1000)
	case len(after) < hold:
		v.Reason = fmt.Sprintf("%d whole windows after the trigger, fewer than the %s a recovery must hold", len(after), fmtMs(v.HoldMs))
	default:
		v.Verdict = Metastable
		v.Reason = fmt.Sprintf("degraded until the end, %.0f s after the trigger: goodput %.0f ops/s (floor %.0f), p99 %s (target %s) over the last %s",
			ms(after[len(after)-1].end-t.End)/1000, v.FinalGoodputOps, v.GoodputFloorOps, fmtUs(v.FinalP99Us), fmtUs(v.LatencyTargetUs), fmtMs(v.HoldMs))
	}
	return v
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fmtUs(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

func fmtMs(v float64) string { return fmt.Sprintf("%.1f s", v/1000) }

// ReadParams reads the verdict's properties: metastable (true: judge the
// run; a load spike, runner.spike.*, implies it), metastable.tolerance,
// metastable.latency_target, metastable.latency_factor, metastable.hold.
// judge is false when the run is not to be judged.
func ReadParams(p *properties.Properties, spike bool) (Params, bool, error) {
	var errs []error
	get := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	d := DefaultParams()
	on, err := p.Bool("metastable", spike)
	get(err)
	var out Params
	out.GoodputTol, err = p.Float("metastable.tolerance", d.GoodputTol)
	get(err)
	out.LatencyFactor, err = p.Float("metastable.latency_factor", d.LatencyFactor)
	get(err)
	out.LatencyTarget, err = p.Duration("metastable.latency_target", 0, time.Millisecond)
	get(err)
	out.Hold, err = p.Duration("metastable.hold", d.Hold, time.Second)
	get(err)
	if len(errs) == 0 {
		switch {
		case !(out.GoodputTol > 0 && out.GoodputTol < 1):
			errs = append(errs, p.Error("metastable.tolerance", "allowed a fraction in (0, 1), e.g. 0.1 for 10 %%"))
		case !(out.LatencyFactor >= 1 && out.LatencyFactor <= 1000):
			errs = append(errs, p.Error("metastable.latency_factor", "allowed 1..1000 (times the pre-trigger p99)"))
		case out.LatencyTarget < 0:
			errs = append(errs, p.Error("metastable.latency_target", "must not be negative (0: latency_factor × the pre-trigger p99)"))
		case out.Hold <= 0 || out.Hold > time.Hour:
			errs = append(errs, p.Error("metastable.hold", "allowed (0, 1h]"))
		}
	}
	return out, on, errors.Join(errs...)
}
