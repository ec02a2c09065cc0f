package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIsolationTxkvFailureKinds runs the isolation scenarios of txkv's
// failure kinds (scenarios/isolation-txkv-*.yaml: client crash as a real
// process kill, coordinator restart, whole node) by name, shortened (14 s
// measured, the fault 4 s in), and asserts that each gives a judged
// isolation verdict: summary.json's checks.isolation has valid true or
// false (not "unknown"), judged against snapshot isolation, over the
// transactions the run committed, and the fault schedule ran without an
// error. Whether txkv keeps snapshot isolation is what the full scenarios
// measure; a false verdict is logged, not failed.
func TestIsolationTxkvFailureKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real txkv clusters")
	}
	c := newCLI(t)
	short := []string{"--set", "load.duration=14s", "--set", "load.warmup=2s", "--set", "schedule.0.at=4s"}
	for _, tt := range []struct {
		name string
		set  []string
	}{
		{"isolation-txkv-client-crash", nil},
		{"isolation-txkv-coordinator-restart", []string{"--set", "schedule.1.at=7s"}},
		{"isolation-txkv-whole-node", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"scenario", tt.name}, short...), tt.set...)
			out, errs, code := c.run(3*time.Minute, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
			}
			runs, _ := filepath.Glob(filepath.Join(c.dir, "runs", "*-"+tt.name))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			var sum struct {
				Verdicts map[string]struct {
					Valid      any            `json:"valid"`
					Operations int64          `json:"operations"`
					Model      string         `json:"model"`
					Counts     map[string]int `json:"anomaly_counts"`
				} `json:"checks"`
				Errors []string `json:"errors"`
			}
			b, err := os.ReadFile(filepath.Join(runs[0], "summary.json"))
			if err != nil || json.Unmarshal(b, &sum) != nil {
				t.Fatalf("summary.json: %v", err)
			}
			v, ok := sum.Verdicts["isolation"]
			if !ok {
				t.Fatalf("summary.json has no checks.isolation\n%s", errs)
			}
			if v.Valid != true && v.Valid != false {
				t.Fatalf("checks.isolation.valid = %v: not judged\n%s", v.Valid, errs)
			}
			if v.Operations < 100 || v.Model != "snapshot-isolation" {
				t.Fatalf("checks.isolation: %d operations, model %q", v.Operations, v.Model)
			}
			for _, e := range sum.Errors {
				if strings.HasPrefix(e, "schedule:") {
					t.Fatalf("the fault schedule failed: %s", e)
				}
			}
			t.Logf("%s: valid=%v over %d operations, anomalies %v", tt.name, v.Valid, v.Operations, v.Counts)
		})
	}
}
