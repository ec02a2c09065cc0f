package distrib_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

const procsLeaderKill = `
name: test-procs-leader-kill
target: {kind: etcd, nodes: 3, options: {etcd.election-timeout: 1000ms, etcd.heartbeat-interval: 100ms}}
workload: {ycsb: workloada, properties: {recordcount: "600"}}
load: {threads: 6, clients: 3, client_processes: true, rate: 150, warmup: 1s, window: 500ms}
schedule: {fault: kill, node: leader, steady: 3s, down: 3s, after: 3s}
`

// TestScenarioClientProcesses runs a leader-kill scenario on real etcd
// whose client groups are three worker processes: the fault is analysed
// on the merged windows, the per-client spread and workers.csv are there,
// env.json says processes, and no process is left.
func TestScenarioClientProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd cluster and client processes")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse([]byte(procsLeaderKill), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: t.TempDir(),
		Out: &out, Err: &errb, Processes: distrib.Execute(bin),
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	sum := res.Summary
	if sum.Analysis == nil || len(sum.Analysis.Faults) == 0 {
		t.Errorf("no fault analysed: %+v", sum.Analysis)
	}
	if pc := sum.PerClient; pc == nil || len(pc.Clients) != 3 || pc.ThroughputCV < 0 {
		t.Errorf("per_client %+v, want 3 clients and a CV", pc)
	}
	var ok int64
	for _, r := range readCSV(t, filepath.Join(res.Dir, distrib.WorkersFile)) {
		if r["status"] != "done" {
			t.Errorf("workers.csv: %v", r)
		}
		ok += atoi(t, r["ok"])
	}
	if sum.Totals.All.OK != ok {
		t.Errorf("summary OK %d, the processes reported %d", sum.Totals.All.OK, ok)
	}
	var env rundir.Env
	readJSON(t, filepath.Join(res.Dir, "env.json"), &env)
	if env.ClientGroups != rundir.ClientGroupsProcesses {
		t.Errorf("env.json client_groups %q", env.ClientGroups)
	}
	if left := workerChildren(t); len(left) > 0 {
		t.Errorf("worker processes left: %v", left)
	}
}

// TestScenarioClientProcessesRefused: what cannot work with client
// processes is refused before anything starts.
func TestScenarioClientProcessesRefused(t *testing.T) {
	base := `
name: refused
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloada, properties: {recordcount: "600"}}
load: {threads: 6, clients: 3, client_processes: true, rate: 150}
schedule: {fault: kill, node: leader, steady: 3s, down: 3s, after: 3s}
`
	for _, tc := range []struct {
		name      string
		extra     string
		processes bool
		want      string
	}{
		{"no process runner", "", false, "cannot start them"},
		{"lost-writes check", "checks: [lost-writes]\n", true, "checks"},
		{"runs with a runner", "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(base+tc.extra), "test.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			spec := experiment.ScenarioSpec{Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
			if tc.processes {
				spec.Processes = distrib.Execute("/nonexistent/faultbench")
			}
			err = experiment.PlanScenario(spec)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("plan: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("plan: %v, want an error about %q", err, tc.want)
			}
		})
	}
	t.Run("load.client_processes needs load.clients", func(t *testing.T) {
		_, err := scenario.Parse([]byte(strings.Replace(base, "clients: 3, ", "", 1)), "test.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), "load.client_processes") {
			t.Fatalf("parse: %v, want an error naming load.client_processes", err)
		}
	})
}
