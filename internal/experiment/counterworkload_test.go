package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// The counter workload is the whole of adding a program workload with a
// check and a figure: this file's types, and one registry entry
// (TestCounterWorkload). Each worker increments its own counter
// (read-modify-write) and remembers how many increments were acknowledged;
// its check, counter-acked, reads every counter back; its figure is the
// number of acknowledged increments. counter.lose-every=N skips the write
// of every Nth increment while acknowledging it: the check's negative
// control.
type counterKind struct{}

func (counterKind) New(p *properties.Properties, _ int64) (program.Program, error) {
	p.Declare("counter.lose-every")
	n, err := p.Int("counter.lose-every", 0)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, p.Error("counter.lose-every", "must not be negative")
	}
	return &counter{loseEvery: n, acked: map[int]int64{}}, nil
}

func (counterKind) Checks() []program.Check {
	return []program.Check{{Name: "counter-acked", Doc: "that every acknowledged increment is in the database", Run: checkCounters}}
}

// counter is the configured workload: the acknowledged increments per
// worker.
type counter struct {
	loseEvery int64
	mu        sync.Mutex
	acked     map[int]int64
}

// kvStore is what the counter needs of the driver (program.DB.Driver).
type kvStore interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	Update(ctx context.Context, table, key string, values map[string][]byte) error
}

func (c *counter) OpNames() []string { return []string{"INCREMENT"} }

func (c *counter) NewTerminal(id int, _ int64) program.Terminal {
	return &counterTerminal{c: c, id: id}
}

func (c *counter) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, a := range c.acked {
		n += a
	}
	return n
}

// Summarize gives the figure, and the acknowledged increments under the
// key counter of summary.json.
func (c *counter) Summarize(program.Totals) program.Summary {
	n := c.total()
	return program.Summary{Key: "counter", Data: map[string]int64{"acknowledged": n},
		Figures: []program.Figure{{Group: "COUNTER", Name: "acknowledged increments", Value: float64(n)}}}
}

type counterTerminal struct {
	c  *counter
	id int
	n  int64 // increments acknowledged
}

func (t *counterTerminal) Next() (int, time.Duration) { return 0, 0 }

func (t *counterTerminal) Execute(ctx context.Context, db program.DB) error {
	kv, ok := db.Driver.(kvStore)
	if !ok {
		return fmt.Errorf("counter: the driver cannot read and update")
	}
	key := "c" + strconv.Itoa(t.id)
	var stored int64
	if r, err := kv.Read(ctx, "counter", key, nil); err == nil {
		stored, _ = strconv.ParseInt(string(r["n"]), 10, 64)
	}
	if t.c.loseEvery == 0 || (t.n+1)%t.c.loseEvery != 0 {
		if err := kv.Update(ctx, "counter", key, map[string][]byte{"n": []byte(strconv.FormatInt(stored+1, 10))}); err != nil {
			return err
		}
	}
	t.n++
	t.c.mu.Lock()
	t.c.acked[t.id] = t.n
	t.c.mu.Unlock()
	return nil
}

// checkCounters reads every worker's counter back: it must equal the
// increments acknowledged to the worker.
func checkCounters(ctx context.Context, w program.Program, db program.DB) (program.Verdict, error) {
	c := w.(*counter)
	kv, ok := db.Driver.(kvStore)
	if !ok {
		return program.Verdict{}, fmt.Errorf("the driver cannot read")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var bad []string
	for id, acked := range c.acked {
		r, err := kv.Read(ctx, "counter", "c"+strconv.Itoa(id), nil)
		if err != nil {
			return program.Verdict{}, err
		}
		if got, _ := strconv.ParseInt(string(r["n"]), 10, 64); got != acked {
			bad = append(bad, fmt.Sprintf("worker %d: %d of %d acknowledged increments", id, got, acked))
		}
	}
	if len(bad) > 0 {
		return program.Verdict{Text: fmt.Sprintf("%d of %d counters lost increments, first: %s", len(bad), len(c.acked), bad[0])}, nil
	}
	return program.Verdict{OK: true, Text: fmt.Sprintf("%d counters hold every acknowledged increment", len(c.acked))}, nil
}

// TestCounterWorkload adds the counter workload with one registry entry and
// runs it through RunScenario on an in-process target: its check's verdict
// and its figure land in summary.json, the terminal summary and
// report.html, PASS and,
// with increments lost on purpose, FAIL. A scenario naming an unknown check
// is refused with the registered ones; a check of another workload too.
func TestCounterWorkload(t *testing.T) {
	wreg, err := workload.NewRegistry(append(workload.Entries(), workload.Entry{Name: "counter", Doc: "per-worker counters (tests only)", Kind: counterKind{}})...)
	if err != nil {
		t.Fatal(err)
	}
	treg, err := targets.New(append(targets.Entries(), newMemTarget())...)
	if err != nil {
		t.Fatal(err)
	}
	doc := func(props, checks string) string {
		return "name: counter\ntarget: {kind: mem, endpoints: [here]}\nworkload: {ycsb: counter, properties: {" + props + "}}\n" +
			"load: {threads: 2, duration: 2s, warmup: 0s, rate: 200}\nchecks: [" + checks + "]\n"
	}
	run := func(t *testing.T, yaml string) (*experiment.ScenarioOutcome, string, error) {
		t.Helper()
		sc, err := scenario.ParseWith([]byte(yaml), "counter.yaml", nil, wreg)
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
			Scenario: sc, File: "counter.yaml", RunsDir: t.TempDir(), StateDir: t.TempDir(), Out: &out, Err: &errb, Quiet: true,
			Targets: treg, Workloads: wreg,
			OpenWorkload: func(string) (io.Reader, error) { return strings.NewReader("workload=counter\n"), nil },
		})
		return res, out.String() + errb.String(), err
	}
	for _, tc := range []struct {
		name, props string
		pass        bool
		verdict     string
	}{
		{"pass", "", true, "counter-acked check: PASS"},
		{"lost increments fail", "counter.lose-every: \"3\"", false, "counter-acked check: FAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := run(t, doc(tc.props, "counter-acked"))
			if err != nil {
				t.Fatalf("scenario: %v\n%s", err, out)
			}
			b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sum rundir.Summary
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			if ok, ran := sum.Checks["counter-acked"]; !ran || ok != tc.pass {
				t.Errorf("summary.json checks_passed %v, want counter-acked %v", sum.Checks, tc.pass)
			}
			if len(sum.Figures) != 1 || sum.Figures[0].Name != "acknowledged increments" || sum.Figures[0].Value <= 0 {
				t.Fatalf("summary.json workload_figures %+v", sum.Figures)
			}
			var own map[string]int64
			if err := json.Unmarshal(sum.Sections["counter"], &own); err != nil || float64(own["acknowledged"]) != sum.Figures[0].Value {
				t.Errorf("summary.json counter section %s (%v), figure %v", sum.Sections["counter"], err, sum.Figures[0].Value)
			}
			line := fmt.Sprintf("[COUNTER], acknowledged increments, %.1f", sum.Figures[0].Value)
			for _, want := range []string{line, tc.verdict} {
				if !strings.Contains(out, want) {
					t.Errorf("terminal summary lacks %q:\n%s", want, out)
				}
			}
			if failed := strings.Contains(strings.Join(sum.Errors, "\n"), "counter-acked: "); failed == tc.pass {
				t.Errorf("summary.json errors %v", sum.Errors)
			}
			html, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"COUNTER acknowledged increments", "counter-acked check"} {
				if !strings.Contains(string(html), want) {
					t.Errorf("report.html lacks %q", want)
				}
			}
		})
	}
	t.Run("unknown check refused with the registered ones", func(t *testing.T) {
		_, err := scenario.ParseWith([]byte(doc("", "counter-exact")), "counter.yaml", nil, wreg)
		if err == nil || !strings.Contains(err.Error(), `"counter-exact": allowed lost-writes, bank, counter-acked, isolation, linearizable, lost-appends, set, tpcc-consistency`) {
			t.Errorf("error %v", err)
		}
		// without the registry entry, the counter's check is unknown too
		if _, err := scenario.Parse([]byte(doc("", "counter-acked")), "counter.yaml", nil); err == nil || !strings.Contains(err.Error(), "allowed lost-writes, bank, isolation, linearizable, lost-appends, set, tpcc-consistency") {
			t.Errorf("built-in registry: error %v", err)
		}
	})
	t.Run("a target without what the workload needs refused", func(t *testing.T) {
		_, out, err := run(t, doc(`workload: tpcc, tpcc.items: "100", tpcc.customers-per-district: "30"`, ""))
		if err == nil || !strings.Contains(err.Error(), "the tpcc workload cannot run on mem: the target's driver has no transactions") {
			t.Errorf("error %v\n%s", err, out)
		}
	})
	t.Run("another workload's check refused", func(t *testing.T) {
		_, out, err := run(t, doc("", "tpcc-consistency"))
		if err == nil || !strings.Contains(err.Error(), "tpcc-consistency is a check of the tpcc workload; this scenario runs the counter workload") {
			t.Errorf("error %v\n%s", err, out)
		}
	})
}
