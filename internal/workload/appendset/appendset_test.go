package appendset

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

// fakeLists keeps lists in memory. dropEvery > 0 acknowledges every
// dropEvery-th append without keeping it (a lost acknowledged append);
// failEvery > 0 keeps every failEvery-th append but reports a timeout
// (applied, outcome unknown); timeoutDrop drops those too.
type fakeLists struct {
	mu          sync.Mutex
	lists       map[string][][]byte
	n           int
	dropEvery   int
	failEvery   int
	timeoutDrop bool
	readErrs    int // the first readErrs reads fail
	foreign     bool
}

func newLists() *fakeLists { return &fakeLists{lists: map[string][][]byte{}} }

func (f *fakeLists) ListAppend(_ context.Context, key string, value []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	switch {
	case f.dropEvery > 0 && f.n%f.dropEvery == 0:
		return nil
	case f.failEvery > 0 && f.n%f.failEvery == 0:
		if !f.timeoutDrop {
			f.lists[key] = append(f.lists[key], value)
		}
		return outcome.Classified(outcome.Timeout, "append", errors.New("i/o timeout"))
	}
	f.lists[key] = append(f.lists[key], value)
	return nil
}

func (f *fakeLists) ListRead(_ context.Context, key string) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErrs > 0 {
		f.readErrs--
		return nil, outcome.Classified(outcome.Unavailable, "list read", errors.New("connection refused"))
	}
	l := append([][]byte(nil), f.lists[key]...)
	if f.foreign {
		l = append(l, []byte(strconv.Itoa(1<<40)))
	}
	return l, nil
}

// run runs ops appends on each of workers terminals at once and returns
// the workload and its recorded history.
func run(t *testing.T, l *fakeLists, workers, ops int) (*Workload, *wltest.Collector) {
	t.Helper()
	return runBase(l, 0, workers, ops)
}

// runBase is run by a client process whose values start after base.
func runBase(l *fakeLists, base int64, workers, ops int) (*Workload, *wltest.Collector) {
	w := NewWorkload(Config{Lists: 3, Prefix: "list", ValueBase: base})
	rec := &wltest.Collector{}
	w.SetRecorder(rec)
	wltest.Run(w, program.DB{Driver: l}, workers, ops)
	return w, rec
}

// finalCheck runs the check on a history file of ops.
func finalCheck(t *testing.T, w *Workload, l *fakeLists, ops []history.Op) (verdict.Verdict, []Lost, error) {
	t.Helper()
	return w.FinalCheck(context.Background(), l, program.HistoryFile{Path: wltest.WriteHistory(t, ops), Start: time.Now()})
}

func TestFinalCheck(t *testing.T) {
	tests := []struct {
		name  string
		lists func() *fakeLists
		valid verdict.Valid
		lost  int
	}{
		{"every append kept", newLists, verdict.True, 0},
		{"acknowledged appends dropped", func() *fakeLists { f := newLists(); f.dropEvery = 7; return f }, verdict.False, 400 / 7},
		{"unknown appends applied", func() *fakeLists { f := newLists(); f.failEvery = 5; return f }, verdict.True, 0},
		{"unknown appends dropped", func() *fakeLists { f := newLists(); f.failEvery = 5; f.timeoutDrop = true; return f }, verdict.True, 0},
		{"a final read fails, then succeeds", func() *fakeLists { f := newLists(); f.readErrs = 2; return f }, verdict.True, 0},
		{"an element nobody appended", func() *fakeLists { f := newLists(); f.foreign = true; return f }, verdict.False, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.lists()
			w, rec := run(t, l, 4, 100)
			v, lost, err := finalCheck(t, w, l, rec.Ops())
			if err != nil {
				t.Fatal(err)
			}
			if v.Valid != tt.valid || len(lost) != tt.lost {
				t.Fatalf("valid %s, %d lost; want %s, %d: %s", v.Valid, len(lost), tt.valid, tt.lost, Describe(v, lost))
			}
			text := Describe(v, lost)
			for i, x := range lost {
				if i > 0 && x.Complete < lost[i-1].Complete {
					t.Fatalf("lost appends not in acknowledgement order: %+v", lost)
				}
				if !strings.Contains(text, "lost "+x.Key+" "+strconv.FormatInt(x.Value, 10)+" acknowledged") {
					t.Fatalf("lost append %+v not named in %q", x, text)
				}
			}
		})
	}
}

func TestUnknownAppendNewProcess(t *testing.T) {
	l := newLists()
	l.failEvery = 5
	_, rec := run(t, l, 1, 6)
	h := rec.Ops()
	if h[4].Outcome != history.Unknown || h[4].Process != 0 || h[5].Process != recorded.ProcessStride {
		t.Fatalf("processes %d %d, outcome %s", h[4].Process, h[5].Process, h[4].Outcome)
	}
}

func TestNothingRecorded(t *testing.T) {
	w := NewWorkload(Config{Lists: 2, Prefix: "l"})
	if _, _, err := finalCheck(t, w, newLists(), nil); err == nil || !strings.Contains(err.Error(), "nothing was checked") {
		t.Fatalf("err %v", err)
	}
}

func TestFinalReadFails(t *testing.T) {
	l := newLists()
	l.readErrs = 100
	w, rec := run(t, l, 1, 5)
	if _, _, err := finalCheck(t, w, l, rec.Ops()); err == nil || !strings.Contains(err.Error(), "final read of list") {
		t.Fatalf("err %v", err)
	}
}

// TestFinalReadsInHistory: the final reads are appended to the run's
// history, as list reads of a process of their own, on the run's clock.
func TestFinalReadsInHistory(t *testing.T) {
	l := newLists()
	w, rec := run(t, l, 2, 5)
	path := wltest.WriteHistory(t, rec.Ops())
	start := time.Now().Add(-time.Hour)
	if _, _, err := w.FinalCheck(context.Background(), l, program.HistoryFile{Path: path, Start: start}); err != nil {
		t.Fatal(err)
	}
	ops := wltest.ReadHistory(t, path)
	if len(ops) != 13 {
		t.Fatalf("%d operations in the history, want 10 appends and 3 final reads", len(ops))
	}
	for _, op := range ops[10:] {
		if op.Name != "read" || !op.Mops[0].IsList || op.Process != 2 || op.Invoke < int64(time.Hour) {
			t.Fatalf("final read %+v", op)
		}
	}
}

// TestMergedProcesses: the check judges the merged history of every
// client process, so a lost append is found whichever process made it.
// Two client processes (value bases 0 and recorded.ValueSpan) append to
// the same lists, which drop every 7th acknowledged append: every lost
// one of both is named. The negative control judges process 0's history
// alone, as the check once did: process 1's lost appends go unnamed.
func TestMergedProcesses(t *testing.T) {
	l := newLists()
	l.dropEvery = 7
	w0, rec0 := runBase(l, 0, 2, 100)
	_, rec1 := runBase(l, recorded.ValueSpan, 2, 100)
	merged := wltest.Merge(t, rec0.Ops(), rec1.Ops())
	v, lost, err := w0.FinalCheck(context.Background(), l, program.HistoryFile{Path: merged, Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	byProcess := [2]int{}
	for _, x := range lost {
		byProcess[x.Value/recorded.ValueSpan]++
	}
	if v.Valid != verdict.False || len(lost) != 400/7 || byProcess[0] == 0 || byProcess[1] == 0 {
		t.Fatalf("merged: %d lost (%v by process), want %d from both: %s", len(lost), byProcess, 400/7, Describe(v, lost))
	}
	_, alone, err := finalCheck(t, w0, l, rec0.Ops())
	if err != nil {
		t.Fatal(err)
	}
	if len(alone) != byProcess[0] {
		t.Fatalf("process 0 alone: %d lost, want its own %d", len(alone), byProcess[0])
	}
}

func TestRequirer(t *testing.T) {
	w := NewWorkload(Config{Lists: 1, Prefix: "l"})
	if err := w.CheckDB(program.DB{Driver: struct{}{}}); err == nil || !strings.Contains(err.Error(), "has no lists") {
		t.Fatalf("err %v", err)
	}
	if err := w.CheckDB(program.DB{Driver: newLists()}); err != nil {
		t.Fatal(err)
	}
	term := w.NewTerminal(0, 1)
	term.Next()
	if err := term.Execute(context.Background(), program.DB{Driver: struct{}{}}); outcome.ClassOf(err) != outcome.Rejected {
		t.Fatalf("err %v", err)
	}
}

func TestProperties(t *testing.T) {
	wltest.Properties(t, Kind{}, []wltest.PropertyCase{
		{Name: "defaults", Want: ""},
		{Name: "no lists", KV: []string{KeyLists, "0"}, Want: KeyLists},
		{Name: "not a number", KV: []string{KeyLists, "few"}, Want: KeyLists},
		{Name: "prefix with a space", KV: []string{KeyPrefix, "a b"}, Want: KeyPrefix},
	})
}
