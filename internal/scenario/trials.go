package scenario

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Trials repeats a scenario (docs/scenarios.md, "Trials"): N runs, each
// with its own draw of the fault times written as windows (at: 30s..45s)
// and of the victims written random-of(...), from a seed derived from Seed
// and the trial's number, so any trial replays exactly.
type Trials struct {
	N    int    `yaml:"n"`
	Seed uint64 `yaml:"seed,omitempty"` // 0: drawn from the clock and recorded
	// Mode is fresh (a new cluster per trial, the default) or reuse (one
	// cluster for every trial: restored and healed after each, loaded once).
	Mode string `yaml:"mode,omitempty"`
}

// The trial modes.
const (
	TrialsFresh = "fresh"
	TrialsReuse = "reuse"
)

// MaxTrials bounds trials.n and --trials.
const MaxTrials = 1000

// validate checks the trials section.
func (t *Trials) validate() []error {
	var errs []error
	if t.N < 1 || t.N > MaxTrials {
		errs = append(errs, &FieldError{Field: "trials.n", Msg: fmt.Sprintf("%d: allowed 1..%d", t.N, MaxTrials)})
	}
	switch t.Mode {
	case "", TrialsFresh, TrialsReuse:
	default:
		errs = append(errs, &FieldError{Field: "trials.mode", Msg: fmt.Sprintf("%q: allowed %s (a new cluster per trial) or %s (one cluster, restored between trials)", t.Mode, TrialsFresh, TrialsReuse)})
	}
	return errs
}

// TrialSeed is the seed of trial k (1-based) of a scenario whose trials
// seed is base: a SplitMix64 step of base and k, so neighbouring trials
// and neighbouring base seeds draw unrelated values.
func TrialSeed(base uint64, k int) uint64 {
	z := base + uint64(k)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// TimeWindow is a time after the start of the measured run: one time
// ("30s"), or a window ("30s..45s") from which each run draws its time
// uniformly (Draw).
type TimeWindow struct {
	From, To Duration // To == From for one time
}

// At is a TimeWindow of one time.
func At(d time.Duration) TimeWindow { return TimeWindow{Duration(d), Duration(d)} }

// D returns the window's start: the time itself once drawn.
func (w TimeWindow) D() time.Duration { return w.From.D() }

// Latest returns the window's end.
func (w TimeWindow) Latest() time.Duration { return max(w.To.D(), w.From.D()) }

// IsWindow reports whether the time is still to be drawn.
func (w TimeWindow) IsWindow() bool { return w.To > w.From }

// Add shifts both ends by d.
func (w TimeWindow) Add(d Duration) TimeWindow { return TimeWindow{w.From + d, w.To + d} }

// String writes "30s" or "30s..45s".
func (w TimeWindow) String() string {
	if w.IsWindow() {
		return w.From.D().String() + ".." + w.To.D().String()
	}
	return w.From.D().String()
}

// MarshalYAML writes the String form.
func (w TimeWindow) MarshalYAML() (any, error) { return w.String(), nil }

// UnmarshalYAML reads "30s", a bare number of seconds, or "30s..45s".
func (w *TimeWindow) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseTimeWindow(n.Value)
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// ParseTimeWindow parses "30s" or "30s..45s"; a window whose end is before
// its start is an error.
func ParseTimeWindow(s string) (TimeWindow, error) {
	from, to, isWin := strings.Cut(s, "..")
	f, err := ParseDuration(from)
	if err != nil {
		return TimeWindow{}, err
	}
	if !isWin {
		return TimeWindow{Duration(f), Duration(f)}, nil
	}
	t, err := ParseDuration(to)
	if err != nil {
		return TimeWindow{}, fmt.Errorf("window %q: %w", s, err)
	}
	if t < f {
		return TimeWindow{}, fmt.Errorf("window %q ends before it starts: write the earlier time first (e.g. %s..%s)", s, strings.TrimSpace(to), strings.TrimSpace(from))
	}
	return TimeWindow{Duration(f), Duration(t)}, nil
}

// draw picks a time uniformly in the window (to the millisecond).
func (w TimeWindow) draw(rng *rand.Rand) TimeWindow {
	if !w.IsWindow() {
		return w
	}
	span := (w.To.D() - w.From.D()) / time.Millisecond
	d := w.From.D() + time.Duration(rng.Int64N(int64(span)+1))*time.Millisecond
	return At(d)
}

// Randomised reports whether the scenario draws anything per run: a fault
// time written as a window.
func (s *Scenario) Randomised() bool {
	if s.Chaos != nil {
		return true
	}
	if f := s.Schedule.Failover; f != nil && f.Steady.IsWindow() {
		return true
	}
	for _, st := range s.Schedule.Steps {
		if st.At.IsWindow() {
			return true
		}
	}
	return false
}

// Draw fixes every fault time written as a window to a time drawn
// uniformly from it with seed (call it before Resolve). The victims written
// random-of(...) are drawn when their step runs, from a Resolver seeded
// with the same seed. It returns the drawn times, in schedule order, for
// the record.
func (s *Scenario) Draw(seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x7121a15))
	if s.Load.Duration == 0 {
		// every trial runs as long: the duration derived from the
		// windows' ends, not from one trial's draw
		s.Load.Duration = s.derivedDuration()
	}
	var drawn []time.Duration
	if f := s.Schedule.Failover; f != nil {
		f.Steady = f.Steady.draw(rng)
		drawn = append(drawn, f.Steady.D())
	}
	for i := range s.Schedule.Steps {
		s.Schedule.Steps[i].At = s.Schedule.Steps[i].At.draw(rng)
		drawn = append(drawn, s.Schedule.Steps[i].At.D())
	}
	if c := s.Chaos; c != nil {
		// the chaos cycles become steps; the section goes, so the
		// resolved scenario states the faults drawn, and running it again
		// runs those (ChaosSpec keeps the section for the record)
		if steps, err := c.ChaosSteps(seed, nil, s.Load.Duration.D()); err == nil {
			s.Schedule.Steps = append(s.Schedule.Steps, steps...)
			sort.SliceStable(s.Schedule.Steps, func(i, j int) bool { return s.Schedule.Steps[i].At.From < s.Schedule.Steps[j].At.From })
		}
		s.chaos, s.Chaos = c, nil
	}
	return drawn
}

// ChaosSpec returns the chaos section the scenario had before Draw turned
// it into steps (nil for a scenario without chaos).
func (s *Scenario) ChaosSpec() *Chaos {
	if s.Chaos != nil {
		return s.Chaos
	}
	return s.chaos
}

// Clone returns a deep copy of the scenario (each trial draws on its own).
func (s *Scenario) Clone() (*Scenario, error) {
	b, err := s.Marshal()
	if err != nil {
		return nil, err
	}
	var c Scenario
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("copying the scenario: %w", err)
	}
	c.src = s.src
	return &c, nil
}

// derivedDuration is the measured run's length when load.duration is left
// out: the failover shorthand's steady + down + after, else 30 s after the
// last step (at least 60 s); a window counts with its end.
func (s *Scenario) derivedDuration() Duration {
	if c := s.Chaos; c != nil && c.Cycles > 0 {
		return Duration(c.ChaosDuration())
	}
	if f := s.Schedule.Failover; f != nil {
		return Duration(f.Steady.Latest()) + f.Down + f.After
	}
	end := Duration(60 * time.Second)
	for _, st := range s.Schedule.Steps {
		end = max(end, Duration(st.At.Latest()+30*time.Second))
	}
	return end
}
