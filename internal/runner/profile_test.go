package runner_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
)

func TestParseProfile(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		{"none", "", "none", ""},
		{"steps", "steps 0s=0.3,40s=1.2, 100s=0.3", "steps 0s=0.3,40s=1.2,1m40s=0.3", ""},
		{"ramp in seconds", "ramp 0=0.2,60=1.5", "ramp 0s=0.2,1m0s=1.5", ""},
		{"unknown shape", "sine 0s=1", "", "shape"},
		{"no points", "steps", "", "want a shape and points"},
		{"not increasing", "steps 10s=1,5s=2", "", "not after"},
		{"zero factor", "steps 0s=0", "", "factor 0"},
		{"bad point", "ramp 10s", "", "TIME=FACTOR"},
		{"bad time", "ramp soon=1", "", "not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := runner.ParseProfile(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || p.String() != tc.want {
				t.Fatalf("ParseProfile = %q, %v; want %q", p.String(), err, tc.want)
			}
		})
	}
}

func TestProfileFactor(t *testing.T) {
	steps, _ := runner.ParseProfile("steps 10s=0.5,20s=2")
	ramp, _ := runner.ParseProfile("ramp 10s=0.5,20s=2")
	for _, tc := range []struct {
		name string
		p    runner.Profile
		at   time.Duration
		want float64
	}{
		{"no profile", runner.Profile{}, 5 * time.Second, 1},
		{"steps before the first point", steps, -time.Second, 0.5},
		{"steps between", steps, 15 * time.Second, 0.5},
		{"steps at a point", steps, 20 * time.Second, 2},
		{"steps after the last", steps, time.Minute, 2},
		{"ramp half way", ramp, 15 * time.Second, 1.25},
		{"ramp after the last", ramp, time.Minute, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Factor(tc.at); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Factor(%v) = %g, want %g", tc.at, got, tc.want)
			}
		})
	}
}

func TestProfileMean(t *testing.T) {
	steps, _ := runner.ParseProfile("steps 10s=0.5,20s=2")
	ramp, _ := runner.ParseProfile("ramp 10s=0.5,20s=2")
	for _, tc := range []struct {
		name     string
		p        runner.Profile
		from, to time.Duration
		want     float64
	}{
		{"no profile", runner.Profile{}, 0, time.Minute, 1},
		{"steps across a point", steps, 10 * time.Second, 30 * time.Second, 1.25},
		{"steps before the first point", steps, 0, 20 * time.Second, 0.5},
		{"ramp over its rise", ramp, 10 * time.Second, 20 * time.Second, 1.25},
		{"ramp, then flat", ramp, 10 * time.Second, 30 * time.Second, 1.625},
		{"empty span", ramp, 15 * time.Second, 15 * time.Second, 1.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Mean(tc.from, tc.to); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Mean = %g, want %g", got, tc.want)
			}
		})
	}
}

// TestProfileRate runs open loop at 100 ops/s for 2 s under profiles: the
// operations due (done, dropped or cut) follow the profile's factors. The
// "no profile" case is the negative control of the count.
func TestProfileRate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile string
		want    int64
	}{
		{"no profile", "", 200},
		{"steps x0.5 then x2", "steps 0s=0.5,1s=2", 250}, // 50 + 200
		{"ramp x1 to x3", "ramp 0s=1,2s=3", 400},         // mean factor 2
		{"steps, the warm-up at the first factor", "steps 0s=3", 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := runner.ParseProfile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			cfg := runner.Config{Phase: runner.Run, Threads: 2, Rate: 100, Duration: 2 * time.Second, Profile: p, Wake: runner.WakeSleep}
			res, _ := runWith(t, context.Background(), cfg, testWorkload(t, 100), &countingDriver{}, nil)
			got := res.Ops + res.Dropped + res.CutCount()
			if d := float64(got - tc.want); math.Abs(d) > 0.03*float64(tc.want)+4 {
				t.Errorf("operations due %d (done %d, dropped %d), want %d", got, res.Ops, res.Dropped, tc.want)
			}
		})
	}
}

func TestReadProfile(t *testing.T) {
	p := properties.New()
	p.Set("runner.profile", "steps 0s=-1")
	if _, err := runner.ReadProfile(p); err == nil || !strings.Contains(err.Error(), "runner.profile") {
		t.Fatalf("err %v, want one naming runner.profile", err)
	}
	p.Set("runner.profile", "ramp 0s=0.5,30s=1.5")
	pr, err := runner.ReadProfile(p)
	if err != nil || pr.String() != "ramp 0s=0.5,30s=1.5" {
		t.Fatalf("ReadProfile = %v, %v", pr, err)
	}
	cfg := runner.Config{Phase: runner.Run, Threads: 1, Duration: time.Second, Profile: pr}
	if got := cfg.ClientSettings()["runner.profile"]; got != "ramp 0s=0.5,30s=1.5" {
		t.Errorf("client settings runner.profile = %q", got)
	}
}
