package distrib_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// TestScenarioClientProcessesHistory: a CoreWorkload scenario on a real
// etcd whose two client groups are worker processes records its history
// in each process; the coordinator merges them into one history.jsonl in
// which every write of every writer (thread) of both processes is there
// exactly once (the tags' sequence numbers of each writer are 0..n-1, no
// gap, no repeat) and each process id belongs to one writer; the scenario's
// linearizable checker judges the merged history in the same run.
func TestScenarioClientProcessesHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real etcd cluster and client processes")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc := `
name: test-procs-history
target: {kind: etcd, nodes: 1}
workload: {ycsb: workloada, properties: {recordcount: "20"}}
load: {threads: 4, clients: 2, client_processes: true, rate: 200, warmup: 0s, duration: 3s, window: 500ms}
history: true
checks: [linearizable]
`
	sc, err := scenario.Parse([]byte(doc), "test.yaml", nil)
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
	ops, torn, err := history.ReadFile(filepath.Join(res.Dir, history.FileName))
	if err != nil || torn {
		t.Fatalf("history.jsonl: %v torn %v", err, torn)
	}
	seqs := map[int64]map[int64]int{} // writer -> sequence -> times seen
	writerOf := map[int]int64{}       // process -> writer
	for _, op := range ops {
		if op.Mops[0].F != history.Write {
			continue
		}
		v := op.Mops[0].Value
		w, seq := v>>40, v&(1<<40-1)
		if seqs[w] == nil {
			seqs[w] = map[int64]int{}
		}
		seqs[w][seq]++
		if pw, ok := writerOf[op.Process]; ok && pw != w {
			t.Fatalf("process %d wrote as writers %d and %d", op.Process, pw, w)
		}
		writerOf[op.Process] = w
	}
	if len(seqs) != 4 {
		t.Fatalf("writers %d, want the 4 threads of the 2 processes", len(seqs))
	}
	for w, s := range seqs {
		for i := range int64(len(s)) {
			if s[i] != 1 {
				t.Fatalf("writer %d: write %d recorded %d times (of %d writes)", w, i, s[i], len(s))
			}
		}
	}
	v, ok := res.Summary.Verdicts["linearizable"]
	if !ok || v.Valid != verdict.True || v.Operations != len(ops) {
		t.Fatalf("verdict %+v over history.jsonl's %d operations\n%s", v, len(ops), errb.String())
	}
	if _, err := os.Stat(filepath.Join(res.Dir, distrib.PartsDir)); !os.IsNotExist(err) {
		t.Errorf("the parts are left: %v", err)
	}
}
