package runner

import (
	"fmt"
	"time"
)

// Spike is a load spike, a trigger of the metastability experiments
// (properties runner.spike.at, runner.spike.duration, runner.spike.factor):
// in open loop, the operations intended to start in [At, At+Duration)
// after the warm-up are scheduled Factor times as often; before and after
// it the rate is Config.Rate. A closed-loop run (a scenario's calibration)
// has no rate to raise and ignores it. The zero value is no spike.
type Spike struct {
	At       time.Duration // from the end of the warm-up, as a scenario's schedule
	Duration time.Duration
	Factor   float64 // > 1: more load; the rate is Rate·Factor during the spike
}

// MaxSpikeFactor bounds Spike.Factor.
const MaxSpikeFactor = 100

// Enabled reports whether s changes the rate.
func (s Spike) Enabled() bool { return s.Duration > 0 && s.Factor > 0 && s.Factor != 1 }

// Validate checks the spike.
func (s Spike) Validate() error {
	switch {
	case s.At < 0 || s.Duration < 0:
		return fmt.Errorf("spike at and duration must not be negative")
	case s.Duration > 0 && !(s.Factor > 0 && s.Factor <= MaxSpikeFactor):
		return fmt.Errorf("spike factor must be in (0, %d], got %g", MaxSpikeFactor, s.Factor)
	}
	return nil
}

// String is the spike as env.json shows it.
func (s Spike) String() string {
	if !s.Enabled() {
		return "none"
	}
	return fmt.Sprintf("rate x %g for %v at %v", s.Factor, s.Duration, s.At)
}

// spikeSchedule is a worker's view of the spike: absolute times.
type spikeSchedule struct {
	from, to time.Time
	factor   float64 // the rate's factor during the spike
}

// step is the time from intended start t to the worker's next one: the
// worker's interval at the rate profile's factor (profile.go), divided by
// the spike's factor while the spike lasts.
func (w *worker) step(t time.Time) time.Duration {
	d := w.profile.interval(t, w.interval)
	if w.spike == nil || t.Before(w.spike.from) || !t.Before(w.spike.to) {
		return d
	}
	return max(time.Duration(float64(d)/w.spike.factor), 1)
}
