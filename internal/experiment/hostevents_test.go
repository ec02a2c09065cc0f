package experiment

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/hostload"
)

// TestHostEvents: samples before the first fault become one host-load event
// per 5 s (the last one shorter, at its last sample), means of the
// samples; samples after the fault none.
func TestHostEvents(t *testing.T) {
	start := time.Now()
	evs := event.NewMemory(start)
	on := hostEvents(evs, start, 12*time.Second)
	for at := time.Second; at <= 20*time.Second; at += time.Second {
		// the other processes' CPU on every other sample (a tree scan)
		on(hostload.Sample{At: at, Load1: float64(at / time.Second), SelfPct: 50, OtherPct: float64(at / time.Second), OtherOK: at/time.Second%2 == 0})
	}
	var got []analyze.HostLoad
	var at []time.Duration
	for _, e := range evs.Events() {
		h, ok := analyze.ParseHostLoad(e.Detail)
		if e.Kind != analyze.HostLoadEvent || !ok {
			t.Fatalf("event %+v", e)
		}
		got, at = append(got, h), append(at, e.Since().Round(time.Millisecond))
	}
	// samples 1..6 s, 7..11 s (the fault at 12 s ends the second)
	if len(got) != 2 || got[0].Samples != 6 || got[0].Load1 != 3.5 || got[1].Samples != 5 || got[1].Load1 != 9 || got[0].SelfPct != 50 {
		t.Fatalf("events %+v", got)
	}
	// the other CPU is the mean of the samples that have it: 2, 4, 6; 8, 10
	if got[0].OtherSamples != 3 || got[0].OtherPct != 4 || got[1].OtherSamples != 2 || got[1].OtherPct != 9 {
		t.Errorf("other CPU %v of %d, %v of %d; want 4 of 3, 9 of 2", got[0].OtherPct, got[0].OtherSamples, got[1].OtherPct, got[1].OtherSamples)
	}
	if at[0] != 6*time.Second || at[1] != 11*time.Second {
		t.Errorf("at %v, want 6s and 11s (their last samples)", at)
	}
}
