package reproduce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/check"
	"github.com/faultbench/faultbench/internal/rundir"
)

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// failoverRun is a run directory's summary.json of a failover scenario.
func failoverRun(downtime, nodeDown float64, lost int) *rundir.Summary {
	return &rundir.Summary{
		Target: "cassandra", RateSpec: "75%", TargetOps: 1500,
		Analysis: &analyze.Report{BaselineOps: 1498, FinalOps: 1490, Faults: []analyze.FaultMetrics{{
			DowntimeMs: downtime, RecoveryMs: 2400, NodeDownOps: nodeDown, RestoreDowntimeMs: 0, StabiliseMs: -1,
		}}},
		LostWrites: &check.Result{LostWrites: lost},
	}
}

// fixtureDir builds a reproduction directory of the failover paper with
// a single run, a trials parent of two trials, a failed step and a sweep
// and a UPB directory (run by steps of other papers' tables through a
// manifest of this paper: the tables do not care which paper a kind of
// run comes from).
func fixtureDir(t *testing.T) (string, *Manifest) {
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "r1", "summary.json"), failoverRun(6300, 1100, 0))
	writeJSON(t, filepath.Join(dir, "t", "summary.json"), &rundir.Summary{Target: "cassandra", Trials: &rundir.Trials{N: 2, Runs: []rundir.TrialRun{
		{K: 1, Dir: "trial-01"}, {K: 2, Dir: "trial-02"}}}})
	writeJSON(t, filepath.Join(dir, "t", "trial-01", "summary.json"), failoverRun(-1, -1, 0))
	writeJSON(t, filepath.Join(dir, "t", "trial-02", "summary.json"), failoverRun(-1, -1, 0))
	m := &Manifest{Paper: "nosql-failover", Scale: Small, Started: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), Version: "test",
		Steps: []ManifestStep{
			{ID: "cassandra-async-50", Figure: "Figure 5 (50 %)", Dir: "r1"},
			{ID: "cassandra-sync-75", Figure: "Table: Cassandra (sync); Figure 3b", Dir: "t"},
			{ID: "cassandra-async-100", Figure: "Figures 2b, 5 (100 %), 7", Error: "cluster up: n3 did not answer"},
		}}
	return dir, m
}

func TestTablesFromRuns(t *testing.T) {
	dir, m := fixtureDir(t)
	p, _ := Lookup("nosql-failover")
	got, err := Tables(p, m, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Runs of `faultbench reproduce nosql-failover --scale small`, started 2026-11-27 12:00 UTC, faultbench test.",
		"#### Failover metrics (the study's table)",
		// one run: its values; node down / before = 1100/1498
		"| cassandra-async-50 | Figure 5 (50 %) | 75% | 1,500 | 1,498 | 6,300 | 2,400 | 1,100 | 73 | 0 | n/a | 1,490 | 0 | `r1` |",
		// trials: never down, no node-down level: n/a, the range over two trials
		"| cassandra-sync-75 | Table: Cassandra (sync); Figure 3b | 75% | 1,500 [1,500–1,500], 2 trials | 1,498 [1,498–1,498], 2 trials | n/a |",
		"| cassandra-async-100 | Figures 2b, 5 (100 %), 7 | failed: cluster up: n3 did not answer |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack\n%s\nin\n%s", want, got)
		}
	}
}

func TestTablesSweepAndUPB(t *testing.T) {
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "sw", "summary.json"), &rundir.SweepSummary{Steps: []rundir.SweepStep{
		{Step: 1, Nodes: 1, RateSpec: "1500", OfferedOps: 1500, AchievedOps: 1499.5, All: rundir.Latency{P50: 2500, P95: 12900, P99: 149000}, ClientThroughputCV: 0.0028},
		{Step: 2, Nodes: 2, RateSpec: "3000", Error: "cluster up failed"},
	}})
	if err := os.MkdirAll(filepath.Join(dir, "u"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "u", "results.csv"), []byte("k,f,t\n0,0,1000\n1,0,800\n1,1,600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, _ := Lookup("scalability")
	got, err := Tables(sp, &Manifest{Paper: "scalability", Scale: Small, Steps: []ManifestStep{{ID: "sb3-r", Figure: "Figure 1 (Cassandra)", Dir: "sw"}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| sb3-r | Figure 1 (Cassandra) | 1 | 1 | 1500 | 1,500 | 1,499.5 | 2.5 / 12.9 / 149.0 | 0 | 0.0028 | `sw` |",
		"| sb3-r | Figure 1 (Cassandra) | 2 | 2 | 3000 | failed: cluster up failed |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sweep table lacks\n%s\nin\n%s", want, got)
		}
	}
	up, _ := Lookup("upb")
	got, err = Tables(up, &Manifest{Paper: "upb", Scale: Small, Steps: []ManifestStep{{ID: "upb-etcd", Figure: "Tables IV-X", Dir: "u"}}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| upb-etcd | Tables IV-X | 0 | 0 | 1,000 |  |  | `u` |",
		"| upb-etcd | Tables IV-X | 1 | 0 | 800 | 20.00 | 25.00 | `u` |",
		"| upb-etcd | Tables IV-X | 1 | 1 | 600 | 25.00 |  | `u` |",
		"D_T = 20.00 %",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("UPB table lacks\n%s\nin\n%s", want, got)
		}
	}
}

// TestCheckPage: a page whose generated section is the runs' tables
// passes; the negative controls — a cell changed by hand, a run changed
// after the page was generated, a page without the section — fail.
func TestCheckPage(t *testing.T) {
	dir, m := fixtureDir(t)
	p, _ := Lookup("nosql-failover")
	body, err := Tables(p, m, dir)
	if err != nil {
		t.Fatal(err)
	}
	page := Replace([]byte("# NoSQL failover\n\nprose above\n"), p.Name, body)
	page = append(page, "\nprose below\n"...)
	if err := CheckPage(page, p, m, dir); err != nil {
		t.Fatalf("a page generated from its runs fails: %v", err)
	}
	// replacing again keeps the prose around the section
	again := Replace(page, p.Name, body)
	if !bytes.Equal(again, page) || !bytes.Contains(again, []byte("prose below")) {
		t.Fatalf("Replace is not idempotent:\n%s", again)
	}
	t.Run("cell edited by hand", func(t *testing.T) {
		bad := bytes.Replace(page, []byte("| 6,300 |"), []byte("| 5,300 |"), 1)
		err := CheckPage(bad, p, m, dir)
		if err == nil || !strings.Contains(err.Error(), "5,300") || !strings.Contains(err.Error(), "6,300") {
			t.Fatalf("an edited cell passes: %v", err)
		}
	})
	t.Run("run changed after generating", func(t *testing.T) {
		writeJSON(t, filepath.Join(dir, "r1", "summary.json"), failoverRun(7000, 1100, 3))
		defer writeJSON(t, filepath.Join(dir, "r1", "summary.json"), failoverRun(6300, 1100, 0))
		if err := CheckPage(page, p, m, dir); err == nil {
			t.Fatal("a page that disagrees with its runs passes")
		}
	})
	t.Run("no section", func(t *testing.T) {
		if err := CheckPage([]byte("# NoSQL failover\n"), p, m, dir); err == nil || !strings.Contains(err.Error(), "no generated section") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("placeholder", func(t *testing.T) {
		ph, err := Tables(p, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		pp := Replace(nil, p.Name, ph)
		if err := CheckPage(pp, p, nil, ""); err != nil {
			t.Fatal(err)
		}
		if err := CheckPage(pp, p, m, dir); err == nil {
			t.Fatal("a placeholder passes as the tables of runs")
		}
	})
}

// fakeExec writes a failover run's summary.json per step; the step named
// fail fails without a directory.
type fakeExec struct {
	fail string
	runs []StepRun
}

func (f *fakeExec) Execute(_ context.Context, r StepRun) (string, error) {
	f.runs = append(f.runs, r)
	if r.Step.ID == f.fail {
		return "", errors.New("cluster up: timed out")
	}
	d := filepath.Join(r.RunsDir, "run-"+r.Step.ID)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	b, _ := json.Marshal(failoverRun(1000, 900, 0))
	return d, os.WriteFile(filepath.Join(d, "summary.json"), b, 0o644)
}

// TestRun runs a paper with a fake executor: every step of the scale in
// order with its assignments and trials, the manifest, tables.md and the
// page's section written, and the page then checks against the runs.
func TestRun(t *testing.T) {
	runs := t.TempDir()
	page := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(page, []byte("# the page\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := &fakeExec{fail: "cassandra-async-100"}
	var out, errb bytes.Buffer
	o, err := Run(context.Background(), Spec{Paper: "nosql-failover", Scale: Small, RunsDir: runs, Page: page, Out: &out, Err: &errb, Env: testEnv, Exec: ex,
		Now: func() time.Time { return time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC) }})
	if err == nil || !strings.Contains(err.Error(), "1 of 4 steps failed") {
		t.Fatalf("Run: %v", err)
	}
	p, _ := Lookup("nosql-failover")
	if len(ex.runs) != len(p.StepsFor(Small)) {
		t.Fatalf("ran %d steps, want %d", len(ex.runs), len(p.StepsFor(Small)))
	}
	for i, r := range ex.runs {
		if r.Step.ID != p.StepsFor(Small)[i].ID {
			t.Errorf("step %d is %s", i, r.Step.ID)
		}
		if !strings.Contains(strings.Join(r.Sets, " "), "schedule.steady=30s") {
			t.Errorf("step %s lacks the small scale's timing: %v", r.Step.ID, r.Sets)
		}
	}
	if r := ex.runs[1]; r.Step.ID != "cassandra-async-75" || r.Scenario.Trials == nil || r.Scenario.Trials.N != 3 || r.Trials != 3 {
		t.Errorf("the 75 %% step is not run as 3 trials: %+v", r.Scenario.Trials)
	}
	if want := filepath.Join(runs, "20261127T100000Z-reproduce-nosql-failover"); o.Dir != want {
		t.Fatalf("dir %s, want %s", o.Dir, want)
	}
	m, err := ReadManifest(o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 4 || m.Steps[0].Dir != "run-cassandra-async-50" || m.Steps[2].Error == "" {
		t.Fatalf("manifest %+v", m.Steps)
	}
	tables, err := os.ReadFile(filepath.Join(o.Dir, TablesFile))
	if err != nil || string(tables) != o.Tables {
		t.Fatalf("tables.md: %v", err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# the page\n") {
		t.Errorf("the page lost its text:\n%s", b)
	}
	if err := CheckPage(b, p, m, o.Dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "step cassandra-async-100 failed: cluster up: timed out") {
		t.Errorf("stderr: %s", errb.String())
	}
}

func TestRunDryRun(t *testing.T) {
	for _, p := range Papers() {
		t.Run(p.Name, func(t *testing.T) {
			var out bytes.Buffer
			ex := &fakeExec{}
			if _, err := Run(context.Background(), Spec{Paper: p.Name, Scale: Small, DryRun: true, Out: &out, Err: &out, Env: testEnv, Exec: ex}); err != nil {
				t.Fatal(err)
			}
			if len(ex.runs) != 0 {
				t.Fatal("a dry run ran a step")
			}
			for _, want := range []string{"valid; dry run, nothing started", p.Cite, p.StepsFor(Small)[0].File} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the plan lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestRunOnly: --only runs the named step alone, --set reaches it after
// the scale's own assignments (so it wins).
func TestRunOnly(t *testing.T) {
	ex := &fakeExec{}
	var out bytes.Buffer
	o, err := Run(context.Background(), Spec{Paper: "nosql-failover", Scale: Small, RunsDir: t.TempDir(), Out: &out, Err: &out, Env: testEnv, Exec: ex,
		Only: []string{"cassandra-sync-75"}, Sets: []string{"schedule.after=61s"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.runs) != 1 || ex.runs[0].Step.ID != "cassandra-sync-75" {
		t.Fatalf("ran %d steps", len(ex.runs))
	}
	if got := ex.runs[0].Scenario.Schedule.Failover.After.D(); got != 61*time.Second {
		t.Errorf("schedule.after = %v, want the --set's 61s over the scale's 120s", got)
	}
	if len(o.Manifest.Steps) != 1 {
		t.Errorf("manifest: %+v", o.Manifest.Steps)
	}
}
