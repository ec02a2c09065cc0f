package upb

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
)

// Config is the resolved UPB configuration of one run (docs/upb.md lists
// every parameter and its default).
type Config struct {
	KMax int // K = 0..KMax
	// Probe timing: every probe runs Warmup, then measures until it finds
	// a steady window of length Measure, for at most Measure + SteadyTimeout.
	Warmup, Measure, SteadyTimeout time.Duration
	// SteadySample is the sampling period of the steady-state test and
	// SteadyTol its band (0.02 = ±2 % of the window's mean).
	SteadySample time.Duration
	SteadyTol    float64
	// SteadyRule: the probe searches the earliest window whose samples
	// stay within ±SteadyTol (for up to SteadyTimeout longer) and a window
	// that does not is not sustained. Off (the paper's acceptance): the
	// window is the first Measure after warm-up, its steadiness recorded
	// but not judged.
	SteadyRule bool
	// Window is the runner's measurement window (load.window); SteadySample
	// is a multiple of it.
	Window   time.Duration
	Criteria Criteria // keep-up tolerance and φ
	InitialQ float64  // L_c calibration's starting load, ops/s
	Lc       float64  // given L_c (ops/s); 0 = calibrate
	// ClientThreads is the number of worker threads of one client;
	// MaxClients the most clients Algorithm 1 may use.
	ClientThreads, MaxClients int
	Search                    SearchMode
	// Hint is the length (after warm-up) of the closed-loop runs that place
	// a bisect search's first probe; HintClients the clients of Algorithm
	// 1's hint run.
	Hint        time.Duration
	HintClients int
	Victim      string        // selector of each node that fails (F = 1..K)
	Settle      time.Duration // pause after the F-th failure, before probing
	LoadThreads int           // threads of the load (insert) phase
	OpTimeout   time.Duration // per-operation deadline
}

// ConfigFrom builds the configuration from a resolved scenario (see
// scenario.Scenario.Resolve) that has a upb section.
func ConfigFrom(sc *scenario.Scenario) (Config, error) {
	u := sc.UPB
	if u == nil {
		return Config{}, errors.New("the scenario has no upb section (see docs/upb.md)")
	}
	mode, err := ParseSearchMode(u.Search)
	if err != nil {
		return Config{}, fmt.Errorf("field upb.search: %w", err)
	}
	c := Config{
		KMax: u.KMax, Warmup: u.Warmup.D(), Measure: u.Measure.D(), SteadyTimeout: u.SteadyTimeout.D(),
		SteadySample: u.SteadySample.D(), SteadyTol: u.SteadyTolerance, SteadyRule: u.SteadyRule, Window: sc.Load.Window.D(),
		Criteria: Criteria{KeepUp: u.KeepUp, PhiFraction: u.PhiFraction, PhiLatency: u.PhiLatency.D(), RequireSteady: u.SteadyRule},
		InitialQ: u.InitialQ, Lc: u.Lc, ClientThreads: u.ClientThreads, MaxClients: u.MaxClients,
		Search: mode, Hint: u.Hint.D(), HintClients: min(u.MaxClients, 2), Victim: u.Victim, Settle: u.Settle.D(),
		LoadThreads: sc.Load.LoadThreads, OpTimeout: sc.Load.OpTimeout.D(),
	}
	return c, c.Validate()
}

// Validate checks every field.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.KMax < 1 || c.KMax > 10 {
		bad("kmax %d: allowed 1..10", c.KMax)
	}
	if c.Warmup < 0 || c.SteadyTimeout < 0 || c.Settle < 0 {
		bad("warm-up, steady timeout and settle must not be negative")
	}
	if c.Window <= 0 {
		bad("window %v: must be positive", c.Window)
	} else if c.SteadySample <= 0 || c.SteadySample%c.Window != 0 {
		bad("steady sample %v: must be a positive multiple of the window %v", c.SteadySample, c.Window)
	}
	if c.SteadySample > 0 && c.Measure < 2*c.SteadySample {
		bad("measure %v: must hold at least two steady samples of %v", c.Measure, c.SteadySample)
	}
	if !(c.SteadyTol > 0 && c.SteadyTol < 1) {
		bad("steady tolerance %g: allowed (0, 1)", c.SteadyTol)
	}
	if err := c.Criteria.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !(c.InitialQ > 0) || math.IsInf(c.InitialQ, 0) {
		bad("initial Q %g: must be a positive rate", c.InitialQ)
	}
	if c.Lc < 0 || math.IsInf(c.Lc, 0) || math.IsNaN(c.Lc) {
		bad("L_c %g: must be 0 (calibrate) or a positive rate", c.Lc)
	}
	if c.ClientThreads < 1 || c.MaxClients < 1 {
		bad("client threads (%d) and max clients (%d) must be at least 1", c.ClientThreads, c.MaxClients)
	}
	if _, err := ParseSearchMode(string(c.Search)); err != nil {
		errs = append(errs, err)
	}
	if c.Search == Bisect && c.Hint <= 0 {
		bad("hint %v: a bisect search needs a positive hint run length", c.Hint)
	}
	if c.HintClients < 0 {
		bad("hint clients %d: must not be negative", c.HintClients)
	}
	if c.LoadThreads < 1 {
		bad("load threads %d: at least 1", c.LoadThreads)
	}
	if c.OpTimeout <= 0 {
		bad("operation timeout %v: must be positive", c.OpTimeout)
	}
	return errors.Join(errs...)
}
