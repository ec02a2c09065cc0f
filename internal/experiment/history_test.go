package experiment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// The hreg workload is the smallest workload made for checking: each
// worker reads or writes (unique increasing values) one of two register
// keys and records every operation through the Recorder the harness gives
// it (program.Historian). It counts what it recorded, to compare with
// history.jsonl.
type hregKind struct{}

func (hregKind) New(*properties.Properties, int64) (program.Program, error) { return &hreg{}, nil }

type hreg struct {
	rec      program.Recorder
	next     atomic.Int64
	recorded atomic.Int64
}

func (w *hreg) SetRecorder(r program.Recorder) { w.rec = r }
func (w *hreg) OpNames() []string              { return []string{"READ", "WRITE"} }
func (w *hreg) NewTerminal(id int, seed int64) program.Terminal {
	return &hregTerminal{w: w, process: id, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id)))}
}

type hregTerminal struct {
	w       *hreg
	process int
	rng     *rand.Rand
	write   bool
	key     string
}

func (t *hregTerminal) Next() (int, time.Duration) {
	t.write = t.rng.IntN(2) == 0
	t.key = "r" + strconv.Itoa(t.rng.IntN(2))
	if t.write {
		return 1, 0
	}
	return 0, 0
}

func (t *hregTerminal) Execute(ctx context.Context, db program.DB) error {
	kv := db.Driver.(kvStore)
	rec := t.w.rec
	if rec == nil {
		return errors.New("hreg: no recorder: the harness did not treat the workload as a Historian")
	}
	op := history.Op{Process: t.process, Invoke: rec.Now()}
	var err error
	if t.write {
		v := t.w.next.Add(1)
		op.Name, op.Mops = "write", []history.Mop{{F: history.Write, Key: t.key, Value: v}}
		err = kv.Update(ctx, "reg", t.key, map[string][]byte{"v": []byte(strconv.FormatInt(v, 10))})
	} else {
		m := history.Mop{F: history.Read, Key: t.key}
		var r map[string][]byte
		r, err = kv.Read(ctx, "reg", t.key, nil)
		if err == nil {
			m.Value, _ = strconv.ParseInt(string(r["v"]), 10, 64)
			m.HasValue = true
		} else if errors.Is(err, outcome.ErrNotFound) {
			err = nil
		}
		op.Name, op.Mops = "read", []history.Mop{m}
	}
	op.Complete = rec.Now()
	if err != nil {
		op.Outcome = history.Unknown
		t.process += 1 << 20
	}
	rec.Record(&op)
	t.w.recorded.Add(1)
	return err
}

// lossyDriver acknowledges every dropEvery-th update without applying it:
// a database that breaks its promise (the negative control).
type lossyDriver struct {
	memDriver
	dropEvery int64
	n         *atomic.Int64
}

func (d lossyDriver) Update(ctx context.Context, table, key string, v map[string][]byte) error {
	if d.dropEvery > 0 && d.n.Add(1)%d.dropEvery == 0 {
		return nil
	}
	return d.memDriver.Update(ctx, table, key, v)
}

func (d lossyDriver) Insert(ctx context.Context, table, key string, v map[string][]byte) error {
	return d.Update(ctx, table, key, v)
}

// newLossyTarget is the mem target (one in-process map per target) whose
// drivers drop every dropEvery-th update (0: none).
func newLossyTarget(dropEvery int64) *targets.Target {
	t := newMemTarget()
	store := &memStore{rows: map[string]map[string][]byte{}}
	n := &atomic.Int64{}
	t.NewDriver = func(_ context.Context, p *properties.Properties) (driver.Driver, error) {
		if p.String("mem.addr", "") == "" {
			return nil, p.Error("mem.addr", "required")
		}
		return lossyDriver{memDriver: memDriver{store}, dropEvery: dropEvery, n: n}, nil
	}
	return t
}

// runHistoryScenario runs doc on a lossy mem target with the hreg
// workload registered.
func runHistoryScenario(t *testing.T, doc string, dropEvery int64, workloadFile string) (*experiment.ScenarioOutcome, string, error) {
	t.Helper()
	wreg, err := workload.NewRegistry(append(workload.Entries(), workload.Entry{Name: "hreg", Doc: "two registers, recorded (tests only)", Kind: hregKind{}})...)
	if err != nil {
		t.Fatal(err)
	}
	treg, err := targets.New(append(targets.Entries(), newLossyTarget(dropEvery))...)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.ParseWith([]byte(doc), "h.yaml", nil, wreg)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := experiment.RunScenario(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: "h.yaml", RunsDir: t.TempDir(), StateDir: t.TempDir(), Out: &out, Err: &errb, Quiet: true,
		Targets: treg, Workloads: wreg,
		OpenWorkload: func(string) (io.Reader, error) { return strings.NewReader(workloadFile), nil },
	})
	return res, out.String() + errb.String(), err
}

func readSummary(t *testing.T, dir string) rundir.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum rundir.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	// the JSON form the report and compare read: checks.<checker>.valid
	var raw struct {
		Checks map[string]struct {
			Valid json.RawMessage `json:"valid"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for name, v := range sum.Verdicts {
		if got, want := string(raw.Checks[name].Valid), map[verdict.Valid]string{verdict.True: "true", verdict.False: "false", verdict.Unknown: `"unknown"`}[v.Valid]; got != want {
			t.Errorf("summary.json checks.%s.valid = %s, want %s", name, got, want)
		}
	}
	return sum
}

// TestHistoryScenario: a run of a workload made for checking (hreg, a
// Historian) writes history.jsonl with every operation it recorded, and
// the scenario's history checker (linearizable) judges it in the same
// run: its verdict in summary.json's checks and checks_passed and on the
// terminal. Against a target that acknowledges writes it drops, the
// verdict is false. The CoreWorkload with history: true is judged the same
// way, its values the lost-write tags.
func TestHistoryScenario(t *testing.T) {
	const load = "load: {threads: 2, duration: 2s, warmup: 0s, rate: 300}\n"
	hregDoc := "name: h\ntarget: {kind: mem, endpoints: [here]}\nworkload: {ycsb: hreg}\n" + load + "checks: [linearizable]\n"
	coreDoc := "name: h\ntarget: {kind: mem, endpoints: [here]}\nworkload: {ycsb: core, properties: {recordcount: \"3\", readproportion: \"0.5\", updateproportion: \"0.5\", fieldcount: \"1\"}}\n" +
		load + "history: true\nchecks: [linearizable]\n"
	for _, tc := range []struct {
		name, doc, wl string
		drop          int64
		want          verdict.Valid
	}{
		{"historian kept its promise", hregDoc, "workload=hreg\n", 0, verdict.True},
		{"historian on a target that drops writes", hregDoc, "workload=hreg\n", 4, verdict.False},
		{"core workload with history", coreDoc, "workload=core\n", 0, verdict.True},
		{"core workload on a target that drops writes", coreDoc, "workload=core\n", 4, verdict.False},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := runHistoryScenario(t, tc.doc, tc.drop, tc.wl)
			if err != nil {
				t.Fatalf("scenario: %v\n%s", err, out)
			}
			ops, torn, err := history.ReadFile(filepath.Join(res.Dir, history.FileName))
			if err != nil || torn {
				t.Fatalf("history.jsonl: %v (torn %v)", err, torn)
			}
			sum := readSummary(t, res.Dir)
			v, ok := sum.Verdicts["linearizable"]
			if !ok {
				t.Fatalf("summary.json has no checks.linearizable: %+v\n%s", sum.Verdicts, out)
			}
			if v.Valid != tc.want || v.Operations != len(ops) || len(ops) < 50 {
				t.Fatalf("verdict %s over %d operations, history.jsonl %d operations; want valid=%s\n%s", v.Line(), v.Operations, len(ops), tc.want, out)
			}
			if passed, ran := sum.Checks["linearizable"]; !ran || passed != (tc.want == verdict.True) {
				t.Errorf("checks_passed %v", sum.Checks)
			}
			// the verdict once, in the summary's form; the check stage
			// only says what it checks
			if n := strings.Count(out, report.VerdictLine(&v)); n != 1 {
				t.Errorf("terminal has the verdict line %q %d times, want once:\n%s", report.VerdictLine(&v), n, out)
			}
			if strings.Contains(out, "\n"+v.Line()+"\n") {
				t.Errorf("terminal has the check stage's verdict line %q besides the summary's:\n%s", v.Line(), out)
			}
			if !strings.Contains(out, "checking linearizable on history.jsonl ...") {
				t.Errorf("terminal lacks the check stage's progress line:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(res.Dir, "checks", "linearizable.json")); err != nil {
				t.Errorf("the verdict file: %v", err)
			}
		})
	}
}

// TestHistoryChecksRefused: a history checker is refused for a workload
// that records no history (TPC-C), before anything runs.
func TestHistoryChecksRefused(t *testing.T) {
	doc := "name: h\ntarget: {kind: mem, endpoints: [here]}\nworkload: {ycsb: tpcc, properties: {tpcc.items: \"100\"}}\nload: {threads: 1, duration: 1s}\nchecks: [isolation]\n"
	_, out, err := runHistoryScenario(t, doc, 0, "workload=tpcc\n")
	if err == nil || !strings.Contains(err.Error(), "isolation read the run's operation history, and the tpcc workload records none") {
		t.Fatalf("error %v\n%s", err, out)
	}
}

// TestLostWritesPerOperation: a CoreWorkload scenario with history: true
// and checks: [lost-writes] reads every written key back into the history
// and judges every acknowledged write (summary.json's checks.lost-writes):
// valid on a target that keeps its promise; on one that drops every
// fourth update while acknowledging it, false, with at least as many lost
// writes as the final-state check counts (it counts each lost write, not
// only the last per key).
func TestLostWritesPerOperation(t *testing.T) {
	doc := "name: h\ntarget: {kind: mem, endpoints: [here]}\nworkload: {ycsb: core, properties: {recordcount: \"40\", readproportion: \"0.5\", updateproportion: \"0.5\", fieldcount: \"1\"}}\n" +
		"load: {threads: 2, duration: 2s, warmup: 0s, rate: 300}\nhistory: true\nchecks: [lost-writes]\n"
	for _, tc := range []struct {
		name string
		drop int64
		want verdict.Valid
	}{
		{"kept promise", 0, verdict.True},
		{"dropped updates", 4, verdict.False},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := runHistoryScenario(t, doc, tc.drop, "workload=core\n")
			if err != nil {
				t.Fatalf("scenario: %v\n%s", err, out)
			}
			sum := readSummary(t, res.Dir)
			v, ok := sum.Verdicts["lost-writes"]
			if !ok || sum.LostWrites == nil {
				t.Fatalf("no checks.lost-writes (%v) or lost_writes\n%s", sum.Verdicts, out)
			}
			lost := v.AnomalyCounts["lost-write"]
			if v.Valid != tc.want || lost < sum.LostWrites.LostWrites || v.Undecided > 0 {
				t.Fatalf("%s (%d undecided); final-state check %d lost; want valid=%s and at least as many\n%s", v.Line(), v.Undecided, sum.LostWrites.LostWrites, tc.want, out)
			}
			if passed := sum.Checks["lost-writes"]; passed != (tc.want == verdict.True) {
				t.Errorf("checks_passed.lost-writes %v", passed)
			}
			ops, _, err := history.ReadFile(filepath.Join(res.Dir, history.FileName))
			if err != nil {
				t.Fatal(err)
			}
			finals := 0
			for _, op := range ops {
				if op.Name == "final-read" {
					finals++
				}
			}
			if finals == 0 || int(v.Measures["keys_count"]) != finals {
				t.Errorf("%d final reads for %v written keys", finals, v.Measures["keys_count"])
			}
			t.Logf("%s; final-state check: %d lost", v.Line(), sum.LostWrites.LostWrites)
		})
	}
}
