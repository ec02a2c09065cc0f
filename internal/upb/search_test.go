package upb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// crit is the paper's acceptance with the opt-in ±2 % sample rule
// (Config.SteadyRule), so that the scripted searches can see a probe
// fail on steadiness; paperCrit is the default, the paper's alone.
var (
	crit      = Criteria{KeepUp: 0.05, PhiFraction: 0.9, PhiLatency: time.Second, RequireSteady: true}
	paperCrit = Criteria{KeepUp: 0.05, PhiFraction: 0.9, PhiLatency: time.Second}
)

func good(tps float64) Measurement {
	return Measurement{TPS: tps, PhiFraction: 1, PhiOK: true, Steady: true}
}

// step is one expected probe of a scripted sequence and what it measures.
type step struct {
	clients int
	total   float64 // offered total; ignored for closed-loop steps
	closed  bool
	m       Measurement
}

// sequence is a Prober that expects exactly the probes of its steps, in
// order, and returns their measurements.
type sequence struct {
	t     *testing.T
	steps []step
	i     int
}

func (s *sequence) Measure(_ context.Context, p Probe) (Measurement, error) {
	s.t.Helper()
	if s.i >= len(s.steps) {
		s.t.Fatalf("probe %d (%d clients, %.3f ops/s) beyond the %d scripted", s.i+1, p.Clients, p.Total(), len(s.steps))
	}
	st := s.steps[s.i]
	s.i++
	if p.ClosedLoop() != st.closed || p.Clients != st.clients || (!st.closed && math.Abs(p.Total()-st.total) > 1e-6*st.total) {
		s.t.Fatalf("probe %d: got %d clients at %.4f ops/s (closed loop %v), want %d clients at %.4f (closed loop %v)",
			s.i, p.Clients, p.Total(), p.ClosedLoop(), st.clients, st.total, st.closed)
	}
	if !p.ClosedLoop() && p.RatePerClient*float64(p.Clients) != p.Total() {
		s.t.Fatalf("probe %d: total %g is not clients × rate", s.i, p.Total())
	}
	return st.m, nil
}

func (s *sequence) done() {
	s.t.Helper()
	if s.i != len(s.steps) {
		s.t.Errorf("%d of %d scripted probes ran", s.i, len(s.steps))
	}
}

// model is a Prober for a cluster that processes at most cap ops/s and a
// client that can submit at most clientCap ops/s; it records the probes.
type model struct {
	cap, clientCap float64
	probes         []Probe
}

func (m *model) Measure(_ context.Context, p Probe) (Measurement, error) {
	m.probes = append(m.probes, p)
	c := m.cap
	if m.clientCap > 0 {
		c = math.Min(c, m.clientCap*float64(p.Clients))
	}
	if p.ClosedLoop() {
		return good(c), nil
	}
	return good(math.Min(p.Total(), c)), nil
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offered float64
		m       Measurement
		ok      bool
		reasons []string
		paper   bool // judged by the paper's acceptance alone (the default)
	}{
		{name: "kept up exactly", offered: 1000, m: good(1000), ok: true},
		{name: "5 % short is still kept up", offered: 1000, m: good(950), ok: true},
		{name: "more than 5 % short", offered: 1000, m: good(949.9), reasons: []string{"did not keep up", "5.0 % short"}},
		{name: "above the offered load", offered: 1000, m: good(1010), ok: true},
		{name: "φ violated", offered: 1000, m: Measurement{TPS: 1000, PhiFraction: 0.85, Steady: true}, reasons: []string{"φ violated: 85.0 %"}},
		{name: "not steady", offered: 1000, m: Measurement{TPS: 1000, PhiFraction: 1, PhiOK: true, Note: "wobbly"}, reasons: []string{"no steady state (wobbly)"}},
		{name: "everything wrong", offered: 1000, m: Measurement{TPS: 10}, reasons: []string{"did not keep up", "φ violated", "no steady state"}},
		{name: "not steady, the paper's acceptance: sustained", offered: 1000, m: Measurement{TPS: 1000, PhiFraction: 1, PhiOK: true, Note: "wobbly"}, ok: true, paper: true},
		{name: "the paper's acceptance still needs keep-up and φ", offered: 1000, m: Measurement{TPS: 10}, reasons: []string{"did not keep up", "φ violated"}, paper: true},
		{name: "NaN tps", offered: 1000, m: Measurement{TPS: math.NaN(), PhiOK: true, Steady: true}, reasons: []string{"did not keep up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := crit
			if tc.paper {
				c = paperCrit
			}
			ok, why := c.Judge(tc.offered, tc.m)
			if ok != tc.ok {
				t.Errorf("sustained = %v (%s), want %v", ok, why, tc.ok)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(why, r) {
					t.Errorf("reason %q lacks %q", why, r)
				}
			}
			if tc.ok && why != "" {
				t.Errorf("sustained with a reason: %q", why)
			}
		})
	}
}

func TestVariation(t *testing.T) {
	// Table V's last sustained VoltDB run: 250,000 offered, 238,740 achieved, "4,5 %".
	if v := Variation(250000, 238740); math.Abs(v-4.504) > 1e-3 {
		t.Errorf("Variation = %g, want 4.504", v)
	}
	if v := Variation(0, 5); v != 0 {
		t.Errorf("Variation of a zero load = %g, want 0", v)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"criteria keep-up 0", Criteria{KeepUp: 0, PhiFraction: 0.9, PhiLatency: time.Second}.Validate(), "keep-up"},
		{"criteria φ 1", Criteria{KeepUp: 0.05, PhiFraction: 1, PhiLatency: time.Second}.Validate(), "phi fraction"},
		{"criteria no latency", Criteria{KeepUp: 0.05, PhiFraction: 0.9}.Validate(), "phi latency"},
		{"L_c initial Q 0", LcConfig{Criteria: crit, Mode: Linear}.Validate(), "initial Q"},
		{"L_c bad mode", LcConfig{InitialQ: 1, Criteria: crit, Mode: "random"}.Validate(), "search mode"},
		{"algorithm 1 no L_c", BaselineConfig{MaxClients: 1, Criteria: crit, Mode: Linear}.Validate(), "L_c"},
		{"algorithm 1 no clients", BaselineConfig{Lc: 1, Criteria: crit, Mode: Linear}.Validate(), "max clients"},
		{"algorithm 1 infinite L_c", BaselineConfig{Lc: math.Inf(1), MaxClients: 1, Criteria: crit, Mode: Linear}.Validate(), "L_c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", tc.err, tc.want)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		if err := (BaselineConfig{Lc: 1, MaxClients: 1, Criteria: crit, Mode: Bisect}).Validate(); err != nil {
			t.Error(err)
		}
	})
}

// TestCalibrateLcPaperExample replays the example of UPB §3.2: a client
// starts at Q = 10 tps, the cluster processes everything until Q = 174,
// where it processes 150; L_c is that Q decreased by 10 %, "156 tps".
func TestCalibrateLcPaperExample(t *testing.T) {
	seq := &sequence{t: t}
	q := 10.0
	for q < 170 {
		seq.steps = append(seq.steps, step{clients: 1, total: q, m: good(q)})
		q *= Growth
	}
	seq.steps = append(seq.steps, step{clients: 1, total: q, m: good(150)}) // q = 174.49
	res, err := CalibrateLc(context.Background(), seq, LcConfig{InitialQ: 10, Criteria: crit, Mode: Linear})
	if err != nil {
		t.Fatal(err)
	}
	seq.done()
	if math.Abs(res.FailQ-174.494) > 1e-3 || math.Abs(res.Lc-0.9*res.FailQ) > 1e-9 || math.Floor(res.Lc) != 157 {
		t.Errorf("FailQ %.3f, L_c %.3f; want 174.494 and 0.9 × that (≈ 157; the paper rounds 174 × 0.9 to 156)", res.FailQ, res.Lc)
	}
	if len(res.Rows) != 31 || !res.Rows[29].Sustained || res.Rows[30].Sustained {
		t.Fatalf("%d rows; want 31, the last one not sustained", len(res.Rows))
	}
	if v := res.Rows[30].Variation; math.Abs(v-14.04) > 0.01 {
		t.Errorf("variation of the last probe %.2f %%, want 14.04 %%", v)
	}
}

func TestCalibrateLcScripted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		lc     float64
		reason string
	}{
		{name: "keeps up twice, then falls short", steps: []step{
			{clients: 1, total: 100, m: good(100)},
			{clients: 1, total: 110, m: good(105)},
			{clients: 1, total: 121, m: good(114)}, // 5.8 % short
		}, lc: 0.9 * 121, reason: "did not keep up"},
		{name: "φ violated at the third Q", steps: []step{
			{clients: 1, total: 100, m: good(100)},
			{clients: 1, total: 110, m: good(110)},
			{clients: 1, total: 121, m: Measurement{TPS: 121, PhiFraction: 0.8, Steady: true}},
		}, lc: 0.9 * 121, reason: "φ violated"},
		{name: "no steady state at the second Q", steps: []step{
			{clients: 1, total: 100, m: good(100)},
			{clients: 1, total: 110, m: Measurement{TPS: 110, PhiFraction: 1, PhiOK: true}},
		}, lc: 0.9 * 110, reason: "no steady state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := &sequence{t: t, steps: tc.steps}
			res, err := CalibrateLc(context.Background(), seq, LcConfig{InitialQ: 100, Criteria: crit, Mode: Linear})
			if err != nil {
				t.Fatal(err)
			}
			seq.done()
			if math.Abs(res.Lc-tc.lc) > 1e-9 {
				t.Errorf("L_c = %g, want %g", res.Lc, tc.lc)
			}
			last := res.Rows[len(res.Rows)-1]
			if last.Sustained || !strings.Contains(last.Reason, tc.reason) {
				t.Errorf("last row sustained %v, reason %q; want not sustained because %q", last.Sustained, last.Reason, tc.reason)
			}
		})
	}
}

func TestCalibrateLcErrors(t *testing.T) {
	t.Run("initial Q too high", func(t *testing.T) {
		seq := &sequence{t: t, steps: []step{{clients: 1, total: 100, m: good(50)}}}
		_, err := CalibrateLc(context.Background(), seq, LcConfig{InitialQ: 100, Criteria: crit, Mode: Linear})
		if err == nil || !strings.Contains(err.Error(), "lower upb.initial_q") {
			t.Errorf("error %v, want advice to lower upb.initial_q", err)
		}
	})
	t.Run("nothing limits the client", func(t *testing.T) {
		_, err := CalibrateLc(context.Background(), &model{cap: math.Inf(1)}, LcConfig{InitialQ: 1, Criteria: crit, Mode: Bisect})
		if err == nil || !strings.Contains(err.Error(), "nothing limits it") {
			t.Errorf("error %v, want 'nothing limits it'", err)
		}
	})
	t.Run("prober error", func(t *testing.T) {
		boom := errors.New("cluster gone")
		pr := ProberFunc(func(context.Context, Probe) (Measurement, error) { return Measurement{}, boom })
		_, err := CalibrateLc(context.Background(), pr, LcConfig{InitialQ: 1, Criteria: crit, Mode: Linear})
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "calibrating L_c: probe 1") {
			t.Errorf("error %v, want the prober's, with context", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		_, err := CalibrateLc(context.Background(), &model{cap: 1}, LcConfig{InitialQ: -1, Criteria: crit, Mode: Linear})
		if err == nil || !strings.Contains(err.Error(), "initial Q") {
			t.Errorf("error %v", err)
		}
	})
}

// TestCalibrateLcBisect checks that the bisect search with its closed-loop
// hint finds the same L_c as the linear one, with fewer probes.
func TestCalibrateLcBisect(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cap       float64
		clientCap float64
	}{
		{name: "cluster-bound", cap: 1000},
		{name: "client-bound", cap: 5000, clientCap: 777},
		{name: "just above Q0", cap: 101},
		{name: "far away", cap: 1e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lin := &model{cap: tc.cap, clientCap: tc.clientCap}
			want, err := CalibrateLc(context.Background(), lin, LcConfig{InitialQ: 100, Criteria: crit, Mode: Linear})
			if err != nil {
				t.Fatal(err)
			}
			bis := &model{cap: tc.cap, clientCap: tc.clientCap}
			got, err := CalibrateLc(context.Background(), bis, LcConfig{InitialQ: 100, Criteria: crit, Mode: Bisect, Hint: true})
			if err != nil {
				t.Fatal(err)
			}
			if got.Lc != want.Lc || got.LastQ != want.LastQ {
				t.Errorf("bisect L_c %g (last %g), linear %g (last %g)", got.Lc, got.LastQ, want.Lc, want.LastQ)
			}
			if !got.Rows[0].Hint || bis.probes[0].Clients != 1 || !bis.probes[0].ClosedLoop() {
				t.Errorf("first probe %+v is not a one-client closed-loop hint", bis.probes[0])
			}
			if len(bis.probes) > 6 || (len(lin.probes) > 8 && len(bis.probes) >= len(lin.probes)) {
				t.Errorf("bisect ran %d probes, linear %d", len(bis.probes), len(lin.probes))
			}
		})
	}
}

func TestStepsPerClient(t *testing.T) {
	if n := StepsPerClient(); n != 26 {
		t.Errorf("StepsPerClient = %d, want 26 (0.1·1.1^0 .. 0.1·1.1^24 = 0.985, then 1.0)", n)
	}
}

func TestBaselineLadder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		i       int
		clients int
		total   float64
		q       float64
	}{
		{name: "first client starts at 0.1 L_c", i: 0, clients: 1, total: 10, q: 10},
		{name: "then +10 %", i: 1, clients: 1, total: 11, q: 11},
		{name: "last step below L_c", i: 24, clients: 1, total: 10 * math.Pow(1.1, 24), q: 10 * math.Pow(1.1, 24)},
		{name: "capped at L_c", i: 25, clients: 1, total: 100, q: 100},
		{name: "second client starts at 0.1 L_c", i: 26, clients: 2, total: 110, q: 10},
		{name: "second client full", i: 51, clients: 2, total: 200, q: 100},
		{name: "third client", i: 53, clients: 3, total: 211, q: 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, q := BaselineLadder(100, tc.i)
			if p.Clients != tc.clients || math.Abs(p.Total()-tc.total) > 1e-9 || math.Abs(q-tc.q) > 1e-9 {
				t.Errorf("rung %d: %d clients, total %g, q %g; want %d, %g, %g", tc.i, p.Clients, p.Total(), q, tc.clients, tc.total, tc.q)
			}
		})
	}
	t.Run("increasing, no client above L_c", func(t *testing.T) {
		prev := 0.0
		for i := 0; i < 26*20; i++ {
			p, _ := BaselineLadder(100, i)
			if p.Total() <= prev || p.RatePerClient > 100+1e-9 {
				t.Fatalf("rung %d: total %g after %g, %g per client", i, p.Total(), prev, p.RatePerClient)
			}
			prev = p.Total()
		}
	})
}

// TestAlgorithm1Linear runs Algorithm 1 as the paper writes it against a
// cluster that processes at most 230 ops/s, with L_c = 100: two clients
// fill up, the third sustains q up to 41.8 (241.8 offered, 230 achieved,
// 4.9 % short) and fails at q = 45.9.
func TestAlgorithm1Linear(t *testing.T) {
	m := &model{cap: 230}
	b, err := Algorithm1(context.Background(), m, BaselineConfig{Lc: 100, MaxClients: 8, Criteria: crit, Mode: Linear})
	if err != nil {
		t.Fatal(err)
	}
	q := 10 * math.Pow(1.1, 15)
	if b.T != 230 || math.Abs(b.QTotal-(200+q)) > 1e-9 || b.Clients != 3 || math.Abs(b.FailQTotal-(200+q*1.1)) > 1e-9 || b.LimitReached {
		t.Errorf("T %g at Q_total %g with %d clients, fail %g; want 230 at %g with 3, fail %g", b.T, b.QTotal, b.Clients, b.FailQTotal, 200+q, 200+q*1.1)
	}
	if len(m.probes) != 2*26+17 {
		t.Errorf("%d probes, want every step: %d", len(m.probes), 2*26+17)
	}
	for i, p := range m.probes {
		if want, _ := BaselineLadder(100, i); p != want {
			t.Fatalf("probe %d = %+v, want ladder step %+v", i, p, want)
		}
	}
	if r := b.Rows[len(b.Rows)-1]; r.Sustained || r.Rung != 2*26+16 || math.Abs(r.LastQ-q*1.1) > 1e-9 {
		t.Errorf("last row %+v", r)
	}
}

func TestAlgorithm1Scripted(t *testing.T) {
	// L_c = 100: the first client's q goes 10, 11, 12.1, ...
	for _, tc := range []struct {
		name    string
		steps   []step
		t       float64
		qtotal  float64
		reason  string
		errText string
	}{
		{name: "φ ends the search", steps: []step{
			{clients: 1, total: 10, m: good(10)},
			{clients: 1, total: 11, m: good(10.9)},
			{clients: 1, total: 12.1, m: Measurement{TPS: 12.1, PhiFraction: 0.5, Steady: true}},
		}, t: 10.9, qtotal: 11, reason: "φ violated"},
		{name: "no steady state ends the search", steps: []step{
			{clients: 1, total: 10, m: good(10)},
			{clients: 1, total: 11, m: Measurement{TPS: 11, PhiOK: true, PhiFraction: 1, Note: "17 %"}},
		}, t: 10, qtotal: 10, reason: "no steady state (17 %)"},
		{name: "T is the achieved tps, not the offered total", steps: []step{
			{clients: 1, total: 10, m: good(9.6)}, // 4 % short: sustained
			{clients: 1, total: 11, m: good(10)},  // 9 % short
		}, t: 9.6, qtotal: 10, reason: "did not keep up"},
		{name: "T is capped at the offered total (catch-up burst)", steps: []step{
			{clients: 1, total: 10, m: good(10)},
			{clients: 1, total: 11, m: good(13)}, // a backlog drained: 18 % above the offered 11
			{clients: 1, total: 12.1, m: good(9)},
		}, t: 11, qtotal: 11, reason: "did not keep up"},
		{name: "the first step fails", steps: []step{
			{clients: 1, total: 10, m: good(1)},
		}, errText: "did not sustain even one client at 0.1 · L_c = 10 ops/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := &sequence{t: t, steps: tc.steps}
			b, err := Algorithm1(context.Background(), seq, BaselineConfig{Lc: 100, MaxClients: 4, Criteria: crit, Mode: Linear})
			seq.done()
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v, want %q", err, tc.errText)
				}
				if b == nil || len(b.Rows) != len(tc.steps) {
					t.Errorf("the failed search should keep its rows")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(b.T-tc.t) > 1e-9 || math.Abs(b.QTotal-tc.qtotal) > 1e-9 {
				t.Errorf("T %g at %g, want %g at %g", b.T, b.QTotal, tc.t, tc.qtotal)
			}
			if r := b.Rows[len(b.Rows)-1]; !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("last reason %q, want %q", r.Reason, tc.reason)
			}
		})
	}
}

func TestAlgorithm1LimitReached(t *testing.T) {
	for _, mode := range []SearchMode{Linear, Bisect} {
		t.Run(string(mode), func(t *testing.T) {
			b, err := Algorithm1(context.Background(), &model{cap: 1e9}, BaselineConfig{Lc: 100, MaxClients: 2, Criteria: crit, Mode: mode, HintClients: 2})
			if err != nil {
				t.Fatal(err)
			}
			if !b.LimitReached || b.T != 200 || b.Clients != 2 || b.FailQTotal != 0 {
				t.Errorf("got %+v; want the limit reached at T = 200 with 2 clients", b)
			}
		})
	}
}

func TestAlgorithm1ProberError(t *testing.T) {
	boom := errors.New("no route to host")
	n := 0
	pr := ProberFunc(func(_ context.Context, p Probe) (Measurement, error) {
		if n++; n == 3 {
			return Measurement{}, boom
		}
		return good(p.Total()), nil
	})
	b, err := Algorithm1(context.Background(), pr, BaselineConfig{Lc: 100, MaxClients: 2, Criteria: crit, Mode: Linear})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "algorithm 1: probe 3") {
		t.Errorf("error %v, want the prober's with context", err)
	}
	if b == nil || len(b.Rows) != 2 {
		t.Errorf("rows so far should be kept: %+v", b)
	}
}

func TestAlgorithm1Hint(t *testing.T) {
	m := &model{cap: 150}
	b, err := Algorithm1(context.Background(), m, BaselineConfig{Lc: 100, MaxClients: 8, Criteria: crit, Mode: Bisect, HintClients: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !m.probes[0].ClosedLoop() || m.probes[0].Clients != 4 || !b.Rows[0].Hint || b.Rows[0].Rung != -1 {
		t.Fatalf("first probe %+v, row %+v: want a 4-client closed-loop hint", m.probes[0], b.Rows[0])
	}
	// the first real probe is the highest step whose total is at most 80 % of the hint's 150 ops/s
	first := m.probes[1].Total()
	next, _ := BaselineLadder(100, b.Rows[1].Rung+1)
	if first > 120 || next.Total() <= 120 {
		t.Errorf("first probe at %g, next step %g: want the last step at or below 120", first, next.Total())
	}
}

// TestBisectMatchesLinear: when sustainability is monotone in the load,
// the bisect search finds the same T as the paper's linear one, never
// probes a step twice and needs O(log n) probes.
func TestBisectMatchesLinear(t *testing.T) {
	for _, cap := range []float64{10.5, 30, 99, 100, 101, 105, 180, 230, 333, 512.5, 777} {
		for _, hint := range []float64{0, 1, 50, 150, 1000, 1e6} {
			t.Run(fmt.Sprintf("cap %g hint %g", cap, hint), func(t *testing.T) {
				lin := &model{cap: cap}
				want, lerr := Algorithm1(context.Background(), lin, BaselineConfig{Lc: 100, MaxClients: 6, Criteria: crit, Mode: Linear})
				hinted := ProberFunc(func(ctx context.Context, p Probe) (Measurement, error) {
					if p.ClosedLoop() {
						return good(hint), nil
					}
					return (&model{cap: cap}).Measure(ctx, p)
				})
				seen := map[Probe]bool{}
				count := 0
				counting := ProberFunc(func(ctx context.Context, p Probe) (Measurement, error) {
					if !p.ClosedLoop() {
						if seen[p] {
							t.Errorf("step %+v probed twice", p)
						}
						seen[p] = true
						count++
					}
					return hinted(ctx, p)
				})
				got, berr := Algorithm1(context.Background(), counting, BaselineConfig{Lc: 100, MaxClients: 6, Criteria: crit, Mode: Bisect, HintClients: 3})
				if (lerr == nil) != (berr == nil) {
					t.Fatalf("linear error %v, bisect error %v", lerr, berr)
				}
				if lerr != nil {
					return
				}
				if got.T != want.T || got.QTotal != want.QTotal || got.FailQTotal != want.FailQTotal || got.LimitReached != want.LimitReached {
					t.Errorf("bisect T %g at %g (fail %g), linear T %g at %g (fail %g)", got.T, got.QTotal, got.FailQTotal, want.T, want.QTotal, want.FailQTotal)
				}
				if limit := 2*int(math.Ceil(math.Log2(6*26))) + 2; count > limit {
					t.Errorf("bisect ran %d probes (linear %d), want at most %d", count, len(lin.probes), limit)
				}
			})
		}
	}
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	pr := ProberFunc(func(ctx context.Context, p Probe) (Measurement, error) {
		if n++; n == 2 {
			cancel()
			return Measurement{}, ctx.Err()
		}
		return good(p.Total()), nil
	})
	_, err := Algorithm1(ctx, pr, BaselineConfig{Lc: 100, MaxClients: 2, Criteria: crit, Mode: Linear})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestBisectGallopsInLoad: a hint 2.5 times off, among the fine-grained
// first steps of the fourth and fifth clients (q = 10, 11, 12.1 ... on top
// of 300 or 400), costs a few gallops and a bisection of the ladder's
// 1–2 % steps; stepping 1, 2, 4 ... ladder steps instead needs about 15.
func TestBisectGallopsInLoad(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cap, hint float64
		maxProbes int
	}{
		{name: "hint 2.5× too high", cap: 370, hint: 925, maxProbes: 12},
		{name: "hint 2.5× too low", cap: 370, hint: 148, maxProbes: 13},
		{name: "good hint", cap: 370, hint: 420, maxProbes: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			pr := ProberFunc(func(ctx context.Context, p Probe) (Measurement, error) {
				if p.ClosedLoop() {
					return good(tc.hint), nil
				}
				n++
				return (&model{cap: tc.cap}).Measure(ctx, p)
			})
			b, err := Algorithm1(context.Background(), pr, BaselineConfig{Lc: 100, MaxClients: 16, Criteria: crit, Mode: Bisect, HintClients: 2})
			if err != nil {
				t.Fatal(err)
			}
			if b.T != 370 && math.Abs(b.QTotal-b.T) > 1e-9 {
				t.Errorf("T = %g at %g", b.T, b.QTotal)
			}
			if n > tc.maxProbes {
				t.Errorf("%d probes, want at most %d", n, tc.maxProbes)
			}
			t.Logf("%d probes, T = %.1f at Q_total %.1f", n, b.T, b.QTotal)
		})
	}
}
