package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/targets"
)

// memDriver is an in-process store: the trivial database of the fake target.
type memDriver struct {
	mu   sync.Mutex
	rows map[string]map[string][]byte
}

func newMemDriver(_ context.Context, p *properties.Properties) (driver.Driver, error) {
	if p.String("mem.addr", "") == "" {
		return nil, p.Error("mem.addr", "required")
	}
	return &memDriver{rows: map[string]map[string][]byte{}}, nil
}

func (d *memDriver) Read(_ context.Context, _, key string, _ []string) (map[string][]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.rows[key]
	if !ok {
		return nil, outcome.Classified(outcome.Other, "read", outcome.ErrNotFound)
	}
	return r, nil
}

func (d *memDriver) Scan(_ context.Context, _, start string, n int, _ []string) ([]map[string][]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var keys []string
	for k := range d.rows {
		if k >= start {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []map[string][]byte
	for i := 0; i < len(keys) && i < n; i++ {
		out = append(out, d.rows[keys[i]])
	}
	return out, nil
}

func (d *memDriver) Update(_ context.Context, _, key string, v map[string][]byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.rows[key]
	if r == nil {
		r = map[string][]byte{}
		d.rows[key] = r
	}
	for f, b := range v {
		r[f] = b
	}
	return nil
}

func (d *memDriver) Insert(ctx context.Context, t, key string, v map[string][]byte) error {
	return d.Update(ctx, t, key, v)
}

func (d *memDriver) Delete(_ context.Context, _, key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.rows, key)
	return nil
}

func (d *memDriver) Close() error { return nil }

// memTarget is the whole of adding a target: one entry.
var memTarget = &targets.Target{
	Kind: "mem", Help: "an in-process map (tests only)", Docs: "docs/targets.md",
	NewDriver: newMemDriver, EndpointKey: "mem.addr", PropertyPrefix: "mem.",
	DefaultVictim: "random",
	Size: targets.Sizing{Nodes: 1, NodesAre: "maps", FaultTolerance: func(int, int) int { return 0 },
		ForK: func(k, _ int) (int, int, error) { return k + 1, 0, nil }},
}

// TestFakeTarget adds a target by one registry entry and uses it through
// the command line: help lists it, load and run write a run directory, a
// scenario on its endpoints runs, and what needs a launcher or a fault
// tolerance it lacks is refused with a message naming it.
func TestFakeTarget(t *testing.T) {
	reg, err := targets.New(append(targets.Entries(), memTarget)...)
	if err != nil {
		t.Fatal(err)
	}
	runApp := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, targets: reg}
		a.commands = commands()
		code := a.main(args)
		return out.String(), errb.String(), code
	}
	runs := t.TempDir()
	wl := "../../workloads/workloada"

	t.Run("help lists it", func(t *testing.T) {
		out, errb, _ := runApp("run", "--help")
		if !strings.Contains(out+errb, "mem") {
			t.Errorf("run --help does not list the fake target:\n%s%s", out, errb)
		}
	})
	t.Run("load and run", func(t *testing.T) {
		for _, phase := range []string{"load", "run"} {
			out, errb, code := runApp(phase, "mem", "-P", wl, "-p", "mem.addr=here", "-p", "recordcount=100",
				"-p", "operationcount=200", "-runs", runs, "-q")
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", phase, code, out, errb)
			}
		}
		dirs, _ := filepath.Glob(filepath.Join(runs, "*-run-mem"))
		if len(dirs) != 1 {
			t.Fatalf("run directories %v", dirs)
		}
		b, err := os.ReadFile(filepath.Join(dirs[0], "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum rundir.Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		// each command builds its own in-process store: the run's reads of
		// keys the load wrote elsewhere fail, its updates succeed
		if sum.Target != "mem" || sum.Totals.Operations != 200 || sum.Totals.OK == 0 {
			t.Errorf("summary target %q, %d operations, %d ok; want mem, 200, some", sum.Target, sum.Totals.Operations, sum.Totals.OK)
		}
	})
	t.Run("scenario on endpoints", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "mem.yaml")
		sc := "name: mem-scenario\ntarget: {kind: mem, endpoints: [here]}\nworkload: {ycsb: " + wl +
			", properties: {recordcount: 50}}\nload: {threads: 2, duration: 2s, warmup: 0s, rate: 200}\n"
		if err := os.WriteFile(file, []byte(sc), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errb, code := runApp("scenario", file, "--runs", runs, "-q")
		if code != 0 {
			t.Fatalf("scenario: exit %d\n%s%s", code, out, errb)
		}
	})
	t.Run("cluster up is refused", func(t *testing.T) {
		_, errb, code := runApp("cluster", "up", "mem", "--state-dir", t.TempDir())
		if code == 0 || !strings.Contains(errb, "cannot start mem clusters") {
			t.Errorf("exit %d, stderr %q", code, errb)
		}
	})
	t.Run("UPB sizing", func(t *testing.T) {
		if _, _, err := memTarget.ForK(1, 0); err == nil || !strings.Contains(err.Error(), "tolerate 0 failures, not K=1") {
			t.Errorf("ForK(1) error %v", err)
		}
		if n, _, err := memTarget.ForK(0, 0); err != nil || n != 1 {
			t.Errorf("ForK(0) = %d, %v", n, err)
		}
	})
}
