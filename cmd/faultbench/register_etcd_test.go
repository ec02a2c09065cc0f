package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRegisterLinearizableEtcd is the linearizable checker's control on a
// real database: the register workload on a 3-member etcd cluster passes
// with etcd's default linearizable reads, and fails with serializable
// reads (any member answers from its own, possibly stale, state) on two
// contended keys; with compare-and-sets in the mix (etcd transactions) and
// linearizable reads it passes too.
func TestRegisterLinearizableEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd clusters")
	}
	c := newCLI(t)
	for _, tt := range []struct {
		name         string
		serializable string
		cas          string
		want         bool
	}{
		{"linearizable reads pass", "false", "0", true},
		{"serializable reads fail", "true", "0", false},
		{"compare-and-sets with linearizable reads pass", "false", "0.3", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "register-etcd-" + tt.serializable + "-cas" + strings.ReplaceAll(tt.cas, ".", "")
			sc := "name: " + name + `
target: {kind: etcd, nodes: 3}
workload:
  ycsb: register
  properties: {etcd.serializable: "` + tt.serializable + `", register.keys: "2", register.casproportion: "` + tt.cas + `"}
load: {threads: 8, warmup: 2s, duration: 15s, window: 1s}
checks: [linearizable]
`
			file := filepath.Join(c.dir, name+".yaml")
			if err := os.WriteFile(file, []byte(sc), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, code := c.run(4*time.Minute, "scenario", file)
			if code != 0 {
				t.Fatalf("scenario: exit %d\n%s\n%s", code, out, errs)
			}
			runs, _ := filepath.Glob(filepath.Join(c.dir, "runs", "*-"+name))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			var sum struct {
				Checks map[string]bool `json:"checks_passed"`
				Totals struct {
					PerOp map[string]struct {
						Count int64 `json:"count"`
					} `json:"per_op"`
				} `json:"totals"`
			}
			b, err := os.ReadFile(filepath.Join(runs[0], "summary.json"))
			if err != nil || json.Unmarshal(b, &sum) != nil {
				t.Fatalf("summary.json: %v", err)
			}
			passed, ok := sum.Checks["linearizable"]
			if !ok || passed != tt.want {
				t.Fatalf("checks_passed.linearizable = %v (present %v), want %v\n%s", passed, ok, tt.want, errs)
			}
			if n := sum.Totals.PerOp["CAS"].Count; (n > 0) != (tt.cas != "0") {
				t.Errorf("%d compare-and-sets with %s=%s", n, "register.casproportion", tt.cas)
			}
			if !tt.want && !strings.Contains(out+errs, "nonlinearizable-key") {
				t.Errorf("no failed key explained:\n%s\n%s", out, errs)
			}
		})
	}
}
