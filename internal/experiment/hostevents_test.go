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
		on(hostload.Sample{At: at, Load1: float64(at / time.Second), SelfPct: 50})
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
	if at[0] != 6*time.Second || at[1] != 11*time.Second {
		t.Errorf("at %v, want 6s and 11s (their last samples)", at)
	}
}
