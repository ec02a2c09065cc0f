package upb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// describe says in words what cluster a search ran on: the description
// written at the time, or (summaries written before it was) the target's
// own words for its size.
func describe(rec *SearchRecord) string {
	if rec.Cluster != "" {
		return rec.Cluster
	}
	if t, err := targets.Builtin().Get(rec.Kind); err == nil {
		return t.Describe(rec.Nodes, rec.Replicas)
	}
	return fmt.Sprintf("%d nodes", rec.Nodes)
}

// Spec is one `faultbench upb SCENARIO` invocation: the scenario's
// fields (its upb section set); Status, Quiet, MetricsAddr and Beside are
// not used.
type Spec = experiment.ScenarioSpec

// SearchRecord is one T(K,F) search in summary.json.
type SearchRecord struct {
	K        int       `json:"k"`
	F        int       `json:"f"`
	Kind     string    `json:"target"`
	Nodes    int       `json:"nodes"`                  // etcd members, redis-cluster masters
	Replicas int       `json:"replicas"`               // replicas per master
	Cluster  string    `json:"cluster,omitempty"`      // the cluster in words, e.g. "3 members"
	Failed   []string  `json:"failed_nodes,omitempty"` // nodes killed before the search
	Baseline *Baseline `json:"baseline,omitempty"`
	Error    string    `json:"error,omitempty"`
	WallMs   float64   `json:"wall_ms"`
}

// Summary is summary.json of a UPB run.
type Summary struct {
	Scenario      string          `json:"scenario"`
	Target        string          `json:"target"`
	Workload      string          `json:"workload"`
	KMax          int             `json:"kmax"`
	ClientThreads int             `json:"client_threads"`
	MaxClients    int             `json:"max_clients"`
	Search        string          `json:"search_mode"`
	MeasureMs     float64         `json:"measure_ms"`
	WarmupMs      float64         `json:"warmup_ms"`
	Started       time.Time       `json:"started"`
	WallMs        float64         `json:"wall_ms"`
	Lc            *LcResult       `json:"lc_calibration,omitempty"`
	LcOps         float64         `json:"lc_ops"`
	Searches      []*SearchRecord `json:"searches"`
	T             []TValue        `json:"t"`
	Metrics       *Metrics        `json:"metrics,omitempty"`
	Complete      bool            `json:"complete"`
	Errors        []string        `json:"errors,omitempty"`
}

// Outcome is what Run leaves besides its files.
type Outcome struct {
	Dir     string
	Summary *Summary
}

// Run executes the whole UPB methodology on clusters it launches:
// for K = 0..KMax a fresh cluster realising K (see Size) is started and
// loaded; at K = 0 the per-client limit L_c is calibrated (unless given) and
// T(0,0) found; at K ≥ 1, T(K,0), then for F = 1..K one more node is killed,
// the cluster is waited for, and T(K,F) is found. Each T comes from
// Algorithm1 with an ExecProber. summary.json and results.csv are rewritten
// after every T, so an interrupted run leaves what it measured. Every
// cluster it started is stopped before it returns.
func Run(ctx context.Context, s Spec) (*Outcome, error) {
	sc := s.Scenario
	if sc == nil || sc.UPB == nil {
		return nil, fmt.Errorf("%s: no upb section (see docs/upb.md)", s.File)
	}
	s.FillDefaults()
	tgt, err := s.Targets.Get(sc.Target.Kind)
	if err != nil {
		return nil, fmt.Errorf("%s: field target.kind: %w", s.File, err)
	}
	if tgt.Launcher == nil {
		return nil, fmt.Errorf("%s: faultbench cannot start %s clusters, and UPB needs one cluster per K", s.File, tgt.Kind)
	}
	if sc.Target.Replicas != nil {
		return nil, fmt.Errorf("%s: field target.replicas: upb sets the replication itself from K; remove it", s.File)
	}
	if sc.UPB.Victim == "" {
		sc.UPB.Victim = tgt.DefaultVictim
	}
	sc.Resolve(sc.UPB.Victim)
	cfg, err := ConfigFrom(sc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	for k := 0; k <= cfg.KMax; k++ {
		if _, _, err := tgt.ForK(k, sc.Target.Nodes); err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
	}
	base, err := s.BaseProperties(tgt)
	if err != nil {
		return nil, err
	}

	name := "upb-" + strings.TrimPrefix(sc.Name, "upb-")
	started := time.Now()
	resolved, err := sc.Marshal()
	if err != nil {
		return nil, err
	}
	env := rundir.HostEnv(s.Version, s.Commit)
	env.Target = tgt.Kind
	rd, err := rundir.Open(s.RunsDir, name, started, env)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	dir, evs := rd.Dir, rd.Events
	out := &Outcome{Dir: dir}
	if err := rundir.WriteFile(rd.Path("scenario.yaml"), resolved); err != nil {
		return out, err
	}
	lenv, err := launcher.NewEnv()
	if err != nil {
		return out, err
	}

	sum := &Summary{
		Scenario: sc.Name, Target: tgt.Kind, Workload: sc.Workload.YCSB, KMax: cfg.KMax,
		ClientThreads: cfg.ClientThreads, MaxClients: cfg.MaxClients, Search: string(cfg.Search),
		MeasureMs: ms(cfg.Measure), WarmupMs: ms(cfg.Warmup), Started: started, LcOps: cfg.Lc,
	}
	out.Summary = sum
	r := &run{s: s, cfg: cfg, tgt: tgt, base: base, dir: dir, evs: evs, sum: sum,
		m: clusterctl.New(s.StateDir, lenv, s.Targets), env: lenv, masters: sc.Target.Nodes}
	fmt.Fprintf(s.Err, "UPB on %s: K = 0..%d, workload %s, clients of %d threads, probes of %v warm-up + %v steady window (%s search); run directory %s\n",
		tgt.Kind, cfg.KMax, sc.Workload.YCSB, cfg.ClientThreads, cfg.Warmup, cfg.Measure, cfg.Search, dir)

	var runErr error
	for k := 0; k <= cfg.KMax && ctx.Err() == nil; k++ {
		if err := r.stepK(ctx, k); err != nil {
			sum.Errors = append(sum.Errors, err.Error())
			fmt.Fprintf(s.Err, "error: %v\n", err)
			if k == 0 && sum.LcOps == 0 {
				runErr = err // without L_c nothing else can be measured
				break
			}
		}
	}
	if ctx.Err() != nil {
		runErr = ctx.Err()
		sum.Errors = append(sum.Errors, "interrupted")
	}
	sum.Complete = runErr == nil && len(sum.Errors) == 0
	if err := r.save(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil && len(sum.Errors) > 0 {
		runErr = fmt.Errorf("the UPB run is incomplete (%d errors, listed above and in summary.json)", len(sum.Errors))
	}

	var tb bytes.Buffer
	fmt.Fprintln(&tb)
	if sum.Lc != nil {
		WriteLcTable(&tb, sum.Lc, cfg.ClientThreads)
		fmt.Fprintln(&tb)
	}
	for _, rec := range sum.Searches {
		WriteBaselineTable(&tb, rec)
		fmt.Fprintln(&tb)
	}
	if sum.Metrics != nil {
		WriteMetricTables(&tb, sum.Metrics, sum.LcOps)
	}
	fmt.Fprintf(&tb, "\nwall time %s; run directory %s\n", time.Since(started).Round(time.Second), dir)
	if err := rundir.WriteFile(filepath.Join(dir, "tables.txt"), tb.Bytes()); err != nil && runErr == nil {
		runErr = err
	}
	_, _ = s.Out.Write(tb.Bytes())
	for _, e := range sum.Errors {
		fmt.Fprintf(s.Out, "error: %s\n", e)
	}
	// the report with its PNGs; a report that cannot be drawn is a warning
	if o, err := WriteReport(context.WithoutCancel(ctx), dir, true); err != nil {
		fmt.Fprintf(s.Err, "warning: report not written: %v\n", err)
	} else {
		fmt.Fprintf(s.Out, "report: %s\n", o.HTML)
	}
	return out, runErr
}

// run is the state of one UPB run.
type run struct {
	s       Spec
	cfg     Config
	tgt     *targets.Target
	base    *properties.Properties
	dir     string
	evs     *event.Log
	sum     *Summary
	m       *clusterctl.Manager
	env     *launcher.Env
	masters int
	// reportWarned: a failed intermediate report was reported once
	reportWarned bool
}

// save rewrites results.csv and summary.json from what was measured so far.
func (r *run) save() error {
	r.sum.T = r.sum.T[:0]
	for _, rec := range r.sum.Searches {
		if rec.Baseline != nil && rec.Error == "" {
			r.sum.T = append(r.sum.T, TValue{K: rec.K, F: rec.F, T: rec.Baseline.T})
		}
	}
	if len(r.sum.T) > 0 {
		m, err := Compute(r.sum.T)
		if err != nil {
			return err
		}
		r.sum.Metrics = m
	}
	r.sum.WallMs = ms(time.Since(r.sum.Started))
	var b bytes.Buffer
	if err := WriteCSV(&b, r.sum.T); err != nil {
		return err
	}
	if err := rundir.WriteFile(filepath.Join(r.dir, "results.csv"), b.Bytes()); err != nil {
		return err
	}
	if err := rundir.WriteJSON(filepath.Join(r.dir, "summary.json"), r.sum); err != nil {
		return err
	}
	// report.html so far (without PNGs: Run draws those at its end), so a
	// run that crashes still has one; not worth failing the run for
	if _, err := WriteReport(context.Background(), r.dir, false); err != nil && !r.reportWarned {
		r.reportWarned = true
		fmt.Fprintf(r.s.Err, "warning: report not written: %v\n", err)
	}
	return nil
}

// stepK runs everything of one K on a fresh cluster.
func (r *run) stepK(ctx context.Context, k int) (err error) {
	nodes, replicas, err := r.tgt.ForK(k, r.masters)
	if err != nil {
		return err
	}
	kdir := filepath.Join(r.dir, fmt.Sprintf("k%d", k))
	fmt.Fprintf(r.s.Err, "K=%d: starting a %s cluster of %s ...\n", k, r.tgt.Kind, r.tgt.Describe(nodes, replicas))
	sc := r.s.Scenario
	uctx, cancel := context.WithTimeout(ctx, r.tgt.StartTimeout())
	c, err := r.m.Up(uctx, r.tgt.Kind, launcher.Spec{
		Name: fmt.Sprintf("upb-%s-k%d", filepath.Base(r.dir), k), Nodes: nodes, Replicas: replicas,
		Dir: filepath.Join(kdir, "cluster"), KeepData: sc.Target.KeepData, Options: sc.Target.Options,
	})
	cancel()
	if err != nil {
		return fmt.Errorf("cluster for K=%d: %w", k, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if derr := r.m.Down(dctx, c.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the cluster of K=%d: %w", k, derr))
		}
		r.evs.Emit(event.Note, "", fmt.Sprintf("K=%d: cluster stopped", k))
	}()
	r.evs.Emit(event.ClusterHealthy, strings.Join(c.NodeNames(), ","), fmt.Sprintf("K=%d: cluster up (%s)", k, r.tgt.Describe(nodes, replicas)))
	props := r.base.Clone()
	r.tgt.ConnectTo(props, c)

	// Load.
	lp := props.Clone()
	lp.Set("threadcount", strconv.Itoa(r.cfg.LoadThreads))
	fmt.Fprintf(r.s.Err, "K=%d: loading records with %d threads ...\n", k, r.cfg.LoadThreads)
	if err := r.loadPhase(ctx, lp, filepath.Join(kdir, "load")); err != nil {
		return fmt.Errorf("load phase of K=%d: %w", k, err)
	}

	// L_c, once, on the K=0 cluster (UPB §4.2.1: a parameter of the environment).
	if k == 0 && r.sum.LcOps == 0 {
		fmt.Fprintf(r.s.Err, "L_c: one client of %d threads from Q = %.0f ops/s, +10 %% while it keeps up ...\n", r.cfg.ClientThreads, r.cfg.InitialQ)
		pr := r.prober(props, "lc")
		lc, err := CalibrateLc(ctx, pr, LcConfig{InitialQ: r.cfg.InitialQ, Criteria: r.cfg.Criteria, Mode: r.cfg.Search, Hint: true})
		r.sum.Lc = lc
		if err != nil {
			_ = r.save()
			return err
		}
		r.sum.LcOps = lc.Lc
		fmt.Fprintf(r.s.Err, "L_c = 0.9 × %.0f = %.0f ops/s\n", lc.FailQ, lc.Lc)
		if err := r.save(); err != nil {
			return err
		}
	}

	if err := r.search(ctx, props, k, 0, nodes, replicas, nil); err != nil {
		return err
	}
	if k == 0 {
		return nil
	}
	ft, err := r.m.FaultCluster(c, r.evs, 0)
	if err != nil {
		return err
	}
	reg := fault.NewRegistry()
	var failed []string
	for f := 1; f <= k; f++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		victims, err := fault.Apply(fctx, ft, reg, fault.ActionKill, r.cfg.Victim)
		if err == nil {
			err = ft.WaitHealthy(fctx, fmt.Sprintf("after killing %s (K=%d, F=%d)", strings.Join(victims, ","), k, f))
		}
		cancel()
		if err != nil {
			return fmt.Errorf("failing node %d of K=%d (%s %s): %w", f, k, fault.ActionKill, r.cfg.Victim, err)
		}
		failed = append(failed, victims...)
		fmt.Fprintf(r.s.Err, "K=%d, F=%d: killed %s (%s); cluster healthy; settling %v ...\n", k, f, strings.Join(victims, ","), r.cfg.Victim, r.cfg.Settle)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.Settle):
		}
		if err := r.search(ctx, props, k, f, nodes, replicas, append([]string(nil), failed...)); err != nil {
			return err
		}
	}
	return nil
}

// search runs Algorithm 1 for (k, f) and records it.
func (r *run) search(ctx context.Context, props *properties.Properties, k, f, nodes, replicas int, failed []string) error {
	fmt.Fprintf(r.s.Err, "T(%d,%d): Algorithm 1 with L_c = %.0f ops/s, up to %d clients ...\n", k, f, r.sum.LcOps, r.cfg.MaxClients)
	start := time.Now()
	pr := r.prober(props, fmt.Sprintf("k%d-f%d", k, f))
	b, err := Algorithm1(ctx, pr, BaselineConfig{
		Lc: r.sum.LcOps, MaxClients: r.cfg.MaxClients, Criteria: r.cfg.Criteria, Mode: r.cfg.Search, HintClients: r.cfg.HintClients,
	})
	rec := &SearchRecord{K: k, F: f, Kind: r.tgt.Kind, Nodes: nodes, Replicas: replicas, Cluster: r.tgt.Describe(nodes, replicas), Failed: failed, Baseline: b, WallMs: ms(time.Since(start))}
	if err != nil {
		rec.Error = err.Error()
	} else {
		fmt.Fprintf(r.s.Err, "T(%d,%d) = %.0f ops/s (%d probes, %s)\n", k, f, b.T, len(b.Rows), time.Since(start).Round(time.Second))
	}
	r.sum.Searches = append(r.sum.Searches, rec)
	if serr := r.save(); serr != nil {
		return serr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		// a T that cannot be found is recorded; the run goes on with the next
		r.sum.Errors = append(r.sum.Errors, fmt.Sprintf("T(%d,%d): %v", k, f, err))
	}
	return nil
}

func (r *run) prober(props *properties.Properties, sub string) *ExecProber {
	return &ExecProber{Target: r.tgt, Props: props, StateDir: r.s.StateDir, Root: r.dir,
		Dir: filepath.Join(r.dir, sub), Config: r.cfg, Log: r.s.Err}
}

// loadPhase inserts the records into dir.
func (r *run) loadPhase(ctx context.Context, p *properties.Properties, dir string) error {
	_, err := experiment.Phase(ctx, r.tgt, runner.Load, p, r.s.StateDir, dir, experiment.Hooks{})
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
