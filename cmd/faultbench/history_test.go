package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/targets"
)

// lossyDriver acknowledges every fourth update without applying it
// (lossy.drop=true): a database that breaks its promise.
type lossyDriver struct {
	*memDriver
	drop bool
	n    atomic.Int64
}

// Update stores a copy of the values, as a database does (the caller
// reuses its buffers: the lost-write tag is one).
func (d *lossyDriver) Update(ctx context.Context, t, key string, v map[string][]byte) error {
	if d.drop && d.n.Add(1)%4 == 0 {
		return nil
	}
	c := make(map[string][]byte, len(v))
	for f, b := range v {
		c[f] = bytes.Clone(b)
	}
	return d.memDriver.Update(ctx, t, key, c)
}

// Read returns a copy of the record, as a database does.
func (d *lossyDriver) Read(_ context.Context, _, key string, _ []string) (map[string][]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.rows[key]
	if !ok {
		return nil, outcome.Classified(outcome.Other, "read", outcome.ErrNotFound)
	}
	c := make(map[string][]byte, len(r))
	for f, b := range r {
		c[f] = bytes.Clone(b)
	}
	return c, nil
}

func (d *lossyDriver) Insert(ctx context.Context, t, key string, v map[string][]byte) error {
	return d.Update(ctx, t, key, v)
}

var lossyTarget = &targets.Target{
	Kind: "lossy", Help: "an in-process map that may drop acknowledged updates (tests only)", Docs: "docs/targets.md",
	NewDriver: func(ctx context.Context, p *properties.Properties) (driver.Driver, error) {
		drop, err := p.Bool("lossy.drop", false)
		if err != nil {
			return nil, err
		}
		if p.String("lossy.addr", "") == "" {
			return nil, p.Error("lossy.addr", "required")
		}
		return &lossyDriver{memDriver: &memDriver{rows: map[string]map[string][]byte{}}, drop: drop}, nil
	},
	EndpointKey: "lossy.addr", PropertyPrefix: "lossy.", DefaultVictim: "random",
	Size: targets.Sizing{Nodes: 1, NodesAre: "maps", FaultTolerance: func(int, int) int { return 0 },
		ForK: func(k, _ int) (int, int, error) { return k + 1, 0, nil }},
}

// TestFailOnAnomaly: `run --check` and a scenario's history checkers judge
// the run's history.jsonl in the same run, the verdict in summary.json's
// checks; with --fail-on-anomaly a false verdict exits 3 and a true one 0;
// without it the run exits 0 whatever the verdict. Bad flags exit 2.
func TestFailOnAnomaly(t *testing.T) {
	reg, err := targets.New(append(targets.Entries(), lossyTarget)...)
	if err != nil {
		t.Fatal(err)
	}
	runApp := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, targets: reg}
		a.commands = commands()
		code := a.main(args)
		return out.String() + errb.String(), code
	}
	wl := "../../workloads/workloada"
	// onceOnTerminal: the checker's verdict is on the terminal once, in
	// the summary's form ("linearizable verdict: ..."), not also as the
	// check stage's bare line
	onceOnTerminal := func(t *testing.T, out string) {
		t.Helper()
		if n := strings.Count(out, "linearizable verdict: "); n != 1 {
			t.Errorf("the verdict is on the terminal %d times, want once:\n%s", n, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "linearizable") && strings.Contains(l, "valid=") && !strings.HasPrefix(l, "linearizable verdict: ") {
				t.Errorf("the check stage printed the verdict too: %q\n%s", l, out)
			}
		}
	}
	verdictOf := func(t *testing.T, runs string) verdict.Valid {
		t.Helper()
		dirs, _ := filepath.Glob(filepath.Join(runs, "*", "summary.json"))
		if len(dirs) != 1 {
			t.Fatalf("run directories %v", dirs)
		}
		b, err := os.ReadFile(dirs[0])
		if err != nil {
			t.Fatal(err)
		}
		var sum rundir.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		v, ok := sum.Verdicts["linearizable"]
		if !ok {
			t.Fatalf("summary.json has no checks.linearizable:\n%s", b)
		}
		return v.Valid
	}
	for _, tc := range []struct {
		name   string
		drop   bool
		failOn bool
		code   int
		valid  verdict.Valid
	}{
		{"kept promise, fail-on-anomaly", false, true, 0, verdict.True},
		{"dropped writes, fail-on-anomaly", true, true, exitAnomaly, verdict.False},
		{"dropped writes, no fail-on-anomaly", true, false, 0, verdict.False},
	} {
		t.Run("run "+tc.name, func(t *testing.T) {
			runs := t.TempDir()
			args := []string{"run", "lossy", "-P", wl, "-p", "lossy.addr=here", "-p", "recordcount=3", "-p", "lossy.drop=" + map[bool]string{true: "true", false: "false"}[tc.drop],
				"-p", "maxexecutiontime=2", "-p", "operationcount=0", "-threads", "2", "-target", "300", "-runs", runs, "-q", "--check", "linearizable"}
			if tc.failOn {
				args = append(args, "--fail-on-anomaly")
			}
			out, code := runApp(args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			if v := verdictOf(t, runs); v != tc.valid {
				t.Errorf("valid=%s, want %s", v, tc.valid)
			}
			onceOnTerminal(t, out)
		})
		t.Run("scenario "+tc.name, func(t *testing.T) {
			runs := t.TempDir()
			file := filepath.Join(t.TempDir(), "s.yaml")
			sc := "name: lossy\ntarget: {kind: lossy, endpoints: [here], driver: {lossy.drop: \"" + map[bool]string{true: "true", false: "false"}[tc.drop] + "\"}}\n" +
				"workload: {ycsb: " + wl + ", properties: {recordcount: \"3\"}}\nload: {threads: 2, duration: 2s, warmup: 0s, rate: 300}\nchecks: [linearizable]\n"
			if err := os.WriteFile(file, []byte(sc), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"scenario", file, "--runs", runs, "-q"}
			if tc.failOn {
				args = append(args, "--fail-on-anomaly")
			}
			out, code := runApp(args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			if v := verdictOf(t, runs); v != tc.valid {
				t.Errorf("valid=%s, want %s", v, tc.valid)
			}
			onceOnTerminal(t, out)
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown checker", []string{"--check", "knossos"}, `--check "knossos": allowed`},
		{"fail-on-anomaly without a checker", []string{"--fail-on-anomaly"}, "needs a --check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runApp(append([]string{"run", "lossy", "-p", "lossy.addr=here", "-runs", t.TempDir(), "-q"}, tc.args...)...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 2 and %q:\n%s", code, tc.want, out)
			}
		})
	}
}
