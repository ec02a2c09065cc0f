package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/hostload"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

const trialsDoc = `
name: test-trials
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloada, properties: {recordcount: "100"}}
load: {threads: 2, rate: 100, duration: 6s, window: 200ms}
schedule:
  - {at: 2s..3s, fault: kill, node: "random-of(followers)", as: victim}
  - {at: 4s, fault: start, node: victim}
checks: [lost-writes]
`

// TestTrials runs seeded trials of a follower kill on real 3-member etcd
// clusters (two on a fresh cluster each, then three on one reused cluster:
// the judged interval of n=3 on the mode that starts one cluster, the
// unjudged one of n=2 on the mode that starts one per trial) and
// checks the parent directory: each trial's own run directory and report,
// its seed and its drawn fault time within the window, the victim a
// follower, the metrics' distribution, the strip plots linking to the
// trials, and a replay of one trial drawing the same time.
func TestTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real 3-member etcd clusters, about 10 s a trial")
	}
	for _, tc := range []struct {
		mode string
		n    int
	}{{scenario.TrialsFresh, 2}, {scenario.TrialsReuse, 3}} {
		t.Run(tc.mode, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(trialsDoc), "test.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			state, runs := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			spec := experiment.ScenarioSpec{Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: runs, StateDir: state, Out: &out, Err: &errb, Quiet: true}
			const seed = 4242
			res, err := experiment.RunTrials(ctx, spec, experiment.TrialsSpec{N: tc.n, Seed: seed, Mode: tc.mode})
			if err != nil {
				t.Fatalf("trials: %v\n%s\n%s", err, out.String(), errb.String())
			}
			t.Logf("\n%s", out.String())
			var sum rundir.Summary
			readJSON(t, filepath.Join(res.Dir, "summary.json"), &sum)
			tr := sum.Trials
			if tr == nil || tr.N != tc.n || len(tr.Runs) != tc.n || tr.Seed != seed || tr.Mode != tc.mode || sum.Scenario != "test-trials" {
				t.Fatalf("parent summary: %+v", sum)
			}
			for i, r := range tr.Runs {
				k := i + 1
				if r.K != k || r.Seed != scenario.TrialSeed(seed, k) || r.Dir != filepath.Base(r.Dir) || r.Failed {
					t.Errorf("trial %d recorded as %+v", k, r)
				}
				var ts rundir.Summary
				readJSON(t, filepath.Join(res.Dir, r.Dir, "summary.json"), &ts)
				if ts.Trial == nil || ts.Trial.K != k || ts.Trial.Seed != r.Seed || ts.Trial.BaseSeed != seed || len(ts.Trial.FaultAtMs) != 2 {
					t.Fatalf("trial %d summary: %+v", k, ts.Trial)
				}
				if at := ts.Trial.FaultAtMs[0]; at < 2000 || at > 3000 || ts.Trial.FaultAtMs[1] != 4000 {
					t.Errorf("trial %d drew fault times %v, want the kill in 2000..3000 and the start at 4000", k, ts.Trial.FaultAtMs)
				}
				if _, err := os.Stat(filepath.Join(res.Dir, r.Dir, "report.html")); err != nil {
					t.Errorf("trial %d has no report: %v", k, err)
				}
				// the host's samples, one column per node, faultbench busy
				host, err := hostload.Read(filepath.Join(res.Dir, r.Dir, hostload.File))
				if err != nil {
					t.Fatalf("trial %d: %v", k, err)
				}
				busy := 0.0
				for _, v := range host.SelfPct {
					busy = max(busy, v)
				}
				if strings.Join(host.Nodes, ",") != "n1,n2,n3" || len(host.AtSec) < 10 || busy <= 0 {
					t.Errorf("trial %d host.csv: nodes %v, %d samples, faultbench at most %.1f %% CPU", k, host.Nodes, len(host.AtSec), busy)
				}
				if ts.Analysis == nil || len(ts.Analysis.Faults) == 0 {
					t.Fatalf("trial %d: no fault analysed", k)
				}
				// a reused cluster holds the earlier trials' tagged writes:
				// the lost-write check judges only the trial that started it
				_, judged := ts.Checks["lost-writes"]
				skipped := strings.Contains(strings.Join(ts.ChecksSkipped, ";"), "lost-writes: not judged, the cluster was reused")
				if wantJudged := tc.mode == scenario.TrialsFresh || k == 1; judged != wantJudged || skipped == wantJudged || (judged && !ts.Checks["lost-writes"]) {
					t.Errorf("trial %d (%s): lost-writes judged %v (passed %v), skipped %v %q; want judged and passed only on a cluster it started", k, tc.mode, judged, ts.Checks["lost-writes"], skipped, ts.ChecksSkipped)
				}
				// the victim was a follower when it was drawn: not the leader
				// the events named before the kill
				if v := ts.Analysis.Faults[0].Fault.Node; !strings.HasPrefix(v, "n") || strings.Contains(v, ",") {
					t.Errorf("trial %d killed %q, want one node", k, v)
				}
			}
			m, ok := tr.Metrics["throughput_ops"]
			if !ok || m.N != tc.n || len(m.Values) != tc.n {
				t.Fatalf("throughput_ops over the trials: %+v", m)
			}
			if judged := tc.n >= 3; m.Judged() != judged {
				t.Errorf("throughput interval judged %v with n=%d", m.Judged(), tc.n)
			}
			if _, ok := tr.Metrics["fault1_downtime_ms"]; !ok {
				t.Errorf("no fault1_downtime_ms in %v", keys(tr.Metrics))
			}
			html, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
			if err != nil || !strings.Contains(string(html), `<a href="trial-01/report.html">`) || !strings.Contains(string(html), "<svg") {
				t.Errorf("parent report.html lacks the strip plots' links to the trials (%v)", err)
			}
			for _, want := range []string{"trials: " + itoa(tc.n) + " of " + itoa(tc.n) + " completed", "throughput, successful (ops/s)"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("terminal lacks %q", want)
				}
			}
			if tc.n < 3 && !strings.Contains(out.String(), "not judged (2 trials)") {
				t.Errorf("terminal does not say the interval of 2 trials is not judged")
			}
			if cs, _ := (launcher.StateStore{Dir: state}).List(); len(cs) != 0 {
				t.Errorf("state files left: %v", cs)
			}
			if tc.mode != scenario.TrialsFresh {
				return
			}
			// replay trial 2 alone with the recorded seed: the same draw
			sc2, _ := scenario.Parse([]byte(trialsDoc), "test.yaml", nil)
			spec.Scenario = sc2
			res2, err := experiment.RunTrials(ctx, spec, experiment.TrialsSpec{N: tc.n, Seed: seed, Only: 2})
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, errb.String())
			}
			var s2 rundir.Summary
			readJSON(t, filepath.Join(res2.Dir, "summary.json"), &s2)
			if len(s2.Trials.Runs) != 1 || s2.Trials.Runs[0].K != 2 || s2.Trials.Only != 2 {
				t.Fatalf("replay ran %+v", s2.Trials.Runs)
			}
			if a, b := s2.Trials.Runs[0].FaultAtMs, tr.Runs[1].FaultAtMs; len(a) != 2 || a[0] != b[0] {
				t.Errorf("replay of trial 2 drew %v, the trial drew %v", a, b)
			}
		})
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
