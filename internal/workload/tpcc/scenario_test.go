package tpcc_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload/tpcc"
	"github.com/faultbench/faultbench/workloads"
)

// shortFailure is tpcc-txkv-one-server.yaml made small: a scaled-down
// 1-warehouse database on 2 nodes of 2 region servers, one server killed.
const shortFailure = `
name: test-tpcc-txkv-one-server
target:
  kind: txkv
  nodes: 2
  options: {txkv.servers-per-node: "2", txkv.regions: "8", txkv.heartbeat: 250ms}
workload:
  ycsb: tpcc
  properties: {tpcc.warehouses: "1", tpcc.items: "2000", tpcc.customers-per-district: "300"}
load: {threads: 10, load_threads: 8, warmup: 3s, duration: 24s, window: 500ms}
schedule:
  - {at: 8s, fault: kill, node: n2-s1, label: kill -9 region server n2-s1}
checks: [tpcc-consistency]
analysis: {latency_op: NEW-ORDER}
`

// TestShortFailureScenario runs TPC-C on real txkv processes grouped on
// nodes, kills one region server, and expects the run to continue (New-
// Orders committed after the kill), the TPC-C figures in the summary and
// the consistency conditions to hold. It asserts outcomes, not timings.
func TestShortFailureScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real txkv cluster for about a minute")
	}
	sc, err := scenario.Parse([]byte(shortFailure), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "test.yaml", OpenWorkload: workloads.Open, RunsDir: t.TempDir(), StateDir: t.TempDir(),
		Out: &out, Err: &errb, Quiet: true,
	})
	if err != nil {
		t.Fatalf("scenario: %v\n%s\n%s", err, out.String(), errb.String())
	}
	sum := res.Summary
	if len(sum.Errors) > 0 {
		t.Errorf("run errors: %v", sum.Errors)
	}
	if ok, ran := sum.Checks["tpcc-consistency"]; !ran || !ok {
		t.Errorf("tpcc-consistency: ran %v, passed %v", ran, ok)
	}
	var fig tpcc.Figures
	if err := json.Unmarshal(sum.Sections[tpcc.SummaryKey], &fig); err != nil || fig.TpmC <= 0 || fig.Tpm < fig.TpmC {
		t.Fatalf("TPC-C figures: %+v (%v)", fig, err)
	}
	for _, name := range []string{"NEW-ORDER", "PAYMENT", "ORDER-STATUS", "DELIVERY", "STOCK-LEVEL"} {
		if sum.Totals.PerOp[name].Count == 0 {
			t.Errorf("no %s transactions recorded", name)
		}
	}
	if _, ok := sum.Totals.PerOp["READ"]; ok {
		t.Error("a YCSB operation name in a TPC-C run")
	}
	if sum.Analysis == nil || len(sum.Analysis.Faults) != 1 {
		t.Fatalf("analysis: %+v", sum.Analysis)
	}
	f := sum.Analysis.Faults[0]
	t.Logf("tpmC %.0f; reconfiguration %.0f ms, peak New-Order latency %.0f ms, aborted %d", fig.TpmC, f.ReconfigurationMs, f.PeakLatencyMs, f.AbortedOps)
	// New-Orders kept committing after the kill (the killed server's regions were taken over)
	f2, err := os.Open(filepath.Join(res.Dir, "windows.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	rows, err := csv.NewReader(f2).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var after int64
	for _, r := range rows[1:] { // start_ms,end_ms,phase,op,ok,...
		start, _ := strconv.ParseFloat(r[0], 64)
		ok, _ := strconv.ParseInt(r[4], 10, 64)
		if r[3] == "NEW-ORDER" && start >= (3+8+8)*1000 {
			after += ok
		}
	}
	if after == 0 {
		t.Errorf("no New-Order committed from 8 s after the kill on\n%s", errb.String())
	}
}
