package workload

import (
	"testing"

	"github.com/faultbench/faultbench/internal/properties"
)

func TestTxnOps(t *testing.T) {
	p := properties.New()
	p.Set("recordcount", "1000")
	p.Set("readproportion", "0.5")
	p.Set("updateproportion", "0.5")
	p.Set("txn.ops", "10")
	w, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Unknown()) != 0 {
		t.Errorf("unknown: %v", p.Unknown())
	}
	th := w.NewThread(0, 1)
	var op, sub Op
	counts := map[OpKind]int{}
	for i := 0; i < 200; i++ {
		th.Next(&op)
		if op.Kind != Txn || op.TxnOps != 10 {
			t.Fatalf("op %d: %v with %d ops", i, op.Kind, op.TxnOps)
		}
		for j := 0; j < op.TxnOps; j++ {
			th.NextTxnOp(&sub)
			counts[sub.Kind]++
			if sub.Key == "" || sub.TxnOps != 0 {
				t.Fatalf("sub-op %+v", sub)
			}
			th.Done(&sub, true)
		}
	}
	if counts[Read] < 900 || counts[Update] < 900 || counts[Read]+counts[Update] != 2000 {
		t.Errorf("mix %v, want about 1000 reads and 1000 updates", counts)
	}

	p.Set("scanproportion", "0.1")
	if _, err := New(p); err == nil {
		t.Error("scans in transactions accepted")
	}
	p.Set("scanproportion", "0")
	p.Set("txn.ops", "-1")
	if _, err := New(p); err == nil {
		t.Error("negative txn.ops accepted")
	}
}
