package workload

import (
	"github.com/faultbench/faultbench/internal/properties"
)

// keyTxnOps is the faultbench property that turns the run phase into
// transactions: txn.ops > 0 makes every run-phase operation a Txn of that
// many row operations drawn from the operation mix (readproportion,
// updateproportion, ...), which the runner executes in one transaction of a
// driver.Transactional driver. workloads/txn is the transaction of Ahmad et al.: 10
// random row operations, half reads, half updates.
const keyTxnOps = "txn.ops"

// numRowOps is the number of row operation kinds (every kind before Txn).
const numRowOps = Txn

// initTxn reads txn.ops.
func (w *Workload) initTxn(p *properties.Properties) error {
	n, err := p.Int(keyTxnOps, 0)
	if err != nil {
		return err
	}
	if n < 0 || n > 10000 {
		return p.Error(keyTxnOps, "must be between 0 (no transactions) and 10000")
	}
	if n > 0 && w.proportions[Scan] > 0 {
		return p.Error(keyTxnOps, "transactions cannot contain scans: set scanproportion=0 or txn.ops=0")
	}
	w.txnOps = int(n)
	return nil
}

// TxnOps returns the number of row operations per transaction (property
// txn.ops); 0 means the run phase issues plain row operations.
func (w *Workload) TxnOps() int { return w.txnOps }

// nextTxn fills op with a Txn of w.txnOps row operations.
func (t *Thread) nextTxn(op *Op) {
	op.Kind = Txn
	op.KeyNum = 0
	op.Key = ""
	op.Fields = nil
	op.Values = nil
	op.ScanLen = 0
	op.TxnOps = t.w.txnOps
	op.ack = false
}

// NextTxnOp fills op with the next row operation of a transaction, drawn
// from the operation mix like a plain run-phase operation (never a Txn).
// Buffers of the previous op of this Thread are reused (see Op); call Done
// for it once it completed, as for Next.
func (t *Thread) NextTxnOp(op *Op) { t.nextRow(op) }
