package rwregister

import (
	"context"
	"testing"

	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

func newWorkload(t *testing.T, kv ...string) *Workload {
	t.Helper()
	return wltest.NewProgram(t, Kind{}, kv...).(*Workload)
}

// TestSerialStore: on a store that runs one transaction at a time, the
// recorded history is judged serializable, with reads and writes, every
// write after a read of its key.
func TestSerialStore(t *testing.T) {
	w := newWorkload(t, KeyKeys, "3")
	rec := &wltest.Collector{}
	w.SetRecorder(rec)
	wltest.Run(w, wltest.NewSerialStore().DB(), 4, 200)
	ops := rec.Ops()
	if len(ops) != 800 {
		t.Fatalf("recorded %d operations, want 800", len(ops))
	}
	keys := map[string]bool{}
	var reads, writes, nonEmpty int
	for _, op := range ops {
		if op.Outcome != history.OK || op.Invoke >= op.Complete || op.Name != "txn" {
			t.Fatalf("operation %+v", op)
		}
		for i, m := range op.Mops {
			keys[m.Key] = true
			switch m.F {
			case history.Read:
				reads++
				if m.IsList {
					t.Fatalf("read %+v is a list read", m)
				}
				if m.HasValue {
					nonEmpty++
				}
			case history.Write:
				writes++
				if i == 0 || op.Mops[i-1].F != history.Read || op.Mops[i-1].Key != m.Key {
					t.Fatalf("write %+v does not follow a read of its key: %+v", m, op.Mops)
				}
			}
		}
	}
	if reads == 0 || writes == 0 || nonEmpty == 0 || len(keys) != 3 {
		t.Fatalf("%d reads (%d of a value), %d writes, %d keys: want all kinds on 3 keys", reads, nonEmpty, writes, len(keys))
	}
	v, err := elle.CheckOps(context.Background(), ops, elle.Options{Model: "strict-serializable"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Valid != verdict.True {
		t.Fatalf("a serial store's history judged %s: %v", v.Line(), v.Anomalies)
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
		{Name: "bad read proportion", KV: []string{KeyReadProp, "1.5"}, Want: KeyReadProp},
		{Name: "bad table", KV: []string{KeyTable, "a;drop"}, Want: KeyTable},
		{Name: "not a number", KV: []string{KeyTxnLen, "many"}, Want: KeyTxnLen},
	})
}
