package analyze

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
)

func TestHostLoadDetail(t *testing.T) {
	h := HostLoad{Load1: 3.25, CPUs: 2, StealPct: 0.5, SelfPct: 41.2, Samples: 50, Span: 5 * time.Second}
	got, ok := ParseHostLoad(h.Detail())
	if !ok || got != (HostLoad{Load1: 3.25, CPUs: 2, StealPct: 0.5, SelfPct: 41.2, Samples: 50, Span: 5 * time.Second}) {
		t.Fatalf("round trip of %q: %+v %v", h.Detail(), got, ok)
	}
	ho := HostLoad{Load1: 9, CPUs: 2, SelfPct: 40, OtherPct: 12.5, OtherSamples: 5, Samples: 50, Span: 5 * time.Second}
	if got, ok := ParseHostLoad(ho.Detail()); !ok || got != ho {
		t.Fatalf("round trip of %q: %+v %v", ho.Detail(), got, ok)
	}
	for _, bad := range []string{"", "load1=x cpus=2 steal_pct=0 faultbench_cpu_pct=1 samples=1", "load1=1 cpus=2"} {
		if _, ok := ParseHostLoad(bad); ok {
			t.Errorf("ParseHostLoad(%q) ok", bad)
		}
	}
}

// TestHostNoise: the host-load events before the first fault make a run
// noisy when the load average per CPU or the steal is above its bound,
// and leave it alone otherwise; events after the fault do not count.
func TestHostNoise(t *testing.T) {
	rows := gen(100*time.Millisecond, 90*sec, 10*sec, failover)
	hostEv := func(at time.Duration, load1, steal float64) event.Event {
		return event.Event{T: int64(at), Kind: HostLoadEvent, Detail: HostLoad{Load1: load1, CPUs: 2, StealPct: steal, SelfPct: 30, Samples: 50, Span: 5 * time.Second}.Detail()}
	}
	// with the other processes' CPU (a scenario of this version)
	otherEv := func(at time.Duration, load1, other float64) event.Event {
		return event.Event{T: int64(at), Kind: HostLoadEvent, Detail: HostLoad{Load1: load1, CPUs: 2, SelfPct: 80, OtherPct: other, OtherSamples: 5, Samples: 50, Span: 5 * time.Second}.Detail()}
	}
	for _, tc := range []struct {
		name  string
		host  []event.Event
		noisy string // a reason's start; "" for not noisy
		note  bool
	}{
		{"no host events: nothing", nil, "", false},
		{"quiet host", []event.Event{hostEv(15*sec, 1.2, 0), hostEv(20*sec, 1.8, 0)}, "", true},
		{"oversubscribed", []event.Event{hostEv(15*sec, 6, 0), hostEv(20*sec, 5, 0)}, "host load average 5.5 before the first fault (5 s peak 6.0) on 2 CPUs", true},
		{"stolen", []event.Event{hostEv(15*sec, 1, 12)}, "CPU steal 12.0 %", true},
		// the negative control of the other-CPU rule: the nodes and
		// faultbench load the machine (load average 6 on 2 CPUs), nothing
		// else runs: not noisy; a stranger burning a CPU: noisy
		{"the run's own load is not noise", []event.Event{otherEv(15*sec, 6, 5), otherEv(20*sec, 6.5, 8)}, "", true},
		{"other processes", []event.Event{otherEv(15*sec, 3, 100), otherEv(20*sec, 3, 80)}, "other processes used 90 % of one CPU before the first fault", true},
		{"load after the fault does not count", []event.Event{hostEv(15*sec, 1, 0), hostEv(40*sec, 30, 0)}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := append(killStart(30*sec, 60*sec), tc.host...)
			r := mustAnalyze(t, rows, evs, DefaultParams())
			found := false
			for _, why := range r.NoisyReasons {
				if tc.noisy != "" && len(why) >= len(tc.noisy) && why[:len(tc.noisy)] == tc.noisy {
					found = true
				}
				if tc.noisy == "" && (hasNote([]string{why}, "host load") || hasNote([]string{why}, "steal") || hasNote([]string{why}, "other processes")) {
					t.Errorf("noisy for the host: %q", why)
				}
			}
			if tc.noisy != "" && (!found || !r.Noisy) {
				t.Errorf("noisy %v, reasons %q: want one starting %q", r.Noisy, r.NoisyReasons, tc.noisy)
			}
			if got := hasNote(r.Notes, "host before the first fault"); got != tc.note {
				t.Errorf("host note %v, want %v (notes %q)", got, tc.note, r.Notes)
			}
		})
	}
	t.Run("the other-CPU bound is a parameter, 0 turns it off", func(t *testing.T) {
		p := DefaultParams()
		p.NoisyOtherPerCPU = 0
		r := mustAnalyze(t, rows, append(killStart(30*sec, 60*sec), otherEv(15*sec, 40, 190)), p)
		for _, why := range r.NoisyReasons {
			if hasNote([]string{why}, "other processes") || hasNote([]string{why}, "host load") {
				t.Errorf("rule off, still %q", why)
			}
		}
	})
	t.Run("the bound is a parameter, 0 turns it off", func(t *testing.T) {
		p := DefaultParams()
		p.NoisyLoadPerCPU = 0
		r := mustAnalyze(t, rows, append(killStart(30*sec, 60*sec), hostEv(15*sec, 40, 0)), p)
		for _, why := range r.NoisyReasons {
			if hasNote([]string{why}, "host load") {
				t.Errorf("rule off, still %q", why)
			}
		}
	})
}
