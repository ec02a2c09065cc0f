package upb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/etcd"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/upb"
	"github.com/faultbench/faultbench/workloads"
)

// TestMain lets the test binary stand in for the faultbench binary: the
// etcd launcher spawns `<self> node etcd ...`, which lands here.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" && os.Args[2] == "etcd" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := etcd.RunNode(ctx, os.Args[3:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// procsWith returns the pids (other than this process) whose command line
// contains s.
func procsWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) && launcher.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// itScenario is the methodology compressed: K = 0..1, probes of 0.5 s
// warm-up and a 1.5 s window sampled every 500 ms.
const itScenario = `
name: upb-it
target:
  kind: etcd
  options: {etcd.election-timeout: 1000ms, etcd.heartbeat-interval: 100ms}
workload:
  ycsb: workloadc
  properties: {recordcount: "1000", requestdistribution: zipfian}
load: {load_threads: 8, window: 500ms}
upb:
  kmax: 1
  warmup: 500ms
  measure: 1500ms
  steady_timeout: 1s
  steady_sample: 500ms
  steady_tolerance: 0.25
  hint: 1s
  settle: 1s
  client_threads: 16
  max_clients: 4
  initial_q: 300
`

// TestRunEtcd runs the whole UPB methodology against real etcd clusters
// (1 member for K=0, 3 for K=1, one of them killed for F=1) and checks that
// every table, summary.json, results.csv and report.html come out and
// nothing is left.
func TestRunEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd clusters")
	}
	tmp := t.TempDir()
	runs, state := filepath.Join(tmp, "runs"), filepath.Join(tmp, "state")
	t.Cleanup(func() {
		if pids := procsWith(tmp); len(pids) > 0 {
			t.Errorf("processes left behind: %v", pids)
			for _, p := range pids {
				_ = launcher.Kill(context.Background(), p)
			}
		}
	})
	sc, err := scenario.Parse([]byte(itScenario), "upb-it.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := upb.Run(ctx, upb.Spec{Scenario: sc, File: "upb-it.yaml", OpenWorkload: workloads.Open,
		RunsDir: runs, StateDir: state, Out: &out, Err: &log})
	t.Logf("UPB with Kmax=1 took %v\n%s", time.Since(start).Round(time.Second), out.String())
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, log.String())
	}
	if !strings.HasPrefix(filepath.Base(res.Dir), "") || !strings.HasSuffix(res.Dir, "-upb-it") {
		t.Errorf("run directory %s, want runs/<time>-upb-it", res.Dir)
	}

	t.Run("tables", func(t *testing.T) {
		for _, want := range []string{
			"Table IV. Defining the workload limit per client (L_c)", "L_c = 0.9 ×",
			"Table V. Runs to determine T(0,0)", "Table V. Runs to determine T(1,0)", "Table V. Runs to determine T(1,1)",
			"Table VI. Parameters", "Table VII.", "K=1 and F=1", "Table VIII.", "Table IX.", "DF_1", "Table X.", "D_T", "D_F",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if strings.Contains(out.String(), "n/a") || strings.Contains(out.String(), "error:") {
			t.Errorf("a metric is missing or an error was reported")
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "tables.txt"))
		last := "report: " + filepath.Join(res.Dir, "report.html") + "\n"
		if err != nil || string(b)+last != out.String() {
			t.Errorf("tables.txt (%v) and then %q differ from the terminal output", err, last)
		}
	})

	t.Run("report.html", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Table IV.", "Table V. Runs to determine T(1,1)", "Table X.", `id="chart-curve-lc"`,
			`id="chart-curve-k0-f0"`, `id="chart-curve-k1-f0"`, `id="chart-curve-k1-f1"`, `id="chart-probe-k1-f1-01"`} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("report.html lacks %q", want)
			}
		}
		if _, err := os.Stat(filepath.Join(res.Dir, "plots", "upb-k1-f1.png")); err != nil {
			t.Errorf("probe curve PNG: %v", err)
		}
	})

	t.Run("summary.json", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum upb.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if !sum.Complete || len(sum.Errors) > 0 || sum.LcOps <= 0 || sum.Lc == nil || len(sum.Searches) != 3 || len(sum.T) != 3 {
			t.Fatalf("summary incomplete: complete %v, errors %v, L_c %g, %d searches, T %v", sum.Complete, sum.Errors, sum.LcOps, len(sum.Searches), sum.T)
		}
		if m := sum.Metrics; m == nil || m.DT == nil || m.DF == nil || m.T00 == nil || len(m.Ks) != 1 {
			t.Errorf("metrics %+v", sum.Metrics)
		}
		wantNodes := []int{1, 3, 3}
		for i, s := range sum.Searches {
			if s.Nodes != wantNodes[i] || s.Baseline == nil || s.Baseline.T <= 0 || len(s.Baseline.Rows) < 2 {
				t.Errorf("search %d: %+v", i, s)
				continue
			}
			for _, r := range s.Baseline.Rows {
				if _, err := os.Stat(filepath.Join(res.Dir, r.Dir, "windows.csv")); err != nil {
					t.Errorf("probe %s: %v", r.Dir, err)
				}
			}
		}
		if f := sum.Searches[2]; f.K != 1 || f.F != 1 || len(f.Failed) != 1 {
			t.Errorf("T(1,1) search: K %d F %d failed %v", f.K, f.F, f.Failed)
		}
	})

	t.Run("results.csv", func(t *testing.T) {
		ts, err := upb.ReadCSVFile(filepath.Join(res.Dir, "results.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 3 || ts[0].K != 0 || ts[1] != (upb.TValue{K: 1, F: 0, T: ts[1].T}) || ts[2].F != 1 {
			t.Errorf("results.csv: %v", ts)
		}
	})

	t.Run("kill event", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
		if err != nil || !bytes.Contains(b, []byte(`"kill`)) {
			t.Errorf("events.jsonl (%v) records no kill", err)
		}
	})

	t.Run("clusters stopped", func(t *testing.T) {
		if pids := procsWith(runs); len(pids) > 0 {
			t.Errorf("node processes still running: %v", pids)
		}
		ents, _ := os.ReadDir(state)
		for _, e := range ents {
			t.Errorf("state file left: %s", e.Name())
		}
	})
}
