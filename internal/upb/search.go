package upb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// The paper's constants (UPB §3.2 and Algorithm 1).
const (
	// Growth is the factor by which Q (L_c calibration) and a client's q
	// (Algorithm 1) grow from one probe to the next: +10 %.
	Growth = 1.10
	// LcFactor: L_c = LcFactor · Q, Q the first load the client could not
	// sustain.
	LcFactor = 0.90
	// StartFraction: a client added by Algorithm 1 starts at q = StartFraction · L_c.
	StartFraction = 0.10
	// HintFactor places a bisect search's first probe at the highest step
	// whose load is at most this fraction of the closed-loop throughput (an
	// open-loop load that must stay steady and within φ is sustained a
	// little below the closed-loop maximum).
	HintFactor = 0.8
	// maxLcSteps bounds the L_c ladder (Q0 · 1.1^199 is 1.7e8 · Q0).
	maxLcSteps = 200
)

// Probe is one load to measure: Clients clients, each a group of worker
// threads offering RatePerClient operations per second (open loop). A
// RatePerClient of 0 asks for a closed-loop run (every thread as fast as it
// can), which the bisect search uses only to place its first probe.
type Probe struct {
	Clients       int     `json:"clients"`
	RatePerClient float64 `json:"rate_per_client_ops"`
}

// Total is the offered load in ops/s (0 for a closed-loop probe).
func (p Probe) Total() float64 { return float64(p.Clients) * p.RatePerClient }

// ClosedLoop reports a closed-loop probe.
func (p Probe) ClosedLoop() bool { return p.RatePerClient == 0 }

// Measurement is what a Prober observed for one probe.
type Measurement struct {
	// TPS is the achieved throughput: successful operations per second over
	// the measured (steady-state) window.
	TPS float64 `json:"tps_ops"`
	// PhiFraction is the fraction of operations of the window that
	// completed successfully within φ's latency limit; PhiOK says whether
	// it reached φ's fraction.
	PhiFraction float64 `json:"phi_fraction"`
	PhiOK       bool    `json:"phi_ok"`
	// Steady reports that the measured window is a steady state.
	Steady bool `json:"steady"`
	// Errors counts failed operations in the window.
	Errors int64 `json:"errors,omitempty"`
	// MeasuredMs is the length of the measured window in milliseconds.
	MeasuredMs float64 `json:"measured_ms,omitempty"`
	// FromMs and ToMs bound the measured window in milliseconds since the
	// probe run's t = 0 (its windows.csv's time base); the report shades it.
	FromMs float64 `json:"from_ms,omitempty"`
	ToMs   float64 `json:"to_ms,omitempty"`
	// ClientTPS is each client's throughput over the run after warm-up.
	ClientTPS []float64 `json:"client_tps_ops,omitempty"`
	// Dir is the probe's run directory (relative to the UPB run directory).
	Dir string `json:"dir,omitempty"`
	// Note says why a window is not steady, or anything else worth knowing.
	Note string `json:"note,omitempty"`
}

// Prober measures the achieved throughput of a load. The real one runs the
// workload against a live cluster (ExecProber); tests script it.
type Prober interface {
	Measure(ctx context.Context, p Probe) (Measurement, error)
}

// ProberFunc adapts a function to Prober.
type ProberFunc func(ctx context.Context, p Probe) (Measurement, error)

// Measure calls f.
func (f ProberFunc) Measure(ctx context.Context, p Probe) (Measurement, error) { return f(ctx, p) }

// Criteria decide whether a probe was sustained.
type Criteria struct {
	// KeepUp: the cluster keeps up with an offered load Q when the achieved
	// tps ≥ (1 − KeepUp) · Q (the paper's Q · 0.95 ≤ tps).
	KeepUp float64
	// PhiFraction and PhiLatency describe φ for messages (the prober decides
	// Measurement.PhiOK).
	PhiFraction float64
	PhiLatency  time.Duration
	// RequireSteady adds the ±2 % sample rule to the paper's acceptance
	// (Config.SteadyRule, off by default): a window that is not steady is
	// then not sustained.
	RequireSteady bool
}

// Validate checks the criteria.
func (c Criteria) Validate() error {
	if !(c.KeepUp > 0 && c.KeepUp < 1) {
		return fmt.Errorf("keep-up tolerance %g: allowed (0, 1)", c.KeepUp)
	}
	if !(c.PhiFraction > 0 && c.PhiFraction < 1) {
		return fmt.Errorf("phi fraction %g: allowed (0, 1)", c.PhiFraction)
	}
	if c.PhiLatency <= 0 {
		return fmt.Errorf("phi latency %v: must be positive", c.PhiLatency)
	}
	return nil
}

// Variation is the shortfall of the achieved tps against the offered load,
// in percent of the offered load (Tables IV and V's "Variation").
func Variation(offered, tps float64) float64 {
	if offered <= 0 {
		return 0
	}
	return (offered - tps) / offered * 100
}

// Judge says whether a measurement at the offered load sustained it: the
// cluster kept up within KeepUp and φ held (the paper's acceptance), and,
// with RequireSteady, the window was steady. The reason lists every failed
// condition.
func (c Criteria) Judge(offered float64, m Measurement) (sustained bool, reason string) {
	var why []string
	if !(m.TPS >= (1-c.KeepUp)*offered) {
		why = append(why, fmt.Sprintf("did not keep up: %.0f of %.0f ops/s (%.1f %% short, more than %.0f %%)",
			m.TPS, offered, Variation(offered, m.TPS), c.KeepUp*100))
	}
	if !m.PhiOK {
		why = append(why, fmt.Sprintf("φ violated: %.1f %% of operations within %v (< %.0f %%)",
			m.PhiFraction*100, c.PhiLatency, c.PhiFraction*100))
	}
	if c.RequireSteady && !m.Steady {
		s := "no steady state"
		if m.Note != "" {
			s += " (" + m.Note + ")"
		}
		why = append(why, s)
	}
	return len(why) == 0, strings.Join(why, "; ")
}

// SearchMode is how a ladder of increasing loads is searched for its first
// load that is not sustained.
type SearchMode string

// The search modes.
const (
	// Linear probes every step from the lowest up, as the paper describes.
	Linear SearchMode = "linear"
	// Bisect probes the same ladder, but places its first probe with a
	// closed-loop hint, gallops (the load × or ÷ 1.1, 1.21, 1.46, 2.14 ...)
	// to bracket the first unsustained step and bisects the bracket. When sustainability is
	// monotone in the load it finds the same step as Linear with
	// O(log n) probes.
	Bisect SearchMode = "bisect"
)

// ParseSearchMode parses "linear" or "bisect".
func ParseSearchMode(s string) (SearchMode, error) {
	switch SearchMode(s) {
	case Linear, Bisect:
		return SearchMode(s), nil
	}
	return "", fmt.Errorf("search mode %q: allowed %s, %s", s, Bisect, Linear)
}

// Row is one probe as recorded in Tables IV and V.
type Row struct {
	Step    int     `json:"step"`           // order in which the probes ran, from 1
	Rung    int     `json:"rung"`           // index on the ladder; -1 for the hint
	Hint    bool    `json:"hint,omitempty"` // the closed-loop run that placed the first probe
	Clients int     `json:"clients"`        // clients (Table V); 1 for L_c
	Q       float64 `json:"q_total_ops"`    // offered load: Q (Table IV) or Q_total (Table V)
	LastQ   float64 `json:"q_last_ops,omitempty"`
	Measurement
	Variation float64 `json:"variation_pct"`
	Sustained bool    `json:"sustained"`
	Reason    string  `json:"reason,omitempty"`
}

// ladder is a sequence of increasing loads.
type ladder struct {
	n    int
	rung func(i int) (p Probe, lastQ float64)
}

// searcher runs probes and records them.
type searcher struct {
	pr   Prober
	crit Criteria
	l    ladder
	rows []Row
	// pass remembers the verdict and row of every probed rung.
	pass map[int]int // rung -> index into rows
}

func (s *searcher) probe(ctx context.Context, i int) (bool, error) {
	if r, ok := s.pass[i]; ok {
		return s.rows[r].Sustained, nil
	}
	p, lastQ := s.l.rung(i)
	m, err := s.pr.Measure(ctx, p)
	if err != nil {
		return false, fmt.Errorf("probe %d (%s, %.0f ops/s): %w", len(s.rows)+1, plural(p.Clients, "client"), p.Total(), err)
	}
	ok, why := s.crit.Judge(p.Total(), m)
	s.rows = append(s.rows, Row{
		Step: len(s.rows) + 1, Rung: i, Clients: p.Clients, Q: p.Total(), LastQ: lastQ,
		Measurement: m, Variation: Variation(p.Total(), m.TPS), Sustained: ok, Reason: why,
	})
	s.pass[i] = len(s.rows) - 1
	return ok, nil
}

// hintProbe runs a closed-loop probe with clients and returns its tps.
func (s *searcher) hintProbe(ctx context.Context, clients int) (float64, error) {
	m, err := s.pr.Measure(ctx, Probe{Clients: clients})
	if err != nil {
		return 0, fmt.Errorf("closed-loop hint run (%s): %w", plural(clients, "client"), err)
	}
	s.rows = append(s.rows, Row{Step: len(s.rows) + 1, Rung: -1, Hint: true, Clients: clients, Measurement: m,
		Reason: "closed loop: places the first probe"})
	return m.TPS, nil
}

// total is the offered load of rung i.
func (s *searcher) total(i int) float64 {
	p, _ := s.l.rung(i)
	return p.Total()
}

// atLeast is the lowest rung whose load is at least x (n if none); the
// ladder's loads increase.
func (s *searcher) atLeast(x float64) int {
	return sort.Search(s.l.n, func(i int) bool { return s.total(i) >= x })
}

// atMost is the highest rung whose load is at most x (-1 if none).
func (s *searcher) atMost(x float64) int {
	return sort.Search(s.l.n, func(i int) bool { return s.total(i) > x }) - 1
}

// run finds lo, the last sustained rung, and hi = lo+1, the first rung not
// sustained (n when every rung was sustained; lo = -1 when rung 0 was not).
// Bisect starts at rung hint; Linear ignores it.
func (s *searcher) run(ctx context.Context, mode SearchMode, hint int) (lo, hi int, err error) {
	n := s.l.n
	if n <= 0 {
		return -1, 0, errors.New("empty ladder")
	}
	if mode == Linear {
		for i := 0; i < n; i++ {
			ok, err := s.probe(ctx, i)
			if err != nil {
				return 0, 0, err
			}
			if !ok {
				return i - 1, i, nil
			}
		}
		return n - 1, n, nil
	}
	// Gallop in load, not in steps: the i-th probe away from the start is
	// at its load × or ÷ 1.1^(2^i) (1.1, 1.21, 1.46, 2.14, 4.6 ...), so the
	// bracket is found in O(log log) probes however fine the ladder is.
	h := min(max(hint, 0), n-1)
	t0 := s.total(h)
	ok, err := s.probe(ctx, h)
	if err != nil {
		return 0, 0, err
	}
	if ok { // gallop up
		lo, hi = h, n
		for f := Growth; lo < n-1; f *= f {
			i := min(max(lo+1, s.atLeast(t0*f)), n-1)
			ok, err := s.probe(ctx, i)
			if err != nil {
				return 0, 0, err
			}
			if !ok {
				hi = i
				break
			}
			lo = i
		}
	} else { // gallop down
		lo, hi = -1, h
		for f := Growth; hi > 0; f *= f {
			i := max(min(hi-1, s.atMost(t0/f)), 0)
			ok, err := s.probe(ctx, i)
			if err != nil {
				return 0, 0, err
			}
			if ok {
				lo = i
				break
			}
			hi = i
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := s.probe(ctx, mid)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

// LcConfig configures the L_c calibration.
type LcConfig struct {
	InitialQ float64 // the low load Q the iteration starts from, ops/s
	Criteria Criteria
	Mode     SearchMode
	// Hint runs a closed-loop probe of one client first to place the first
	// probe of a bisect search.
	Hint bool
}

// Validate checks the configuration.
func (c LcConfig) Validate() error {
	if !(c.InitialQ > 0) || math.IsInf(c.InitialQ, 0) {
		return fmt.Errorf("initial Q %g: must be a positive rate in ops/s", c.InitialQ)
	}
	if _, err := ParseSearchMode(string(c.Mode)); err != nil {
		return err
	}
	return c.Criteria.Validate()
}

// LcResult is the outcome of the L_c calibration (Table IV).
type LcResult struct {
	Lc    float64 `json:"lc_ops"`      // L_c = 0.9 · FailQ
	FailQ float64 `json:"fail_q_ops"`  // the first Q one client did not sustain
	LastQ float64 `json:"last_q_ops"`  // the last Q it sustained
	Rows  []Row   `json:"probes"`      // every probe, in the order run
	Mode  string  `json:"search_mode"` // linear or bisect
}

// CalibrateLc determines the per-client limit L_c by the paper's iterative
// method (UPB §3.2): one client offers Q = InitialQ; while the achieved
// tps ≥ (1 − KeepUp) · Q (and φ holds, and the window is steady) Q grows by
// 10 %; at the first Q not sustained, L_c = 0.9 · Q. The Q values form the
// ladder InitialQ · 1.1^i, searched linearly or by bisection.
func CalibrateLc(ctx context.Context, pr Prober, cfg LcConfig) (*LcResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("calibrating L_c: %w", err)
	}
	qOf := func(i int) float64 { return cfg.InitialQ * math.Pow(Growth, float64(i)) }
	s := &searcher{pr: pr, crit: cfg.Criteria, pass: map[int]int{}, l: ladder{n: maxLcSteps, rung: func(i int) (Probe, float64) {
		return Probe{Clients: 1, RatePerClient: qOf(i)}, 0
	}}}
	res := &LcResult{Mode: string(cfg.Mode)}
	hint := 0
	if cfg.Mode == Bisect && cfg.Hint {
		c1, err := s.hintProbe(ctx, 1)
		if err != nil {
			res.Rows = s.rows
			return res, fmt.Errorf("calibrating L_c: %w", err)
		}
		hint = max(s.atMost(HintFactor*c1), 0)
	}
	lo, hi, err := s.run(ctx, cfg.Mode, hint)
	res.Rows = s.rows
	if err != nil {
		return res, fmt.Errorf("calibrating L_c: %w", err)
	}
	if lo < 0 {
		return res, fmt.Errorf("calibrating L_c: one client did not sustain even the initial Q = %.0f ops/s (%s); the method starts from a low load that respects φ: lower upb.initial_q",
			cfg.InitialQ, s.rows[s.pass[0]].Reason)
	}
	if hi >= maxLcSteps {
		return res, fmt.Errorf("calibrating L_c: one client sustained every Q up to %.0f ops/s; nothing limits it", qOf(maxLcSteps-1))
	}
	res.LastQ, res.FailQ = qOf(lo), qOf(hi)
	res.Lc = LcFactor * res.FailQ
	return res, nil
}

// BaselineConfig configures Algorithm 1.
type BaselineConfig struct {
	Lc         float64 // maximum workload per client, ops/s
	MaxClients int     // clients available
	Criteria   Criteria
	Mode       SearchMode
	// HintClients, if > 0, runs a closed-loop probe with that many clients
	// first to place the first probe of a bisect search.
	HintClients int
}

// Validate checks the configuration.
func (c BaselineConfig) Validate() error {
	if !(c.Lc > 0) || math.IsInf(c.Lc, 0) {
		return fmt.Errorf("per-client limit L_c %g: must be a positive rate in ops/s", c.Lc)
	}
	if c.MaxClients < 1 {
		return fmt.Errorf("max clients %d: at least 1", c.MaxClients)
	}
	if c.HintClients < 0 {
		return fmt.Errorf("hint clients %d: must not be negative", c.HintClients)
	}
	if _, err := ParseSearchMode(string(c.Mode)); err != nil {
		return err
	}
	return c.Criteria.Validate()
}

// StepsPerClient is the number of q values one client goes through in
// Algorithm 1: StartFraction · L_c · 1.1^j for j = 0, 1, ... while below
// L_c, then L_c itself (26 values).
func StepsPerClient() int {
	j := 0
	for StartFraction*math.Pow(Growth, float64(j)) < 1-1e-12 {
		j++
	}
	return j + 1
}

// BaselineLadder returns the offered loads of Algorithm 1 in order: rung i
// has c = i / StepsPerClient() + 1 clients, c − 1 of them at L_c and the
// newest at q = min(0.1 · L_c · 1.1^j, L_c) with j = i mod StepsPerClient().
// It returns the probe (the total spread evenly over the c clients, so that
// no client exceeds L_c) and q.
func BaselineLadder(lc float64, i int) (Probe, float64) {
	m := StepsPerClient()
	c, j := i/m+1, i%m
	q := math.Min(StartFraction*lc*math.Pow(Growth, float64(j)), lc)
	total := float64(c-1)*lc + q
	return Probe{Clients: c, RatePerClient: total / float64(c)}, q
}

// Baseline is the outcome of Algorithm 1 for one (K, F) (Table V).
type Baseline struct {
	// T is T(K,F): the achieved tps of the last sustained probe (the paper's
	// Table V/VI report the measured performance of that run), capped at
	// that probe's offered total (a catch-up burst is not sustainable).
	T       float64 `json:"t_ops"`
	QTotal  float64 `json:"q_total_ops"` // the offered total of that probe
	Clients int     `json:"clients"`     // its number of clients
	// FailQTotal is the first offered total not sustained (0 when every
	// client ran at L_c and the cluster still kept up).
	FailQTotal float64 `json:"fail_q_total_ops,omitempty"`
	// LimitReached: MaxClients clients at L_c were sustained; T is a lower bound.
	LimitReached bool   `json:"client_limit_reached,omitempty"`
	Rows         []Row  `json:"probes"`
	Mode         string `json:"search_mode"`
}

// Algorithm1 finds T(K,F) by the paper's Algorithm 1 (Baseline): clients
// are added one at a time; each new client's q starts at 0.1 · L_c and grows
// by 10 % (at most to L_c) while the cluster sustains Q_total + q; when the
// client reaches L_c the next client is added. T(K,F) is the achieved tps of
// the last sustained probe. Each probe is judged by Criteria.Judge.
func Algorithm1(ctx context.Context, pr Prober, cfg BaselineConfig) (*Baseline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("algorithm 1: %w", err)
	}
	n := cfg.MaxClients * StepsPerClient()
	s := &searcher{pr: pr, crit: cfg.Criteria, pass: map[int]int{}, l: ladder{n: n, rung: func(i int) (Probe, float64) {
		return BaselineLadder(cfg.Lc, i)
	}}}
	res := &Baseline{Mode: string(cfg.Mode)}
	hint := 0
	if cfg.Mode == Bisect && cfg.HintClients > 0 {
		c, err := s.hintProbe(ctx, min(cfg.HintClients, cfg.MaxClients))
		if err != nil {
			res.Rows = s.rows
			return res, fmt.Errorf("algorithm 1: %w", err)
		}
		hint = max(s.atMost(HintFactor*c), 0)
	}
	lo, hi, err := s.run(ctx, cfg.Mode, hint)
	res.Rows = s.rows
	if err != nil {
		return res, fmt.Errorf("algorithm 1: %w", err)
	}
	if lo < 0 {
		p, _ := BaselineLadder(cfg.Lc, 0)
		return res, fmt.Errorf("algorithm 1: the cluster did not sustain even one client at 0.1 · L_c = %.0f ops/s (%s)", p.Total(), s.rows[s.pass[0]].Reason)
	}
	best := s.rows[s.pass[lo]]
	// Achieved throughput above the offered load is a backlog draining after
	// a stall (a catch-up burst), not a sustainable rate: T is capped at
	// the offered total (docs/upb.md).
	res.T, res.QTotal, res.Clients = min(best.TPS, best.Q), best.Q, best.Clients
	if hi >= n {
		res.LimitReached = true
	} else {
		p, _ := BaselineLadder(cfg.Lc, hi)
		res.FailQTotal = p.Total()
	}
	return res, nil
}
