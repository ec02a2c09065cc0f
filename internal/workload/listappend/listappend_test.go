package listappend

import (
	"context"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

func newWorkload(t *testing.T, kv ...string) *Workload {
	t.Helper()
	return wltest.NewProgram(t, Kind{}, kv...).(*Workload)
}

// TestSerialStore: on a store that runs one transaction at a time, the
// recorded history is judged serializable, with reads, appends and
// retired keys in it.
func TestSerialStore(t *testing.T) {
	w := newWorkload(t, KeyKeys, "3", KeyMaxAppends, "20")
	rec := &wltest.Collector{}
	w.SetRecorder(rec)
	wltest.Run(w, wltest.NewSerialStore().DB(), 4, 200)
	ops := rec.Ops()
	if len(ops) != 800 {
		t.Fatalf("recorded %d operations, want 800", len(ops))
	}
	keys := map[string]bool{}
	var reads, appends, nonEmpty int
	for _, op := range ops {
		if op.Outcome != history.OK || op.Invoke >= op.Complete || op.Name != "txn" {
			t.Fatalf("operation %+v", op)
		}
		for _, m := range op.Mops {
			keys[m.Key] = true
			switch m.F {
			case history.Read:
				reads++
				if !m.IsList {
					t.Fatalf("read %+v is not a list read", m)
				}
				if len(m.List) > 0 {
					nonEmpty++
				}
			case history.Append:
				appends++
			}
		}
	}
	if reads == 0 || appends == 0 || nonEmpty == 0 || len(keys) <= 3 {
		t.Fatalf("%d reads (%d non-empty), %d appends, %d keys: want all kinds and retired keys", reads, nonEmpty, appends, len(keys))
	}
	v, err := elle.CheckOps(context.Background(), ops, elle.Options{Model: "strict-serializable"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.True {
		t.Fatalf("a serial store's history judged %s: %v", v.Line(), v.Anomalies)
	}
}

// TestLostAppendIsCaught: a store that applies each append on the
// state the transaction began from but forgets earlier ones (the commit
// of a transaction discards the writes of the transaction before it)
// makes histories the checker rejects: the workload's records carry what
// the checker needs.
func TestLostAppendIsCaught(t *testing.T) {
	w := newWorkload(t, KeyKeys, "1", KeyReadProp, "0.5", KeyTxnLen, "2")
	rec := &wltest.Collector{}
	w.SetRecorder(rec)
	s := wltest.NewSerialStore()
	term := w.NewTerminal(0, 3)
	for i := range 60 {
		term.Next()
		_ = term.Execute(context.Background(), s.DB())
		if i == 30 { // the store loses its state: committed appends vanish
			s.Forget()
		}
	}
	v, err := elle.CheckOps(context.Background(), rec.Ops(), elle.Options{Model: "read-committed"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.False {
		t.Fatalf("lost appends judged %s", v.Line())
	}
}

// TestOutcomes: how each error becomes the recorded outcome, and the new
// process after an unknown one.
func TestOutcomes(t *testing.T) {
	wltest.Outcomes(t, func(t *testing.T, _ *wltest.SerialStore) program.Program {
		return newWorkload(t, KeyReadProp, "1", KeyTxnLen, "1")
	})
}

// TestRefused: a target without transactions is refused, naming what it
// lacks.
func TestRefused(t *testing.T) { wltest.Refused(t, newWorkload(t)) }

func TestConfig(t *testing.T) {
	wltest.Properties(t, Kind{}, []wltest.PropertyCase{
		{Name: "defaults"},
		{Name: "zero keys", KV: []string{KeyKeys, "0"}, Want: KeyKeys},
		{Name: "bad writer base", KV: []string{recorded.KeyWriterBase, "-1"}, Want: recorded.KeyWriterBase},
		{Name: "bad read proportion", KV: []string{KeyReadProp, "1.5"}, Want: KeyReadProp},
		{Name: "bad table", KV: []string{KeyTable, "a;drop"}, Want: KeyTable},
		{Name: "not a number", KV: []string{KeyTxnLen, "many"}, Want: KeyTxnLen},
		{Name: "zero max appends", KV: []string{KeyMaxAppends, "0"}, Want: KeyMaxAppends},
	})
}

func TestListFormat(t *testing.T) {
	for _, l := range [][]int64{{}, {1}, {3, 1, 2}} {
		got, err := ParseList(FormatList(l))
		if err != nil || len(got) != len(l) {
			t.Fatalf("%v -> %q -> %v, %v", l, FormatList(l), got, err)
		}
	}
	if _, err := ParseList("1,x"); err == nil {
		t.Fatal("garbage parsed")
	}
}

// TestProcessesMerged: two client processes (two workloads, as distrib
// starts them, with writer bases 0 and 4: recorded.ValueBase) run on one
// database; their histories merged as the harness merges them are judged
// serializable. The negative control gives both processes the same base:
// both append the same values, and the checker, which takes every value
// for one append, cannot judge the history (it refuses a value appended
// twice) or finds an anomaly that is not there.
func TestProcessesMerged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bases  [2]string
		wantOK bool
	}{
		{"distinct bases", [2]string{"0", "4"}, true},
		{"colliding bases", [2]string{"0", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := wltest.NewSerialStore()
			start := time.Now()
			var parts [2][]history.Op
			var ws [2]*Workload
			var recs [2]*wltest.Collector
			for i := range ws {
				ws[i] = newWorkload(t, KeyKeys, "2", KeyMaxAppends, "1000", recorded.KeyWriterBase, tc.bases[i])
				recs[i] = &wltest.Collector{Start: start}
				ws[i].SetRecorder(recs[i])
			}
			// the processes take turns, so that each reads the other's appends
			terms := [2]program.Terminal{ws[0].NewTerminal(0, 1), ws[1].NewTerminal(0, 2)}
			for range 100 {
				for _, term := range terms {
					term.Next()
					if err := term.Execute(context.Background(), s.DB()); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := range parts {
				parts[i] = recs[i].Ops()
			}
			ops := wltest.ReadHistory(t, wltest.Merge(t, parts[0], parts[1]))
			if len(ops) != 200 || ops[0].Process == ops[1].Process {
				t.Fatalf("merged %d operations, processes %d and %d", len(ops), ops[0].Process, ops[1].Process)
			}
			v, err := elle.CheckOps(context.Background(), ops, elle.Options{Model: "strict-serializable"})
			switch {
			case tc.wantOK && err != nil:
				t.Fatal(err)
			case tc.wantOK && v.Valid != verdict.True:
				t.Fatalf("%s %v", v.Line(), v.AnomalyCounts)
			case !tc.wantOK && err == nil && v.Valid == verdict.True:
				t.Fatalf("colliding values judged %s", v.Line())
			case err != nil:
				t.Logf("%s: the checker refuses the history: %v", tc.name, err)
			default:
				t.Logf("%s: %s %v", tc.name, v.Line(), v.AnomalyCounts)
			}
		})
	}
}
