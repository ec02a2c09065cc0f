package appendset

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
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

func run(t *testing.T, l *fakeLists, workers, ops int) *Workload {
	t.Helper()
	w := NewWorkload(Config{Lists: 3, Prefix: "list"})
	var wg sync.WaitGroup
	for id := range workers {
		wg.Go(func() {
			term := w.NewTerminal(id, 1)
			for range ops {
				term.Next()
				_ = term.Execute(context.Background(), program.DB{Driver: l})
			}
		})
	}
	wg.Wait()
	return w
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
			w := run(t, l, 4, 100)
			v, lost, err := w.FinalCheck(context.Background(), l)
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
	w := run(t, l, 1, 6)
	h := w.History()
	if h[4].Outcome != history.Unknown || h[4].Process != 0 || h[5].Process != processStride {
		t.Fatalf("processes %d %d, outcome %s", h[4].Process, h[5].Process, h[4].Outcome)
	}
}

func TestNothingRecorded(t *testing.T) {
	w := NewWorkload(Config{Lists: 2, Prefix: "l"})
	if _, _, err := w.FinalCheck(context.Background(), newLists()); err == nil || !strings.Contains(err.Error(), "nothing was checked") {
		t.Fatalf("err %v", err)
	}
}

func TestFinalReadFails(t *testing.T) {
	l := newLists()
	l.readErrs = 100
	w := run(t, l, 1, 5)
	if _, _, err := w.FinalCheck(context.Background(), l); err == nil || !strings.Contains(err.Error(), "final read of list") {
		t.Fatalf("err %v", err)
	}
}

// recorder is a harness's Recorder.
type recorder struct {
	mu  sync.Mutex
	now int64
	ops []history.Op
}

func (r *recorder) Now() int64 { r.mu.Lock(); defer r.mu.Unlock(); r.now += 10; return r.now }

func (r *recorder) Record(op *history.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, *op)
}

// TestRecorder: appends and final reads go through the harness's
// recorder, on its clock.
func TestRecorder(t *testing.T) {
	rec := &recorder{now: 5_000}
	w := NewWorkload(Config{Lists: 2, Prefix: "l"})
	w.SetRecorder(rec)
	l := newLists()
	term := w.NewTerminal(0, 1)
	for range 10 {
		term.Next()
		_ = term.Execute(context.Background(), program.DB{Driver: l})
	}
	if _, _, err := w.FinalCheck(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if len(rec.ops) != 12 || rec.ops[11].Name != "read" || !rec.ops[11].Mops[0].IsList || rec.ops[0].Invoke <= 5_000 {
		t.Fatalf("recorded %+v", rec.ops)
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
	for _, tt := range []struct {
		name string
		kv   map[string]string
		want string
	}{
		{"defaults", nil, ""},
		{"no lists", map[string]string{KeyLists: "0"}, KeyLists},
		{"not a number", map[string]string{KeyLists: "few"}, KeyLists},
		{"prefix with a space", map[string]string{KeyPrefix: "a b"}, KeyPrefix},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := properties.New()
			for k, v := range tt.kv {
				p.Set(k, v)
			}
			_, err := Kind{}.New(p, 1)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}
