package runner

import (
	"context"
	"errors"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload"
)

// TxnTracker is the optional extension of a Tracker for transactions
// (workload op TXN). The runner calls BeginTxn after the driver began a
// transaction, TxnWrite for every write before it is buffered in the
// transaction, and EndTxn with the outcome. check.Tracker implements it.
type TxnTracker interface {
	// BeginTxn starts tracking a transaction of worker.
	BeginTxn(worker int)
	// TxnWrite may modify op's values (tag them) before the write is
	// issued inside the transaction.
	TxnWrite(worker int, op *workload.Op)
	// EndTxn reports the outcome: err nil means committed; aborted means
	// the transaction certainly did not commit (aborted by the runner after
	// a failed operation, or a Conflict-class commit error); any other
	// error leaves the outcome unknown.
	EndTxn(worker int, err error, aborted bool)
}

// errNoTxn is returned for TXN ops on a driver without transactions.
var errNoTxn = errors.New("the target's driver has no transactions (txn.ops needs one, e.g. txkv)")

// executeTxn runs a TXN op: op.TxnOps row operations drawn from the mix
// inside one transaction of a driver.Transactional driver, then commit.
// The first failing operation aborts the transaction; its error is the
// TXN's outcome.
func (w *worker) executeTxn(ctx context.Context) error {
	td, ok := w.r.Driver.(driver.Transactional)
	if !ok {
		return outcome.Classified(outcome.Rejected, "txn", errNoTxn)
	}
	tt, _ := w.r.Tracker.(TxnTracker)
	tx, err := td.Begin(ctx)
	if err != nil {
		return err
	}
	if tt != nil {
		tt.BeginTxn(w.id)
	}
	table := w.r.Workload.Table()
	var sub workload.Op
	for i := 0; i < w.op.TxnOps && err == nil; i++ {
		w.thread.NextTxnOp(&sub)
		write := func(do func() error) error {
			if tt != nil {
				tt.TxnWrite(w.id, &sub)
			}
			return do()
		}
		switch sub.Kind {
		case workload.Read:
			_, err = tx.Read(ctx, table, sub.Key, sub.Fields)
		case workload.Update:
			err = write(func() error { return tx.Update(ctx, table, sub.Key, sub.Values) })
		case workload.Insert:
			err = write(func() error { return tx.Insert(ctx, table, sub.Key, sub.Values) })
		case workload.ReadModifyWrite:
			if _, err = tx.Read(ctx, table, sub.Key, sub.Fields); err == nil {
				err = write(func() error { return tx.Update(ctx, table, sub.Key, sub.Values) })
			}
		case workload.Delete:
			err = tx.Delete(ctx, table, sub.Key)
		default:
			err = outcome.Classified(outcome.Rejected, "txn", errors.New("operation "+sub.Kind.String()+" cannot run in a transaction"))
		}
		w.thread.Done(&sub, err == nil)
	}
	if err != nil {
		_ = tx.Abort(context.WithoutCancel(ctx))
		if tt != nil {
			tt.EndTxn(w.id, err, true)
		}
		return err
	}
	err = tx.Commit(ctx)
	if tt != nil {
		tt.EndTxn(w.id, err, outcome.ClassOf(err) == outcome.Conflict)
	}
	return err
}
