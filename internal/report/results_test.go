package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runfile"
)

// resultsData is where the results pages (docs/results/*.md) keep the
// small inputs of the runs they quote: data/<page>/<run>/ with
// summary.json, windows.csv, events.jsonl (and dropped.csv, scenario.yaml
// and, where small enough, the intended-latency hist/*.hlog of the
// operations used).
const resultsData = "../../docs/results/data"

// TestResultsPagesInputs re-analyzes every complete committed input set
// of the results pages with today's analyzer and checks the figures the
// pages publish (docs/results/*.md, read from their tables: pageFigures)
// against the re-analysis, rounded as the page rounds them. A change of
// the analyzer that moves a published figure fails here, and the page
// must be re-measured or re-written; a figure whose definition was changed
// on purpose carries the reason and today's value (changed, now) until the
// page is re-measured. An input set that cannot be re-analyzed (no
// availability report, or without dropped.csv or scenario.yaml) is
// skipped with the reason.
func TestResultsPagesInputs(t *testing.T) {
	sums, err := runfile.Glob(filepath.Join(resultsData, "*", "*", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) == 0 {
		t.Fatalf("no input sets under %s", resultsData)
	}
	figs := pageFigures()
	checked := map[string]bool{}
	for _, sumPath := range sums {
		dir := filepath.Dir(sumPath)
		name, _ := filepath.Rel(resultsData, dir)
		t.Run(name, func(t *testing.T) {
			var sum rundir.Summary
			b, err := runfile.ReadFile(sumPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatalf("summary.json: %v", err)
			}
			if sum.Analysis == nil {
				t.Skip("no availability report in summary.json (a sweep, UPB or distributed load summary): only checked to decode")
			}
			if missing := incomplete(dir); len(missing) > 0 {
				t.Skipf("incomplete input set, cannot be re-analyzed to the published figures: no %s", strings.Join(missing, ", "))
			}
			rows, err := measure.ReadWindows(filepath.Join(dir, measure.WindowsFile))
			if err != nil {
				t.Fatal(err)
			}
			evs, err := event.ReadFile(filepath.Join(dir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			params := scenarioParams(t, dir)
			params.OfferedOps = sum.TargetOps
			if hl, err := measure.ReadHistLogs(dir); err == nil {
				params.Hists = hl
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			got, err := analyze.Analyze(rows, evs, params)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range figs {
				if f.set != name {
					continue
				}
				n++
				checked[f.key()] = true
				f.check(t, got)
			}
			if n == 0 {
				t.Logf("no published figure of this set is listed in pageFigures")
			}
		})
	}
	for _, f := range figs {
		if !checked[f.key()] {
			t.Errorf("%s: input set %s was not re-analyzed (missing or incomplete)", f.key(), f.set)
		}
	}
}

// pageFigure is one number a results page publishes: the page, the table cell
// (the row whose first cell starts with row, the column whose head starts
// with col; part picks one of the " / "-separated values of the cell), the
// input set under data/ it comes from and the value of the re-analysis it
// is (get, times scale to the page's unit). A page prints -1 ("never", "not
// computable") as words: such a cell holds no number.
type pageFigure struct {
	page, row, col string
	part           int
	set            string
	get            func(*analyze.Report) float64
	scale          float64 // 0 = 1
	// judged, when set, says why the re-analysis does not judge the
	// figure ("" when it does): a page printing a number for it is a
	// changed definition.
	judged func(*analyze.Report) string
	// changed says why today's definition gives another value than the
	// page (a deliberate change of a metric's definition, measured again
	// later on a quiet machine); now is today's value, in the page's unit.
	changed string
	now     float64
}

func (f pageFigure) key() string {
	return fmt.Sprintf("%s [%s | %s #%d]", f.page, f.row, f.col, f.part)
}

// numRE finds a number as the pages print it: thousands separators, an
// optional fraction and sign.
var numRE = regexp.MustCompile(`[-−+]?[0-9][0-9,]*(\.[0-9]+)?`)

// check compares the page's cell with the re-analysis, at the page's
// precision (as many decimals as the cell shows).
func (f pageFigure) check(t *testing.T, rep *analyze.Report) {
	t.Helper()
	cell, err := pageCell(filepath.Join("../../docs/results", f.page), f.row, f.col)
	if err != nil {
		t.Errorf("%s: %v", f.key(), err)
		return
	}
	parts := strings.Split(cell, " / ")
	if f.part >= len(parts) {
		t.Errorf("%s: cell %q has no part %d", f.key(), cell, f.part)
		return
	}
	text := strings.ReplaceAll(parts[f.part], "*", "")
	scale := f.scale
	if scale == 0 {
		scale = 1
	}
	v := f.get(rep)
	if v != -1 {
		v *= scale
	}
	if f.judged != nil && f.changed == "" {
		if why := f.judged(rep); why != "" {
			t.Errorf("%s: the page says %q, the analyzer today: not judged (%s)", f.key(), strings.TrimSpace(text), why)
			return
		}
	}
	if f.changed != "" {
		if !near(v, f.now) {
			t.Errorf("%s: today's definition gives %v, the test expects %v (%s)", f.key(), v, f.now, f.changed)
		}
		t.Logf("%s: page %q, today %v: %s", f.key(), strings.TrimSpace(text), v, f.changed)
		return
	}
	m := numRE.FindString(text)
	if v == -1 {
		if m != "" && !strings.HasPrefix(strings.TrimSpace(text), "n/a") {
			t.Errorf("%s: the page says %q, the analyzer today: not reached / not computable (-1)", f.key(), text)
		}
		return
	}
	if m == "" {
		t.Errorf("%s: the page says %q, the analyzer today %v", f.key(), text, v)
		return
	}
	m = strings.ReplaceAll(strings.ReplaceAll(m, ",", ""), "−", "-")
	page, err := strconv.ParseFloat(m, 64)
	if err != nil {
		t.Errorf("%s: %q: %v", f.key(), m, err)
		return
	}
	dec := 0
	if k := strings.IndexByte(m, '.'); k >= 0 {
		dec = len(m) - k - 1
	}
	unit := math.Pow(10, -float64(dec))
	if math.Abs(v-page) > unit/2+1e-9*math.Max(1, math.Abs(v)) {
		t.Errorf("%s: the page says %s, the analyzer today %v", f.key(), m, v)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// pageCell returns the cell of the first markdown table of page that has
// a column whose head starts with col and a row whose first cell starts
// with row (markup ** and ` removed, spaces trimmed).
func pageCell(page, row, col string) (string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return "", err
	}
	clean := func(s string) string {
		return strings.TrimSpace(strings.NewReplacer("**", "", "`", "", "&nbsp;", "").Replace(s))
	}
	cells := func(line string) []string {
		line = strings.TrimSpace(line)
		line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
		out := strings.Split(line, "|")
		for i := range out {
			out[i] = clean(out[i])
		}
		return out
	}
	var table [][]string
	flush := func() (string, bool) {
		defer func() { table = nil }()
		if len(table) < 2 {
			return "", false
		}
		c := -1
		for i, h := range table[0] {
			if strings.HasPrefix(h, col) {
				c = i
				break
			}
		}
		if c < 0 {
			return "", false
		}
		for _, r := range table[1:] {
			if len(r) > c && (strings.HasPrefix(r[0], row) || strings.HasSuffix(row, "$") && r[0] == strings.TrimSuffix(row, "$")) {
				return r[c], true
			}
		}
		return "", false
	}
	for _, line := range append(strings.Split(string(b), "\n"), "") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			table = append(table, cells(line))
			continue
		}
		if v, ok := flush(); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no table with a column %q and a row %q", col, row)
}

// incomplete lists what an input set lacks for a re-analysis beside
// summary.json, windows.csv and events.jsonl: dropped.csv (the dropped
// operations) and scenario.yaml (the analysis parameters).
func incomplete(dir string) []string {
	var missing []string
	for _, f := range []string{"dropped.csv", "scenario.yaml"} {
		if !runfile.Exists(filepath.Join(dir, f)) {
			missing = append(missing, f)
		}
	}
	return missing
}

// scenarioParams returns the analysis parameters of the run's scenario.yaml
// (its analysis: section over the defaults), or the defaults without one.
func scenarioParams(t *testing.T, dir string) analyze.Params {
	t.Helper()
	p := analyze.DefaultParams()
	b, err := runfile.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return p
	}
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Analysis struct {
			DownFraction    float64 `yaml:"down_fraction"`
			RecoverTol      float64 `yaml:"recover_tolerance"`
			Hold            string  `yaml:"hold"`
			SteadyTolerance float64 `yaml:"steady_tolerance"`
			SteadySpan      string  `yaml:"steady_span"`
			LatencyOp       string  `yaml:"latency_op"`
		} `yaml:"analysis"`
	}
	if err := yaml.Unmarshal(b, &sc); err != nil {
		t.Fatalf("scenario.yaml: %v", err)
	}
	a := sc.Analysis
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&p.DownFrac, a.DownFraction)
	set(&p.RecoverTol, a.RecoverTol)
	set(&p.SteadyTol, a.SteadyTolerance)
	for _, d := range []struct {
		dst *time.Duration
		s   string
	}{{&p.Hold, a.Hold}, {&p.SteadySpan, a.SteadySpan}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			t.Fatalf("scenario.yaml: %v", err)
		}
		*d.dst = v
	}
	if a.LatencyOp != "" {
		p.LatencyOp = a.LatencyOp
	}
	return p
}

// Getters of the published figures.
func faultOf(i int, get func(analyze.FaultMetrics) float64) func(*analyze.Report) float64 {
	return func(r *analyze.Report) float64 {
		if i >= len(r.Faults) {
			return math.NaN()
		}
		return get(r.Faults[i])
	}
}

func scalingOf(i int, get func(analyze.ScalingMetrics) float64) func(*analyze.Report) float64 {
	return func(r *analyze.Report) float64 {
		if i >= len(r.Elasticity) {
			return math.NaN()
		}
		return get(r.Elasticity[i])
	}
}

// judgedOf says why fault i's figure key is not judged ("" when it is).
func judgedOf(i int, key string) func(*analyze.Report) string {
	return func(r *analyze.Report) string {
		if i >= len(r.Faults) {
			return ""
		}
		return r.Faults[i].NotJudged[key]
	}
}

var (
	downtime        = func(f analyze.FaultMetrics) float64 { return f.DowntimeMs }
	longestGap      = func(f analyze.FaultMetrics) float64 { return f.LongestGapMs }
	failover        = func(f analyze.FaultMetrics) float64 { return f.FailoverMs }
	recovery        = func(f analyze.FaultMetrics) float64 { return f.RecoveryMs }
	restoreDowntime = func(f analyze.FaultMetrics) float64 { return f.RestoreDowntimeMs }
	stabilise       = func(f analyze.FaultMetrics) float64 { return f.StabiliseMs }
	failed          = func(f analyze.FaultMetrics) float64 { return float64(f.FailedOps) }
	aborted         = func(f analyze.FaultMetrics) float64 { return float64(f.AbortedOps) }
	peak            = func(f analyze.FaultMetrics) float64 { return f.PeakLatencyMs }
	reconfiguration = func(f analyze.FaultMetrics) float64 { return f.ReconfigurationMs }
	nodeDown        = func(f analyze.FaultMetrics) float64 { return f.NodeDownOps }
	beforeOps       = func(f analyze.FaultMetrics) float64 { return f.Before.Ops }
	duringOps       = func(f analyze.FaultMetrics) float64 { return f.During.Ops }
	afterOps        = func(f analyze.FaultMetrics) float64 { return f.After.Ops }
	baseline        = func(r *analyze.Report) float64 { return r.BaselineOps }
	final           = func(r *analyze.Report) float64 { return r.FinalOps }
	dropped         = func(r *analyze.Report) float64 { return float64(r.DroppedOps) }
)

// pageFigures lists the figures of the results pages that come from the
// availability analysis of a committed input set.
func pageFigures() []pageFigure {
	var out []pageFigure
	add := func(f pageFigure) { out = append(out, f) }
	const s = 1.0 / 1000 // ms -> s

	// failover-compare.md: the summary table and the compare table below
	// it, one column per target.
	for _, c := range []struct{ col, cmpCol, set string }{
		{"etcd", "etcd", "20261125T082525Z-failover-etcd"},
		{"Redis Cluster", "redis-cluster", "20261125T082718Z-failover-redis-cluster"},
		{"postgres-ha", "postgres-ha", "20261125T082905Z-failover-postgres-ha"},
		{"Galera", "galera", "20261125T083138Z-failover-galera"},
		{"Cassandra", "cassandra", "20261125T083347Z-failover-cassandra"},
	} {
		set := "failover-compare/" + c.set
		for _, r := range []struct {
			row  string
			part int
			get  func(*analyze.Report) float64
		}{
			{"failover time", 0, faultOf(0, failover)},
			{"downtime (100 ms windows", 0, faultOf(0, downtime)},
			{"restore downtime", 0, faultOf(0, restoreDowntime)},
			{"throughput before / during / after", 0, faultOf(0, beforeOps)},
			{"throughput before / during / after", 1, faultOf(0, duringOps)},
			{"throughput before / during / after", 2, faultOf(0, afterOps)},
			{"dropped operations", 0, dropped},
		} {
			add(pageFigure{page: "failover-compare.md", row: r.row, col: c.col, part: r.part, set: set, get: r.get})
		}
		for _, r := range []struct {
			row string
			get func(*analyze.Report) float64
		}{
			{"baseline throughput", baseline},
			{"longest gap", faultOf(0, longestGap)},
			{"recovery time", faultOf(0, recovery)},
			{"time to stabilise on node up", faultOf(0, stabilise)},
			{"reconfiguration time", faultOf(0, reconfiguration)},
			{"peak latency", faultOf(0, peak)},
			{"failed ops in reconfiguration", faultOf(0, failed)},
			{"final throughput", final},
		} {
			add(pageFigure{page: "failover-compare.md", row: r.row, col: c.cmpCol, set: set, get: r.get})
		}
	}

	// cassandra-failover.md: consistency ONE and QUORUM.
	for _, c := range []struct{ col, set string }{{"ONE", "one"}, {"QUORUM", "quorum"}} {
		set := "cassandra-failover/" + c.set
		for _, r := range []struct {
			row string
			get func(*analyze.Report) float64
		}{
			{"baseline throughput", baseline},
			{"downtime (ms)", faultOf(0, downtime)},
			{"longest gap", faultOf(0, longestGap)},
			{"failover time", faultOf(0, failover)},
			{"recovery time", faultOf(0, recovery)},
			{"throughput while n3 was down", faultOf(0, duringOps)}, // the fault span's: ONE never recovered
			{"failed operations", faultOf(0, failed)},
			{"restore downtime", faultOf(0, restoreDowntime)},
			{"time to stabilise on node up", faultOf(0, stabilise)},
			{"final throughput", final},
			{"dropped operations", dropped},
		} {
			add(pageFigure{page: "cassandra-failover.md", row: r.row, col: c.col, set: set, get: r.get})
		}
	}

	// sql-failover.md: one row per run.
	for _, r := range []struct{ row, set string }{
		{"postgres-ha, kill -9 of the primary's postmaster", "postgres-ha-primary"},
		{"postgres-ha, kill -9 of the whole primary node (kill n1-keeper)", "postgres-ha-whole-node"},
		{"postgres-ha, kill -9 of the whole primary node$", "postgres-ha-whole-node-pgaf"},
		{"galera, kill -9 of the node the client writes to (kill primary)", "galera"},
		{"galera, kill -9 of the node the client writes to$", "galera-defaults"},
	} {
		set := "sql-failover/" + r.set
		for _, c := range []struct {
			col string
			get func(*analyze.Report) float64
		}{
			{"failover time", faultOf(0, failover)},
			{"downtime", faultOf(0, downtime)},
			{"restore downtime", faultOf(0, restoreDowntime)},
			{"dropped ops", dropped},
		} {
			add(pageFigure{page: "sql-failover.md", row: r.row, col: c.col, set: set, get: c.get})
		}
	}

	// split-vs-kill-etcd.md and split-vs-kill-redis-cluster.md: the kill
	// (fault 0) and the partition (fault 1) of one run.
	for _, pg := range []struct{ page, set, kill, split string }{
		{"split-vs-kill-etcd.md", "split-vs-kill-etcd/run", "kill -9 of leader n3", "partition isolating leader n2"},
		{"split-vs-kill-redis-cluster.md", "split-vs-kill-redis-cluster/run", "kill -9 of master n1", "partition isolating master n2"},
	} {
		for i, col := range []string{pg.kill, pg.split} {
			for _, r := range []struct {
				row string
				get func(analyze.FaultMetrics) float64
			}{
				{"downtime (ms", downtime},
				{"longest gap", longestGap},
				{"failover time", failover},
				{"peak latency", peak},
				{"downtime after the restore", restoreDowntime},
			} {
				add(pageFigure{page: pg.page, row: r.row, col: col, set: pg.set, get: faultOf(i, r.get)})
			}
		}
	}
	for i, col := range []string{"kill -9 of leader n3", "partition isolating leader n2"} {
		add(pageFigure{page: "split-vs-kill-etcd.md", row: "recovery time", col: col, set: "split-vs-kill-etcd/run", get: faultOf(i, recovery)})
		add(pageFigure{page: "split-vs-kill-etcd.md", row: "failed ops in reconfiguration", col: col, set: "split-vs-kill-etcd/run", get: faultOf(i, failed)})
		add(pageFigure{page: "split-vs-kill-etcd.md", row: "throughput during the fault span", col: col, set: "split-vs-kill-etcd/run", get: faultOf(i, duringOps)})
	}

	// split-brain-redis-cluster.md
	for _, r := range []struct {
		row string
		get func(*analyze.Report) float64
	}{
		{"downtime (ms", faultOf(0, downtime)},
		{"longest gap", faultOf(0, longestGap)},
		{"failover time", faultOf(0, failover)},
		{"failed ops", faultOf(0, failed)},
		{"peak latency", faultOf(0, peak)},
		{"throughput while partitioned", faultOf(0, nodeDown)},
		{"final throughput", final},
		{"dropped operations", dropped},
	} {
		add(pageFigure{page: "split-brain-redis-cluster.md", row: r.row, col: "partition isolating master n1", set: "split-brain-redis-cluster/run", get: r.get})
	}

	// tpcc.md: the CumuloNimbo table of each target.
	for _, r := range []struct{ row, set, failedCol string }{
		{"one region server", "txkv-one-server", ""},
		{"two region servers", "txkv-two-servers", ""},
		{"all region servers of one node", "txkv-whole-node", ""},
		{"two whole nodes", "txkv-two-nodes", ""},
		{"primary's postmaster", "postgres-ha-primary", "failed during reconfiguration"},
		{"whole primary node", "postgres-ha-whole-node", "failed during reconfiguration"},
		{"the node written to", "galera-node", "failed during reconfiguration"},
	} {
		set := "tpcc/" + r.set
		add(pageFigure{page: "tpcc.md", row: r.row, col: "reconfiguration", set: set, get: faultOf(0, reconfiguration), scale: s})
		add(pageFigure{page: "tpcc.md", row: r.row, col: "peak New-Order latency", set: set, get: faultOf(0, peak)})
		if r.failedCol != "" {
			add(pageFigure{page: "tpcc.md", row: r.row, col: r.failedCol, set: set, get: faultOf(0, failed)})
			add(pageFigure{page: "tpcc.md", row: r.row, col: "aborted", set: set, get: faultOf(0, aborted)})
		} else {
			add(pageFigure{page: "tpcc.md", row: r.row, col: "aborted (timeouts) during reconfiguration", set: set, get: faultOf(0, aborted)})
		}
	}

	// txkv.md: the heartbeat table.
	for _, r := range []struct{ row, set string }{
		{"250 ms (2 s)", "server-crash-hb250ms"}, {"1 s (3 s)", "server-crash"}, {"5 s (15 s)", "server-crash-hb5s"},
	} {
		set := "txkv/" + r.set
		for _, c := range []struct {
			col   string
			get   func(analyze.FaultMetrics) float64
			scale float64
		}{
			{"downtime", downtime, 0}, {"longest gap", longestGap, 0}, {"failover time", failover, 0},
			{"recovery time", recovery, 0}, {"peak latency", peak, s},
		} {
			add(pageFigure{page: "txkv.md", row: r.row, col: c.col, set: set, get: faultOf(0, c.get), scale: c.scale})
		}
	}

	// elasticity-cassandra.md: Table 5 (the first scaling action of each run).
	for _, r := range []struct{ row, set string }{
		{"CS-1", "cs1"}, {"CS-2", "cs2"}, {"CS-3", "cs3"}, {"CS-4", "cs4"}, {"CS-6", "cs6"},
	} {
		set := "elasticity-cassandra/" + r.set
		for _, c := range []struct {
			col string
			get func(analyze.ScalingMetrics) float64
		}{
			{"streaming (s)", func(m analyze.ScalingMetrics) float64 { return m.StreamingMs }},
			{"transfer (s)", func(m analyze.ScalingMetrics) float64 { return m.TransferMs }},
			{"stabilise (s)", func(m analyze.ScalingMetrics) float64 { return m.StabiliseMs }},
			{"scaling (s)", func(m analyze.ScalingMetrics) float64 { return m.ScalingMs }},
		} {
			if c.col == "transfer (s)" && (r.set == "cs2" || r.set == "cs3") {
				continue // read from the new node's log (the page says so): not the analysis'
			}
			add(pageFigure{page: "elasticity-cassandra.md", row: r.row, col: c.col, set: set, get: scalingOf(0, c.get), scale: s})
		}
	}
	for i, f := range out {
		switch {
		case strings.HasPrefix(f.row, "peak") || strings.HasPrefix(f.col, "peak"):
			out[i].judged = judgedOf(faultIndex(f), "peak_latency_ms")
		case strings.HasPrefix(f.row, "failed ops in reconfiguration") || strings.HasPrefix(f.col, "failed during reconfiguration"):
			out[i].judged = judgedOf(faultIndex(f), "failed_count")
		}
	}
	changes := changedFigures()
	for i, f := range out {
		if c, ok := changes[f.key()]; ok {
			out[i].changed, out[i].now = c.why, c.now
			delete(changes, f.key())
		}
	}
	for k := range changes {
		panic("changedFigures lists a figure pageFigures does not: " + k)
	}
	return out
}

// faultIndex is the fault a figure of a two-fault page is about (the
// partition columns are the second fault).
func faultIndex(f pageFigure) int {
	if strings.HasPrefix(f.col, "partition isolating leader") || strings.HasPrefix(f.col, "partition isolating master n2") {
		return 1
	}
	return 0
}

// Reasons a published figure's definition changed on purpose.
const (
	whySustain = "failover ends only at sustained service, SustainWindows (5) consecutive windows up, not on a single window (issue 25 item 5)"
	whyJudged  = "a reconfiguration span with fewer than MinCompletions (20) New-Order/operation completions is not judged (issue 25 item 5)"
	whySteady  = "steady state judged on 1 s samples with an allowance for their operation counts (issue 25 item 6): another baseline, and the B-based and level-based figures with it"
)

// changedFigures are the published figures whose definition changed
// deliberately since the page was measured, with today's value in the
// page's unit; each goes when its page is re-measured.
func changedFigures() map[string]struct {
	why string
	now float64
} {
	type c = struct {
		why string
		now float64
	}
	return map[string]c{
		"cassandra-failover.md [time to stabilise on node up | ONE #0]":                     {whySteady, 34683.790263},
		"cassandra-failover.md [baseline throughput | QUORUM #0]":                           {whySteady, 922.2649572649573},
		"failover-compare.md [baseline throughput | etcd #0]":                               {whySteady, 1065.2941176470588},
		"failover-compare.md [restore downtime | Cassandra #0]":                             {whySteady, 3700},
		"failover-compare.md [baseline throughput | cassandra #0]":                          {whySteady, 988},
		"failover-compare.md [recovery time | cassandra #0]":                                {whySteady, 5925.327793},
		"cassandra-failover.md [failover time | ONE #0]":                                    {whySustain, 1732.540547},
		"failover-compare.md [failover time | etcd #0]":                                     {whySustain, 1580.010916},
		"failover-compare.md [failover time | postgres-ha #0]":                              {whySustain, 12226.142438},
		"split-vs-kill-etcd.md [failover time | partition isolating leader n2 #0]":          {whySustain, 29847.08757},
		"split-vs-kill-redis-cluster.md [failover time | kill -9 of master n1 #0]":          {whySustain + "; a partial outage (a third of the slots refused until the promotion) ends the failover only when operations are no longer refused", 2681.956757},
		"split-vs-kill-redis-cluster.md [failover time | partition isolating master n2 #0]": {whySustain, 6730.464606},
		"failover-compare.md [peak latency | cassandra #0]":                                 {whyJudged + ": 8 completions", 107.391},
		"failover-compare.md [failed ops in reconfiguration | cassandra #0]":                {whyJudged + ": 8 completions", 0},
		"tpcc.md [primary's postmaster | peak New-Order latency #0]":                        {whyJudged + ": 18 completions", 1420.287},
		"tpcc.md [primary's postmaster | failed during reconfiguration #0]":                 {whyJudged + ": 18 completions", 853},
		"tpcc.md [whole primary node | peak New-Order latency #0]":                          {whyJudged + ": 3 completions", 24.607},
		"tpcc.md [whole primary node | failed during reconfiguration #0]":                   {whyJudged + ": 3 completions", 2089},
	}
}

// TestResultsTrialsPages re-analyzes every trial of the trials input sets
// a results page publishes (data/<page>/<set>/trial-NN/), aggregates the
// re-analyses as a trials run does (AggregateTrials, the parent's seed)
// and checks the page's cells against them: the mean and the 95 %
// interval ("1,409 [1,152, 1,647]", or "10,060 (1 trial)"), and p50 / p90
// / max. A trial that cannot be re-analyzed is skipped visibly; its
// figures then fail as not re-analyzed.
func TestResultsTrialsPages(t *testing.T) {
	type cell struct {
		row  string
		key  string
		nums func(rundir.TrialMetric) []float64
	}
	meanCI := func(m rundir.TrialMetric) []float64 {
		if !m.Judged() {
			return []float64{m.Mean, float64(m.N)} // "10,060 (1 trial)"
		}
		return []float64{m.Mean, *m.CI95Low, *m.CI95High}
	}
	quantiles := func(m rundir.TrialMetric) []float64 { return []float64{m.P50, m.P90, m.Max} }
	cells := []cell{
		{"trials' failover time", "fault1_failover_ms", meanCI},
		{"trials' downtime", "fault1_downtime_ms", meanCI},
		{"p50 / p90 / max of the failover time", "fault1_failover_ms", quantiles},
	}
	const page = "failover-compare.md"
	for _, c := range []struct{ col, set string }{
		{"etcd", "20261127T080526Z-failover-etcd"},
		{"Redis Cluster", "20261127T081305Z-failover-redis-cluster"},
		{"Redis Cluster, runner.wake=sleep", "20261127T083647Z-failover-redis-cluster"},
		{"Galera", "20261127T084336Z-failover-galera"},
		{"postgres-ha", "20261127T085133Z-failover-postgres-ha"},
		{"Cassandra", "20261127T090112Z-failover-cassandra"},
		// the second table: Redis Cluster at 50 %, postgres-ha with its pool sized
		{"Redis Cluster at 50 %", "20261127T115058Z-failover-redis-cluster"},
		{"postgres-ha, pool = threads + 4", "20261127T115745Z-failover-postgres-ha"},
	} {
		t.Run(c.col, func(t *testing.T) {
			dir := filepath.Join(resultsData, "failover-compare-trials2", c.set)
			b, err := runfile.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var parent rundir.Summary
			if err := json.Unmarshal(b, &parent); err != nil || parent.Trials == nil {
				t.Fatalf("summary.json of %s: no trials (%v)", c.set, err)
			}
			tr := parent.Trials
			sums := make([]*rundir.Summary, len(tr.Runs))
			for i, r := range tr.Runs {
				if r.Failed {
					// as the trials run counts it: a failed trial's
					// figures are not the scenario's
					t.Logf("trial %d failed, counted without figures as the trials run did: %.120s", r.K, r.Error)
					continue
				}
				rep, why := reanalyze(t, filepath.Join(dir, r.Dir))
				if why != "" {
					t.Errorf("trial %d (%s) cannot be re-analyzed: %s", r.K, r.Dir, why)
					continue
				}
				sums[i] = &rundir.Summary{Analysis: rep}
			}
			agg := AggregateTrials(tr.Runs, sums, tr.Seed)
			for _, ce := range cells {
				text, err := pageCell(filepath.Join("../../docs/results", page), ce.row, c.col)
				if err != nil {
					t.Errorf("%s [%s | %s]: %v", page, ce.row, c.col, err)
					continue
				}
				m, ok := agg[ce.key]
				if !ok {
					t.Errorf("%s [%s | %s]: the re-analysis has no %s", page, ce.row, c.col, ce.key)
					continue
				}
				var want []float64
				if m.N > 1 || ce.row != "p50 / p90 / max of the failover time" {
					want = ce.nums(m)
				} // one trial: the page prints "—"
				var got []float64
				for _, s := range numRE.FindAllString(text, -1) {
					v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimRight(s, ","), ",", ""), 64)
					if err != nil {
						t.Fatalf("%s [%s | %s]: %q: %v", page, ce.row, c.col, s, err)
					}
					got = append(got, v)
				}
				if len(got) != len(want) {
					t.Errorf("%s [%s | %s]: the page says %q, the re-analysis %v", page, ce.row, c.col, text, want)
					continue
				}
				for i := range got {
					if math.Abs(got[i]-want[i]) > 0.5+1e-9 {
						t.Errorf("%s [%s | %s]: the page says %q, the re-analysis %.1f (value %d)", page, ce.row, c.col, text, want[i], i+1)
					}
				}
			}
		})
	}
}

// reanalyze re-analyzes the run directory dir as the analysis of a run
// does: its windows, events, dropped operations, scenario parameters and
// intended-latency histograms; why says what is missing when it cannot.
func reanalyze(t *testing.T, dir string) (rep *analyze.Report, why string) {
	t.Helper()
	if missing := incomplete(dir); len(missing) > 0 {
		return nil, "no " + strings.Join(missing, ", ")
	}
	var sum rundir.Summary
	b, err := runfile.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err.Error()
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, "summary.json: " + err.Error()
	}
	rows, err := measure.ReadWindows(filepath.Join(dir, measure.WindowsFile))
	if err != nil {
		return nil, err.Error()
	}
	evs, err := event.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err.Error()
	}
	params := scenarioParams(t, dir)
	params.OfferedOps = sum.TargetOps
	if hl, err := measure.ReadHistLogs(dir); err == nil {
		params.Hists = hl
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err.Error()
	}
	rep, err = analyze.Analyze(rows, evs, params)
	if err != nil {
		return nil, err.Error()
	}
	return rep, ""
}
