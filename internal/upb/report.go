package upb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runfile"
	"github.com/faultbench/faultbench/internal/scenario"
)

// IsRunDir reports whether dir is a UPB run directory (made by Run): its
// summary.json is a UPB summary, or, before the first one was written (or
// when it is unreadable), its scenario.yaml has a upb: section.
func IsRunDir(dir string) bool {
	if b, err := runfile.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		var probe struct {
			Searches json.RawMessage `json:"searches"`
			LcOps    *float64        `json:"lc_ops"`
		}
		if err := json.Unmarshal(b, &probe); err == nil {
			return probe.Searches != nil || probe.LcOps != nil
		}
		// cut off while being written: decide by scenario.yaml
	}
	b, err := runfile.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "upb:") {
			return true
		}
	}
	return false
}

// WriteReport renders report.html of the UPB run directory dir (and, with
// pngs, its probe curves as plots/upb-*.png) from the files alone:
// summary.json, scenario.yaml, env.json and every probe's windows.csv.
// A run still going or killed halfway gets a partial report; what is
// missing is listed under Notes.
func WriteReport(ctx context.Context, dir string, pngs bool) (*report.Output, error) {
	u, err := ReportOf(dir)
	if err != nil {
		return nil, err
	}
	return report.RenderUPB(ctx, u, pngs)
}

// ReportOf reads the UPB run directory dir into the report's data.
func ReportOf(dir string) (*report.UPBReport, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("report: %s is not a directory", dir)
	}
	u := &report.UPBReport{Dir: dir}
	var sum *Summary
	switch b, err := runfile.ReadFile(filepath.Join(dir, "summary.json")); {
	case errors.Is(err, fs.ErrNotExist):
		u.Notes = append(u.Notes, "summary.json is missing: the run was stopped before its first result (L_c) was saved")
	case err != nil:
		return nil, fmt.Errorf("report: %w", err)
	default:
		sum = &Summary{}
		if err := json.Unmarshal(b, sum); err != nil {
			u.Notes = append(u.Notes, fmt.Sprintf("summary.json is unreadable (%v): was it cut off?", err))
			sum = nil
		}
	}
	// The configuration: from scenario.yaml (resolved, every default).
	var cfg *Config
	var sc *scenario.Scenario
	if b, err := runfile.ReadFile(filepath.Join(dir, "scenario.yaml")); err == nil {
		u.Scenario = string(b)
		if s, err := scenario.Parse(b, filepath.Join(dir, "scenario.yaml"), nil); err != nil {
			u.Notes = append(u.Notes, fmt.Sprintf("scenario.yaml: %v", err))
		} else if s.UPB != nil {
			sc = s
			if c, err := ConfigFrom(s); err == nil {
				cfg = &c
			} else {
				u.Notes = append(u.Notes, fmt.Sprintf("scenario.yaml: %v", err))
			}
		}
	} else {
		u.Notes = append(u.Notes, "scenario.yaml is missing")
	}
	if b, err := runfile.ReadFile(filepath.Join(dir, "env.json")); err == nil {
		var env rundir.Env
		if json.Unmarshal(b, &env) == nil {
			u.Env = &env
		}
	}
	if sum == nil && sc == nil {
		return nil, fmt.Errorf("report: %s is not a UPB run directory (neither a UPB summary.json nor a scenario.yaml with a upb: section)", dir)
	}

	u.KeepUp = 0.05
	if cfg != nil {
		u.KeepUp = cfg.Criteria.KeepUp
	}
	name := filepath.Base(filepath.Clean(dir))
	if sum != nil && sum.Scenario != "" {
		name = sum.Scenario
	} else if sc != nil {
		name = sc.Name
	}
	u.Title = "UPB: " + name
	u.Subtitle = subtitle(dir, sum, sc, cfg, u.Env)
	u.Params = params(sum, sc, cfg)
	if sum != nil {
		u.Cards = cards(sum)
		threads := sum.ClientThreads
		if sum.Lc != nil {
			s := lcSearch(dir, sum.Lc, threads, cfg)
			u.Lc = &s
		}
		for _, rec := range sum.Searches {
			u.Searches = append(u.Searches, baselineSearch(dir, rec, cfg))
		}
		if sum.Metrics != nil {
			for _, t := range MetricTables(sum.Metrics, sum.LcOps) {
				u.Metrics = append(u.Metrics, reportTable(t))
			}
		}
		for _, e := range sum.Errors {
			u.Notes = append(u.Notes, "error: "+e)
		}
		if !sum.Complete && len(sum.Errors) == 0 {
			u.Notes = append(u.Notes, "the run had not ended when this report was written (or it was killed): what follows is what it had measured")
		}
	}
	u.Files = files(dir)
	return u, nil
}

func reportTable(t TextTable) report.UPBTable {
	out := report.UPBTable{Title: t.Title, RowClass: t.RowClass, Notes: t.Notes}
	if len(t.Rows) > 0 {
		out.Head, out.Rows = t.Rows[0], t.Rows[1:]
	}
	return out
}

func subtitle(dir string, sum *Summary, sc *scenario.Scenario, cfg *Config, env *rundir.Env) string {
	parts := []string{dir}
	if sum != nil {
		parts = append(parts, sum.Target, "workload "+sum.Workload, fmt.Sprintf("K = 0..%d", sum.KMax))
	} else if sc != nil {
		parts = append(parts, sc.Target.Kind, "workload "+sc.Workload.YCSB)
	}
	if cfg != nil {
		parts = append(parts, fmt.Sprintf("probes of %v warm-up + %v steady window", cfg.Warmup, cfg.Measure), string(cfg.Search)+" search")
	}
	if sum != nil && !sum.Started.IsZero() {
		parts = append(parts, "started "+sum.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if env != nil && env.Faultbench != "" {
		parts = append(parts, "faultbench "+env.Faultbench)
	}
	return strings.Join(parts, " · ")
}

func cards(sum *Summary) []report.UPBCard {
	var out []report.UPBCard
	if sum.LcOps > 0 {
		out = append(out, report.UPBCard{Label: "L_c (ops/s per client)", Value: ops(sum.LcOps)})
	}
	for _, t := range sum.T {
		out = append(out, report.UPBCard{Label: fmt.Sprintf("T(%d,%d) (ops/s)", t.K, t.F), Value: ops(t.T)})
	}
	if m := sum.Metrics; m != nil {
		if m.DT != nil {
			out = append(out, report.UPBCard{Label: "D_T: degradation with fault tolerance", Value: pctp(m.DT, 2)})
		}
		if m.DF != nil {
			out = append(out, report.UPBCard{Label: "D_F: degradation during failures", Value: pctp(m.DF, 2)})
		}
	}
	n := 0
	if sum.Lc != nil {
		n += len(sum.Lc.Rows)
	}
	for _, s := range sum.Searches {
		if s.Baseline != nil {
			n += len(s.Baseline.Rows)
		}
	}
	out = append(out, report.UPBCard{Label: "probes run", Value: strconv.Itoa(n)})
	if sum.WallMs > 0 {
		out = append(out, report.UPBCard{Label: "wall time", Value: time.Duration(sum.WallMs * float64(time.Millisecond)).Round(time.Second).String()})
	}
	if !sum.Complete {
		v := "incomplete"
		if len(sum.Errors) > 0 {
			v = fmt.Sprintf("%d errors", len(sum.Errors))
		}
		out = append(out, report.UPBCard{Label: "run", Value: v, Bad: true})
	}
	return out
}

func params(sum *Summary, sc *scenario.Scenario, cfg *Config) [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	if sum != nil {
		add("target", sum.Target)
		add("workload", sum.Workload)
	} else if sc != nil {
		add("target", sc.Target.Kind)
		add("workload", sc.Workload.YCSB)
	}
	if sc != nil {
		var props []string
		for k, v := range sc.Workload.Properties {
			props = append(props, k+"="+v)
		}
		sort.Strings(props)
		if len(props) > 0 {
			add("workload properties", strings.Join(props, ", "))
		}
	}
	if cfg == nil {
		if sum != nil {
			add("kmax", strconv.Itoa(sum.KMax))
			add("client threads", strconv.Itoa(sum.ClientThreads))
		}
		return out
	}
	c := *cfg
	add("K", fmt.Sprintf("0..%d", c.KMax))
	if c.SteadyRule {
		add("probe timing", fmt.Sprintf("warm-up %v; steady window %v (samples of %v within ±%s %% of their mean), at most %v longer", c.Warmup, c.Measure, c.SteadySample, fnum(c.SteadyTol*100), c.SteadyTimeout))
	} else {
		add("probe timing", fmt.Sprintf("warm-up %v; measured window %v, the first after warm-up (samples of %v within ±%s %% recorded, not judged)", c.Warmup, c.Measure, c.SteadySample, fnum(c.SteadyTol*100)))
	}
	add("window", c.Window.String())
	steady := ""
	if c.Criteria.RequireSteady {
		steady = "steady (upb.steady_rule), "
	}
	add("sustained when", fmt.Sprintf("achieved ≥ %s %% of offered, %sand φ: ≥ %s %% of operations within %v", fnum((1-c.Criteria.KeepUp)*100), steady, fnum(c.Criteria.PhiFraction*100), c.Criteria.PhiLatency))
	if c.Lc > 0 {
		add("L_c", fmt.Sprintf("%s ops/s (given)", ops(c.Lc)))
	} else {
		add("L_c calibration", fmt.Sprintf("from Q = %s ops/s, +10 %% while sustained; L_c = 0.9 · the first Q not sustained", ops(c.InitialQ)))
	}
	add("clients", fmt.Sprintf("%d threads each, at most %d", c.ClientThreads, c.MaxClients))
	s := string(c.Search)
	if c.Search == Bisect {
		s += fmt.Sprintf(" (closed-loop hint of %v)", c.Hint)
	}
	add("search", s)
	add("failures", fmt.Sprintf("kill -9 of the %s, then %v settle", c.Victim, c.Settle))
	add("load phase", fmt.Sprintf("%d threads", c.LoadThreads))
	add("operation timeout", c.OpTimeout.String())
	return out
}

func fnum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func lcSearch(dir string, lc *LcResult, threads int, cfg *Config) report.UPBSearch {
	s := report.UPBSearch{ID: "lc", Title: "L_c: the workload limit per client (Table IV)", Name: "L_c calibration", XLabel: "Q",
		Table: reportTable(LcTable(lc, threads))}
	if lc.Lc > 0 {
		s.TLabel = fmt.Sprintf("last Q sustained: %s ops/s; L_c = %s ops/s", ops(lc.LastQ), ops(lc.Lc))
	}
	for _, r := range SortedProbes(lc.Rows) {
		s.Probes = append(s.Probes, probeOf(dir, r, !r.Hint && lc.Lc > 0 && r.Q == lc.LastQ, false, cfg))
	}
	return s
}

func baselineSearch(dir string, rec *SearchRecord, cfg *Config) report.UPBSearch {
	t := BaselineTable(rec)
	title := fmt.Sprintf("T(%d,%d): K=%d, F=%d (%s", rec.K, rec.F, rec.K, rec.F, describe(rec))
	if len(rec.Failed) > 0 {
		title += "; failed: " + strings.Join(rec.Failed, ", ")
	}
	s := report.UPBSearch{ID: fmt.Sprintf("k%d-f%d", rec.K, rec.F), Title: title + ")", XLabel: "Q_total",
		Table: reportTable(t), Name: fmt.Sprintf("T(%d,%d) search", rec.K, rec.F)}
	if b := rec.Baseline; b != nil && rec.Error == "" {
		s.TLabel = fmt.Sprintf("T(%d,%d) = %s ops/s", rec.K, rec.F, ops(b.T))
	}
	s.Table.Title = t.Title
	if rec.Error != "" {
		s.Error = fmt.Sprintf("no T(%d,%d): %s", rec.K, rec.F, rec.Error)
	}
	if b := rec.Baseline; b != nil {
		for _, r := range SortedProbes(b.Rows) {
			s.Probes = append(s.Probes, probeOf(dir, r, b.IsT(r), true, cfg))
		}
	}
	return s
}

// probeOf is one probe of a search with its run's throughput over time.
func probeOf(dir string, r Row, isT, withClients bool, cfg *Config) report.UPBProbe {
	p := report.UPBProbe{Dir: r.Dir, Hint: r.Hint, Offered: r.Q, Achieved: r.TPS, Sustained: r.Sustained, T: isT,
		From: r.FromMs / 1000, To: r.ToMs / 1000}
	who := plural(r.Clients, "client")
	switch {
	case r.Hint:
		p.Name = fmt.Sprintf("step %d · %s · closed loop", r.Step, who)
		p.Verdict = fmt.Sprintf("hint: %s ops/s closed loop", ops(r.TPS))
	case withClients:
		p.Name = fmt.Sprintf("step %d · %s · %s ops/s", r.Step, who, ops(r.Q))
	default:
		p.Name = fmt.Sprintf("step %d · Q = %s ops/s", r.Step, ops(r.Q))
	}
	if !r.Hint {
		p.Verdict = fmt.Sprintf("%s ops/s achieved: sustained", ops(r.TPS))
		if !r.Sustained {
			p.Verdict = fmt.Sprintf("%s ops/s achieved: not sustained (%s)", ops(r.TPS), r.Reason)
		}
		if isT {
			p.Verdict += " · the result"
		}
	}
	if r.Dir == "" {
		p.Missing = "no run directory recorded"
		return p
	}
	path := filepath.Join(dir, filepath.FromSlash(r.Dir), "windows.csv")
	b, err := runfile.ReadFile(path)
	if err != nil {
		p.Missing = "windows.csv is missing"
		return p
	}
	rows := parseWindowsCSV(b)
	var window time.Duration
	for _, w := range rows {
		if w.Op != measure.AllOps || w.End <= w.Start {
			continue
		}
		if window == 0 {
			window = w.End - w.Start
		}
		if w.Phase != measure.PhaseRun && p.WarmupEnd < w.End.Seconds() {
			p.WarmupEnd = w.End.Seconds()
		}
		p.Times = append(p.Times, w.Start.Seconds())
		p.TPS = append(p.TPS, w.Throughput())
	}
	if cfg != nil {
		window = cfg.Window
	}
	p.Window = window.Seconds()
	if p.To <= p.From && cfg != nil && !r.Hint {
		// a run directory from before from_ms/to_ms were recorded
		st := Steadiness{Sample: cfg.SteadySample, Window: cfg.Window, Tol: cfg.SteadyTol, Measure: cfg.Measure}
		if from, to, _, _, found := st.Find(rows); found {
			p.From, p.To = from.Seconds(), to.Seconds()
		}
	}
	return p
}

// files lists the run directory's top-level files, for links.
func files(dir string) []string {
	var out []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// DirKind is the UPB run directory's kind for report.RenderDir and
// report.Comparability: `faultbench report` draws it with WriteReport
// (probe curves as PNGs too), `compare` calls it a UPB run.
func DirKind() report.DirKind {
	return report.DirKind{Name: "UPB run", Is: IsRunDir, Render: func(ctx context.Context, dir string) (*report.Output, error) {
		return WriteReport(ctx, dir, true)
	}}
}
