package check

import (
	"context"
	"errors"
	"testing"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// txn runs one tracked transaction writing keys; apply says which of its
// writes reach the database; err is the commit outcome.
func txn(tr *Tracker, d *memDriver, worker int, keys []string, apply []bool, err error, aborted bool) {
	tr.BeginTxn(worker)
	var vals []map[string][]byte
	for _, k := range keys {
		op := &workload.Op{Kind: workload.Update, Key: k, Values: map[string][]byte{"field0": []byte("x")}}
		tr.TxnWrite(worker, op)
		v := map[string][]byte{}
		for f, b := range op.Values {
			v[f] = append([]byte(nil), b...) // the driver copies buffered values
		}
		vals = append(vals, v)
	}
	for i, k := range keys {
		if apply[i] {
			_ = d.Update(context.Background(), "t", k, vals[i])
		}
	}
	tr.EndTxn(worker, err, aborted)
}

func TestVerifyTransactions(t *testing.T) {
	timeout := outcome.Classified(outcome.Timeout, "commit", errors.New("deadline"))
	conflict := outcome.Classified(outcome.Conflict, "commit", errors.New("aborted"))
	all, none := []bool{true, true, true}, []bool{false, false, false}
	tests := []struct {
		name           string
		do             func(tr *Tracker, d *memDriver)
		lost, torn     int
		abortedVisible int
		applied, not   int
	}{
		{"committed, all present", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, all, nil, false)
		}, 0, 0, 0, 0, 0},
		{"committed, one write lost", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, []bool{true, false, true}, nil, false)
		}, 1, 0, 0, 0, 0},
		{"unknown outcome, all applied", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, all, timeout, false)
		}, 0, 0, 0, 1, 0},
		{"unknown outcome, none applied", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, none, timeout, false)
		}, 0, 0, 0, 0, 1},
		{"unknown outcome, torn", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, all, nil, false)
			txn(tr, d, 0, []string{"a", "b", "c"}, []bool{true, false, true}, timeout, false)
		}, 0, 1, 0, 0, 0},
		{"unknown outcome, partly overwritten later", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, all, timeout, false)
			txn(tr, d, 1, []string{"b"}, []bool{true}, nil, false)
		}, 0, 0, 0, 1, 0},
		{"aborted, invisible", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, none, conflict, true)
		}, 0, 0, 0, 0, 0},
		{"aborted, visible", func(tr *Tracker, d *memDriver) {
			txn(tr, d, 0, []string{"a", "b", "c"}, []bool{false, true, false}, conflict, true)
		}, 0, 0, 1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, d := NewTracker(2), newMem()
			tc.do(tr, d)
			res := tr.Verify(context.Background(), d, "t", 2)
			if res.Txn == nil {
				t.Fatal("no transaction result")
			}
			x := res.Txn
			if res.LostWrites != tc.lost || x.Torn != tc.torn || x.AbortedVisible != tc.abortedVisible ||
				x.UnknownApplied != tc.applied || x.UnknownNotApplied != tc.not {
				t.Errorf("got lost %d torn %d aborted-visible %d applied %d not %d; want %d %d %d %d %d\n%s\n%+v",
					res.LostWrites, x.Torn, x.AbortedVisible, x.UnknownApplied, x.UnknownNotApplied,
					tc.lost, tc.torn, tc.abortedVisible, tc.applied, tc.not, res, res.Examples)
			}
			if res.OK() != (tc.lost == 0 && tc.torn == 0 && tc.abortedVisible == 0) {
				t.Errorf("OK() = %v", res.OK())
			}
		})
	}
	// no transactions: no transaction result
	tr, d := NewTracker(1), newMem()
	write(tr, d, 0, workload.Update, "k", true, nil)
	if res := tr.Verify(context.Background(), d, "t", 1); res.Txn != nil {
		t.Errorf("transaction result without transactions: %+v", res.Txn)
	}
}
