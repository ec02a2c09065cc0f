package kind

import (
	"errors"
	"fmt"
	"time"
)

// Limits of the clock kinds' parameters.
const (
	MaxClockOffset  = 8760 * time.Hour // a year either way
	MinStrobePeriod = 10 * time.Millisecond
	MaxStrobePeriod = time.Hour
)

const colClock RGB = 0xe377c2

// ParseClockTime reads clock-offset's to: an RFC 3339 time
// ("2027-01-01T00:00:00Z").
func ParseClockTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("to %q: want an RFC 3339 time such as 2027-01-01T00:00:00Z", s)
	}
	return t, nil
}

func clockDuration(name, doc string, nonzero bool) Param {
	return Param{Name: name, Type: Duration, Doc: doc, Validate: func(v any) error {
		d := v.(time.Duration)
		if d < -MaxClockOffset || d > MaxClockOffset {
			return fmt.Errorf("%s %v: allowed -%v..%v", name, d, MaxClockOffset, MaxClockOffset)
		}
		if nonzero && d == 0 {
			return fmt.Errorf("%s 0: a clock fault needs a non-zero %s (e.g. 10s or -10s)", name, name)
		}
		return nil
	}}
}

// clockKinds move the wall clock of a node started under libfaketime
// (cluster option clock: faketime; internal/launcher). clock-reset, a
// repair, sets it right again.
func clockKinds() []Kind {
	reset := []string{"clock-reset"}
	return []Kind{
		{Name: "clock-offset", Family: Clock, Restores: reset, Color: colClock, Params: []Param{
			clockDuration("offset", "the node's clock runs this far ahead (negative: behind) of the real one, from the injection on", false),
			{Name: "to", Type: String, Doc: "instead of offset: the moment the node's clock reads at the injection (RFC 3339), running on from there",
				Validate: func(v any) error { _, err := ParseClockTime(v.(string)); return err }},
		}, Check: func(v Values) error {
			_, off := v["offset"]
			_, to := v["to"]
			switch {
			case off && to:
				return &ParamError{Param: "to", Kind: "clock-offset", Err: errors.New("give offset or to, not both")}
			case !off && !to:
				return &ParamError{Param: "offset", Kind: "clock-offset", Err: errors.New("clock-offset needs offset (e.g. params: {offset: 30s}) or to (an RFC 3339 time)")}
			}
			return nil
		}},
		{Name: "clock-bump", Family: Clock, Restores: reset, Color: colClock, Params: []Param{
			clockDuration("delta", "the jump of the node's clock: forward (10s) or backward (-10s), added to its offset", true),
		}, Check: func(v Values) error {
			if _, ok := v["delta"]; !ok {
				return &ParamError{Param: "delta", Kind: "clock-bump", Err: errors.New("clock-bump needs delta (e.g. params: {delta: 10s} or {delta: -10s})")}
			}
			return nil
		}},
		{Name: "clock-strobe", Family: Clock, Restores: reset, Color: colClock, Params: []Param{
			clockDuration("delta", "the second offset, relative to the node's offset at the injection: the clock flips between the two", true),
			{Name: "period", Type: Duration, Doc: "how long the clock stays at each of the two offsets (10ms..1h)",
				Validate: func(v any) error {
					if d := v.(time.Duration); d < MinStrobePeriod || d > MaxStrobePeriod {
						return fmt.Errorf("period %v: allowed %v..%v", d, MinStrobePeriod, MaxStrobePeriod)
					}
					return nil
				}},
			{Name: "duration", Type: Duration, Doc: "how long the strobe lasts (0 or left out: until clock-reset or the end of the run; required with `faultbench fault`)",
				Validate: func(v any) error {
					if d := v.(time.Duration); d < 0 || d > 24*time.Hour {
						return fmt.Errorf("duration %v: allowed 0..24h", d)
					}
					return nil
				}},
		}, Check: func(v Values) error {
			for _, p := range []string{"delta", "period"} {
				if _, ok := v[p]; !ok {
					return &ParamError{Param: p, Kind: "clock-strobe", Err: errors.New("clock-strobe needs delta and period (e.g. params: {delta: 5s, period: 1s})")}
				}
			}
			return nil
		}},
		{Name: "clock-reset", Family: Clock, Color: colClock},
	}
}
