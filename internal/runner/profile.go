package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
)

// Profile is a changing open-loop rate, the load of the elasticity
// benchmark EB2 (property runner.profile): the rate at time t after the
// warm-up is Config.Rate times the profile's factor at t. Steps holds the
// factor of a point until the next point; a ramp moves it linearly from
// one point to the next. Before the first point the first point's factor
// applies (the warm-up included), after the last the last one's. A
// closed-loop run has no rate to change and ignores it. The zero value is
// no profile (factor 1 throughout).
type Profile struct {
	Shape  ProfileShape
	Points []ProfilePoint // in time order, at distinct times
}

// ProfileShape is how a Profile moves between its points.
type ProfileShape string

// The shapes.
const (
	ProfileSteps ProfileShape = "steps" // hold each point's factor until the next point
	ProfileRamp  ProfileShape = "ramp"  // interpolate linearly between points
)

// ProfilePoint is a rate factor from a time on (from the end of the
// warm-up, as a scenario's schedule).
type ProfilePoint struct {
	At     time.Duration
	Factor float64
}

// The bounds of a profile's factors and points.
const (
	MinProfileFactor = 0.01
	MaxProfileFactor = 100
	MaxProfilePoints = 100
)

// Enabled reports whether p changes the rate.
func (p Profile) Enabled() bool { return len(p.Points) > 0 }

// Validate checks the profile.
func (p Profile) Validate() error {
	if !p.Enabled() {
		return nil
	}
	if p.Shape != ProfileSteps && p.Shape != ProfileRamp {
		return fmt.Errorf("rate profile shape must be %s or %s, got %q", ProfileSteps, ProfileRamp, p.Shape)
	}
	if len(p.Points) > MaxProfilePoints {
		return fmt.Errorf("rate profile: %d points, at most %d", len(p.Points), MaxProfilePoints)
	}
	for i, pt := range p.Points {
		switch {
		case pt.At < 0:
			return fmt.Errorf("rate profile point %d: time %v is negative", i+1, pt.At)
		case i > 0 && pt.At <= p.Points[i-1].At:
			return fmt.Errorf("rate profile point %d: time %v is not after the previous point's %v", i+1, pt.At, p.Points[i-1].At)
		case !(pt.Factor >= MinProfileFactor && pt.Factor <= MaxProfileFactor):
			return fmt.Errorf("rate profile point %d: factor %g must be in [%g, %g]", i+1, pt.Factor, float64(MinProfileFactor), float64(MaxProfileFactor))
		}
	}
	return nil
}

// Factor is the rate factor at t after the warm-up (t may be negative:
// the warm-up).
func (p Profile) Factor(t time.Duration) float64 {
	if !p.Enabled() {
		return 1
	}
	pts := p.Points
	if t <= pts[0].At {
		return pts[0].Factor
	}
	for i := 1; i < len(pts); i++ {
		if t < pts[i].At {
			a, b := pts[i-1], pts[i]
			if p.Shape == ProfileSteps {
				return a.Factor
			}
			f := float64(t-a.At) / float64(b.At-a.At)
			return a.Factor + f*(b.Factor-a.Factor)
		}
	}
	return pts[len(pts)-1].Factor
}

// Mean is the profile's mean factor over [from, to) after the warm-up
// (Factor where from >= to): what a span's offered rate is, in units of
// the steady rate.
func (p Profile) Mean(from, to time.Duration) float64 {
	if !p.Enabled() || to <= from {
		return p.Factor(from)
	}
	// exact for steps and ramps: integrate piecewise between the points
	cuts := []time.Duration{from}
	for _, pt := range p.Points {
		if pt.At > from && pt.At < to {
			cuts = append(cuts, pt.At)
		}
	}
	cuts = append(cuts, to)
	var sum float64
	for i := 1; i < len(cuts); i++ {
		a, b := cuts[i-1], cuts[i]
		var f float64
		if p.Shape == ProfileSteps {
			f = p.Factor(a)
		} else {
			f = (p.Factor(a) + p.Factor(b)) / 2 // linear within the piece
		}
		sum += f * float64(b-a)
	}
	return sum / float64(to-from)
}

// String is the profile as property runner.profile writes it: "steps
// 0s=0.3,40s=1.2" ("none" without points).
func (p Profile) String() string {
	if !p.Enabled() {
		return "none"
	}
	parts := make([]string, len(p.Points))
	for i, pt := range p.Points {
		parts[i] = pt.At.String() + "=" + strconv.FormatFloat(pt.Factor, 'g', -1, 64)
	}
	return string(p.Shape) + " " + strings.Join(parts, ",")
}

// ParseProfile reads a rate profile: a shape (steps or ramp) and
// comma-separated points TIME=FACTOR, the times from the end of the
// warm-up ("30s", "1m30s" or seconds) in increasing order, e.g. "steps
// 0s=0.3,40s=1.2,100s=0.3" or "ramp 0s=0.2,60s=1.5". "" and "none" are no
// profile.
func ParseProfile(s string) (Profile, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return Profile{}, nil
	}
	shape, rest, ok := strings.Cut(s, " ")
	if !ok || strings.TrimSpace(rest) == "" {
		return Profile{}, fmt.Errorf("rate profile %q: want a shape and points, e.g. \"steps 0s=0.3,40s=1.2\" or \"ramp 0s=0.2,60s=1.5\"", s)
	}
	p := Profile{Shape: ProfileShape(shape)}
	for _, f := range strings.Split(rest, ",") {
		at, factor, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return Profile{}, fmt.Errorf("rate profile point %q: want TIME=FACTOR, e.g. 40s=1.2", f)
		}
		d, err := parseProfileTime(strings.TrimSpace(at))
		if err != nil {
			return Profile{}, fmt.Errorf("rate profile point %q: %w", f, err)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(factor), 64)
		if err != nil {
			return Profile{}, fmt.Errorf("rate profile point %q: factor %q is not a number", f, factor)
		}
		p.Points = append(p.Points, ProfilePoint{At: d, Factor: x})
	}
	return p, p.Validate()
}

// parseProfileTime reads "40s", "1m30s" or a number of seconds.
func parseProfileTime(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("time %q is not a duration (e.g. 40s)", s)
	}
	return d, nil
}

// ReadProfile reads the rate profile of a run phase (property
// runner.profile); errors name the property and where it was set.
func ReadProfile(p *properties.Properties) (Profile, error) {
	pr, err := ParseProfile(p.String("runner.profile", ""))
	if err != nil {
		return Profile{}, p.Error("runner.profile", "%v", err)
	}
	return pr, nil
}

// profileSchedule is a worker's view of the profile: the end of the
// warm-up as an absolute time.
type profileSchedule struct {
	p    Profile
	zero time.Time // the end of the warm-up
}

// interval is the time between a worker's intended starts at t, whose
// steady interval is base.
func (s *profileSchedule) interval(t time.Time, base time.Duration) time.Duration {
	if s == nil {
		return base
	}
	return max(time.Duration(float64(base)/s.p.Factor(t.Sub(s.zero))), 1)
}
