package scenario

import (
	"errors"
	"fmt"
	"time"
)

// UPB is the `upb:` section of a scenario: the parameters of the Under
// Pressure Benchmark (docs/upb.md, docs/papers.md) that `faultbench upb` runs. A
// scenario with this section describes the target, workload and driver; the
// cluster sizes, loads and faults are UPB's own, so such a scenario has no
// schedule, no checks and no external endpoints.
type UPB struct {
	// KMax is the largest fault-tolerance index K measured (K = 0..KMax).
	KMax int `yaml:"kmax,omitempty"`
	// Warmup is each probe's warm-up before its measurement.
	Warmup Duration `yaml:"warmup,omitempty"`
	// Measure is the steady-state measurement window of one probe (the
	// paper's 2 minutes).
	Measure Duration `yaml:"measure,omitempty"`
	// SteadyTimeout is how much longer than warm-up + measure a probe may
	// run to find a steady window before it is judged not steady.
	SteadyTimeout Duration `yaml:"steady_timeout,omitempty"`
	// SteadySample is the sampling period of the steady-state test: every
	// sample of the measurement window must lie within SteadyTolerance of
	// the window's mean throughput. A multiple of load.window.
	SteadySample Duration `yaml:"steady_sample,omitempty"`
	// SteadyTolerance is the steady-state band (0.02 = ±2 %).
	SteadyTolerance float64 `yaml:"steady_tolerance,omitempty"`
	// SteadyRule makes the ±SteadyTolerance sample rule a condition of a
	// sustained probe (an addition to the paper, off by default: the
	// paper's acceptance is keep-up within 5 % and φ; docs/upb.md).
	SteadyRule bool `yaml:"steady_rule,omitempty"`
	// KeepUp is how far below the offered load the achieved throughput may
	// be for the cluster to count as keeping up (0.05 = 5 %).
	KeepUp float64 `yaml:"keepup_tolerance,omitempty"`
	// PhiFraction and PhiLatency are φ: at least PhiFraction of the
	// operations complete within PhiLatency (0.9 and 1s).
	PhiFraction float64  `yaml:"phi_fraction,omitempty"`
	PhiLatency  Duration `yaml:"phi_latency,omitempty"`
	// InitialQ is the low load (ops/s) the L_c calibration starts from.
	InitialQ float64 `yaml:"initial_q,omitempty"`
	// Lc, when set, is the per-client limit (ops/s) and skips its calibration.
	Lc float64 `yaml:"lc,omitempty"`
	// ClientThreads is the number of worker threads of one client.
	ClientThreads int `yaml:"client_threads,omitempty"`
	// MaxClients bounds Algorithm 1's number of clients.
	MaxClients int `yaml:"max_clients,omitempty"`
	// Search is how the probe ladder is searched: bisect (default) or
	// linear (every step, as the paper lists it).
	Search string `yaml:"search,omitempty"`
	// Hint is the length of the closed-loop run that places the first probe
	// of a bisect search.
	Hint Duration `yaml:"hint,omitempty"`
	// Victim selects each node that fails for F > 0 (default: leader for
	// etcd, primary for redis-cluster).
	Victim string `yaml:"victim,omitempty"`
	// Settle is the pause after the F-th node failed and the cluster is
	// healthy again, before the first probe.
	Settle Duration `yaml:"settle,omitempty"`
}

// UPB search modes.
const (
	UPBSearchBisect = "bisect"
	UPBSearchLinear = "linear"
)

// validate checks the section's fields; window is load.window (0 = default).
func (u *UPB) validate(s *Scenario) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("field upb.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if u.KMax < 0 || u.KMax > 10 {
		bad("kmax", "%d: allowed 1..10 (default 2)", u.KMax)
	}
	for _, d := range []struct {
		name string
		v    Duration
		max  time.Duration
	}{
		{"warmup", u.Warmup, time.Hour}, {"measure", u.Measure, time.Hour}, {"steady_timeout", u.SteadyTimeout, time.Hour},
		{"steady_sample", u.SteadySample, time.Hour}, {"phi_latency", u.PhiLatency, time.Hour}, {"hint", u.Hint, time.Hour},
		{"settle", u.Settle, time.Hour},
	} {
		if d.v.D() > d.max {
			bad(d.name, "%v: at most %v", d.v.D(), d.max)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"steady_tolerance", u.SteadyTolerance}, {"keepup_tolerance", u.KeepUp}, {"phi_fraction", u.PhiFraction}} {
		if f.v < 0 || f.v >= 1 {
			bad(f.name, "%g: allowed (0, 1)", f.v)
		}
	}
	if u.InitialQ < 0 || u.Lc < 0 {
		bad("initial_q", "initial_q and lc must not be negative")
	}
	if u.ClientThreads < 0 || u.ClientThreads > 1024 {
		bad("client_threads", "%d: allowed 1..1024", u.ClientThreads)
	}
	if u.MaxClients < 0 || u.MaxClients > 1024 {
		bad("max_clients", "%d: allowed 1..1024", u.MaxClients)
	}
	if u.Search != "" && u.Search != UPBSearchBisect && u.Search != UPBSearchLinear {
		bad("search", "%q: allowed %s, %s", u.Search, UPBSearchBisect, UPBSearchLinear)
	}
	w := s.Load.Window.D()
	if w == 0 {
		w = time.Second
	}
	if u.SteadySample != 0 && u.SteadySample.D()%w != 0 {
		bad("steady_sample", "%v is not a multiple of load.window (%v)", u.SteadySample.D(), w)
	}
	if u.Measure != 0 && u.SteadySample != 0 && u.Measure.D() < 2*u.SteadySample.D() {
		bad("measure", "%v must hold at least two steady samples of %v", u.Measure.D(), u.SteadySample.D())
	}
	if len(s.Target.Endpoints) > 0 {
		errs = append(errs, errors.New("field target.endpoints: upb starts its own clusters (one per K); remove endpoints"))
	}
	if len(s.Schedule.Steps) > 0 || s.Schedule.Failover != nil {
		errs = append(errs, errors.New("field schedule: upb injects its own failures (F = 1..K); remove the schedule"))
	}
	if len(s.Checks) > 0 {
		errs = append(errs, errors.New("field checks: not supported together with upb"))
	}
	return errs
}

// resolve fills the defaults of docs/upb.md.
func (u *UPB) resolve() {
	def := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	if u.KMax == 0 {
		u.KMax = 2
	}
	def(&u.Warmup, 5*time.Second)
	def(&u.Measure, 20*time.Second)
	def(&u.SteadyTimeout, u.Measure.D()/2)
	def(&u.SteadySample, 5*time.Second)
	def(&u.PhiLatency, time.Second)
	def(&u.Hint, 10*time.Second)
	def(&u.Settle, 5*time.Second)
	if u.SteadyTolerance == 0 {
		u.SteadyTolerance = 0.02
	}
	if u.KeepUp == 0 {
		u.KeepUp = 0.05
	}
	if u.PhiFraction == 0 {
		u.PhiFraction = 0.9
	}
	if u.InitialQ == 0 {
		u.InitialQ = 1000
	}
	if u.ClientThreads == 0 {
		u.ClientThreads = 32 // the paper's threads per client machine
	}
	if u.MaxClients == 0 {
		u.MaxClients = 16
	}
	if u.Search == "" {
		u.Search = UPBSearchBisect
	}
}
