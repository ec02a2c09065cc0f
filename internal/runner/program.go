package runner

import (
	"context"
	"errors"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// nextProgramOp asks the worker's terminal for its next operation. In the
// run phase it waits the terminal's pause (keying and think times) first;
// false means the worker stops (load complete, stopped or out of time). A
// terminal without load operations (not a program.LoadTerminal) has
// nothing to load.
func (w *worker) nextProgramOp(ctx context.Context) bool {
	if w.cfg.Phase == Load {
		lt, ok := w.term.(program.LoadTerminal)
		var op int
		if ok {
			op, ok = lt.NextLoad()
		}
		if !ok {
			w.exhausted = true
		}
		w.termOp = op
		return ok
	}
	op, pause := w.term.Next()
	w.termOp = op
	if pause <= 0 {
		return true
	}
	if !w.deadline.IsZero() && time.Now().Add(pause).After(w.deadline) {
		w.timeUp = true
		return false
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// executeProgram runs the terminal's operation on the driver as
// ProgramDB adapts it. A workload that needs transactions the driver does
// not have (program.ErrNoTransactions) is rejected.
func (w *worker) executeProgram(ctx context.Context) error {
	err := w.term.Execute(ctx, ProgramDB(w.r.Driver))
	if errors.Is(err, program.ErrNoTransactions) {
		return outcome.Classified(outcome.Rejected, w.r.Workload.Name(), err)
	}
	return err
}

// ProgramDB adapts a driver to the database a program workload's
// operations and checks run on: SQL transactions when the driver speaks
// SQL, else key-value transactions when it has them, and the driver
// itself.
func ProgramDB(d driver.Driver) program.DB {
	db := program.DB{Driver: d}
	if sd, ok := d.(driver.SQL); ok {
		db.SQL = func(ctx context.Context) (program.SQLTx, error) {
			tx, err := sd.BeginSQL(ctx)
			if err != nil {
				return nil, err
			}
			return tx, nil
		}
		db.Dialect = sd.SQLDialect()
		return db
	}
	if td, ok := d.(driver.Transactional); ok {
		db.KV = func(ctx context.Context) (program.Txn, error) {
			tx, err := td.Begin(ctx)
			if err != nil {
				return nil, err
			}
			return tx, nil
		}
	}
	return db
}
