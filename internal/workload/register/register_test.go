package register

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/linear"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

// fakeKV is a store whose reads and writes take effect atomically (a
// linearizable register per key), unless stale: then every third read
// returns the value before the last write; failing makes every fifth write
// time out after it was applied.
type fakeKV struct {
	mu      sync.Mutex
	cur     map[string][]byte
	prev    map[string][]byte
	reads   int
	writes  int
	stale   bool
	failing bool
	// staleCAS: compare-and-sets compare against the value before the
	// last write (reads stay right).
	staleCAS bool
}

func (f *fakeKV) Read(_ context.Context, _, key string, _ []string) (map[string][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	v, ok := f.cur[key]
	if f.stale && f.reads%3 == 0 {
		v, ok = f.prev[key]
	}
	if !ok {
		return nil, fmt.Errorf("key %s: %w", key, outcome.ErrNotFound)
	}
	return map[string][]byte{DefaultField: v}, nil
}

func (f *fakeKV) Update(_ context.Context, _, key string, values map[string][]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if v, ok := f.cur[key]; ok {
		f.prev[key] = v
	}
	f.cur[key] = values[DefaultField]
	if f.failing && f.writes%5 == 0 {
		return outcome.Classified(outcome.Timeout, "update", errors.New("deadline exceeded"))
	}
	return nil
}

// CompareAndSet gives fakeKV the CASer ability; a stale store swaps
// against the value before the last write (a lost update).
func (f *fakeKV) CompareAndSet(_ context.Context, _, key, field string, old, new []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	cur, ok := f.cur[key]
	if f.staleCAS {
		cur, ok = f.prev[key]
	}
	if !ok || string(cur) != string(old) {
		return false, nil
	}
	if v, ok := f.cur[key]; ok {
		f.prev[key] = v
	}
	f.cur[key] = new
	if f.failing && f.writes%5 == 0 {
		return false, outcome.Classified(outcome.Timeout, "cas", errors.New("deadline exceeded"))
	}
	return true, nil
}

// kvOnly hides fakeKV's compare-and-set.
type kvOnly struct{ KV }

func run(t *testing.T, kv *fakeKV, workers, ops int) *wltest.Collector {
	t.Helper()
	return runCfg(t, kv, Config{Keys: 3, ReadProportion: 0.5, Field: DefaultField, Table: "usertable"}, workers, ops)
}

// runCfg runs ops operations on each of workers terminals at once and
// returns the recorded history.
func runCfg(t *testing.T, kv *fakeKV, cfg Config, workers, ops int) *wltest.Collector {
	t.Helper()
	w := NewWorkload(cfg)
	rec := &wltest.Collector{}
	w.SetRecorder(rec)
	wltest.Run(w, program.DB{Driver: kv}, workers, ops)
	return rec
}

func newKV() *fakeKV { return &fakeKV{cur: map[string][]byte{}, prev: map[string][]byte{}} }

// judge is the harness's verdict on a register history: the linearizable
// checker's.
func judge(t *testing.T, ops []history.Op) verdict.Verdict {
	t.Helper()
	v, err := linear.CheckOps(context.Background(), ops, linear.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLinearizable: the history the workload records is what the
// linearizable checker needs: a linearizable store's passes (with writes
// of unknown outcome too), a store with stale reads fails.
func TestLinearizable(t *testing.T) {
	tests := []struct {
		name         string
		kv           *fakeKV
		workers, ops int
		ok           bool
		expect       string
	}{
		{"linearizable store", newKV(), 4, 200, true, "valid=true"},
		// one worker: writes of unknown outcome stay open to the end of the
		// history, and with four workers how much else overlaps them is up
		// to the scheduler; on a loaded machine the search then ran into
		// the checker's 10 s limit per key. One worker makes the history's
		// shape the same on any machine; its reads still see the unknown
		// writes' values, which a checker dropping them would call stale.
		{"writes of unknown outcome", func() *fakeKV { f := newKV(); f.failing = true; return f }(), 1, 400, true, "valid=true"},
		{"stale reads", func() *fakeKV { f := newKV(); f.stale = true; return f }(), 4, 200, false, "nonlinearizable-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := run(t, tt.kv, tt.workers, tt.ops).Ops()
			if got, want := len(ops), tt.workers*tt.ops; got != want {
				t.Fatalf("%d operations recorded, want %d", got, want)
			}
			v := judge(t, ops)
			if (v.Valid == verdict.True) != tt.ok || !strings.Contains(v.Line()+fmt.Sprint(v.AnomalyCounts), tt.expect) {
				t.Fatalf("%s %v", v.Line(), v.AnomalyCounts)
			}
		})
	}
}

// TestUnknownWriteNewProcess: after a write of unknown outcome the worker
// continues as a new process.
func TestUnknownWriteNewProcess(t *testing.T) {
	kv := newKV()
	kv.failing = true
	h := runCfg(t, kv, Config{Keys: 1, ReadProportion: 0, Field: DefaultField, Table: "t"}, 1, 6).Ops()
	if h[4].Outcome != history.Unknown || h[4].Process != 0 || h[5].Process != recorded.ProcessStride {
		t.Fatalf("processes %d %d, outcome %s", h[4].Process, h[5].Process, h[4].Outcome)
	}
}

func TestNoKVDriver(t *testing.T) {
	w := NewWorkload(Config{Keys: 1, Field: DefaultField, Table: "t"})
	term := w.NewTerminal(0, 1)
	term.Next()
	if err := term.Execute(context.Background(), program.DB{Driver: struct{}{}}); outcome.ClassOf(err) != outcome.Rejected {
		t.Fatalf("err %v", err)
	}
}

func TestProperties(t *testing.T) {
	wltest.Properties(t, Kind{}, []wltest.PropertyCase{
		{Name: "defaults", Want: ""},
		{Name: "no keys", KV: []string{KeyKeys, "0"}, Want: "register.keys"},
		{Name: "bad proportion", KV: []string{KeyReadProp, "1.5"}, Want: "register.readproportion"},
		{Name: "not a number", KV: []string{KeyKeys, "many"}, Want: "register.keys"},
		{Name: "cas mix", KV: []string{KeyCASProp, "0.3", KeyReadProp, "0.4"}, Want: ""},
		{Name: "cas and reads over 1", KV: []string{KeyCASProp, "0.7", KeyReadProp, "0.5"}, Want: "add up to at most 1"},
		{Name: "bad field", KV: []string{KeyField, "v w"}, Want: KeyField},
	})
}

// TestRecorder: with a recorder set, every operation goes through it, timed
// on its clock.
func TestRecorder(t *testing.T) {
	rec := &wltest.Collector{Start: time.Now().Add(-time.Hour)}
	w := NewWorkload(Config{Keys: 2, ReadProportion: 0.5, Field: DefaultField, Table: "t"})
	w.SetRecorder(rec)
	wltest.Run(w, program.DB{Driver: newKV()}, 3, 10)
	ops := rec.Ops()
	if len(ops) != 30 {
		t.Fatalf("%d operations recorded, want 30", len(ops))
	}
	for i, op := range ops {
		if op.Invoke < int64(time.Hour) || op.Complete < op.Invoke {
			t.Fatalf("operation %d at %d..%d: not on the recorder's clock", i, op.Invoke, op.Complete)
		}
	}
}

// TestCAS: a mix with compare-and-sets on a store whose compare-and-sets
// are atomic is linearizable, some swap and some do not; on a store whose
// compare-and-sets compare against an older value (lost updates) it is
// not.
func TestCAS(t *testing.T) {
	cfg := Config{Keys: 2, ReadProportion: 0.3, CASProportion: 0.4, Field: DefaultField, Table: "t"}
	for _, tt := range []struct {
		name string
		kv   *fakeKV
		ok   bool
	}{
		{"atomic compare-and-set", newKV(), true},
		{"unknown outcomes", func() *fakeKV { f := newKV(); f.failing = true; return f }(), true},
		{"stale compare-and-set", func() *fakeKV { f := newKV(); f.staleCAS = true; return f }(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// the terminals take turns, so that one's compare-and-set
			// follows another's write of the same key
			w := NewWorkload(cfg)
			rec := &wltest.Collector{}
			w.SetRecorder(rec)
			terms := make([]program.Terminal, 4)
			for id := range terms {
				terms[id] = w.NewTerminal(id, 1)
			}
			for range 200 {
				for _, term := range terms {
					term.Next()
					_ = term.Execute(context.Background(), program.DB{Driver: tt.kv})
				}
			}
			ops := rec.Ops()
			if v := judge(t, ops); (v.Valid == verdict.True) != tt.ok {
				t.Fatalf("%s, want valid=%v", v.Line(), tt.ok)
			}
			swapped, refused := 0, 0
			for _, op := range ops {
				if op.Name == "cas" && op.Outcome == history.OK {
					swapped++
				}
				if op.Name == "cas" && op.Outcome == history.Fail {
					refused++
				}
			}
			if swapped == 0 || refused == 0 {
				t.Fatalf("%d compare-and-sets swapped, %d did not: want some of each", swapped, refused)
			}
		})
	}
}

// TestNoCAS: a compare-and-set mix on a driver without the ability is
// refused before the run, naming what it lacks; reads and writes only run.
func TestNoCAS(t *testing.T) {
	db := program.DB{Driver: kvOnly{newKV()}}
	w := NewWorkload(Config{Keys: 1, CASProportion: 0.5, Field: DefaultField, Table: "t"})
	if err := w.CheckDB(db); err == nil || !strings.Contains(err.Error(), "has no compare-and-set") || !strings.Contains(err.Error(), KeyCASProp) {
		t.Fatalf("CheckDB: %v", err)
	}
	if err := NewWorkload(Config{Keys: 1, Field: DefaultField, Table: "t"}).CheckDB(db); err != nil {
		t.Fatalf("CheckDB without compare-and-sets: %v", err)
	}
	if err := w.CheckDB(program.DB{Driver: struct{}{}}); err == nil || !strings.Contains(err.Error(), "cannot read and update") {
		t.Fatalf("CheckDB on no driver: %v", err)
	}
}

// sqlKV refuses to update a missing record, as the SQL driver does, and
// to insert an existing one.
type sqlKV struct{ *fakeKV }

func (s sqlKV) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	s.mu.Lock()
	_, ok := s.cur[key]
	s.mu.Unlock()
	if !ok {
		return outcome.Classified(outcome.NotFound, "update", outcome.ErrNotFound)
	}
	return s.fakeKV.Update(ctx, table, key, values)
}

func (s sqlKV) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	s.mu.Lock()
	_, ok := s.cur[key]
	s.mu.Unlock()
	if ok {
		return outcome.Classified(outcome.Rejected, "insert", errors.New("duplicate key"))
	}
	return s.fakeKV.Update(ctx, table, key, values)
}

// TestWriteCreatesRecord: a write to a key without a record inserts it.
func TestWriteCreatesRecord(t *testing.T) {
	kv := sqlKV{newKV()}
	w := NewWorkload(Config{Keys: 1, Field: DefaultField, Table: "t"})
	rec := &wltest.Collector{}
	w.SetRecorder(rec)
	term := w.NewTerminal(0, 1)
	for range 3 {
		term.Next()
		if err := term.Execute(context.Background(), program.DB{Driver: kv}); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range rec.Ops() {
		if op.Outcome != history.OK {
			t.Fatalf("write %+v", op)
		}
	}
}
