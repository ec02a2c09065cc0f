package workload

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// Transaction is one database transaction: the methods of driver.Txn
// (the workload package does not depend on drivers; a driver.Txn is a
// Transaction).
type Transaction = program.Txn

// Begin begins a transaction (the runner adapts driver.Transactional).
type Begin = program.Begin

// SQLTransaction is one SQL transaction: the methods of driver.SQLTxn.
type SQLTransaction = program.SQLTx

// BeginSQL begins an SQL transaction (the runner adapts driver.SQL).
type BeginSQL = program.BeginSQL

// DB is the database a program workload's transactions and checks run on
// (see program.DB).
type DB = program.DB

// Terminal is one worker's source of a program workload's operations:
// whole transactions the workload itself runs (see program.Terminal).
type Terminal = program.Terminal

// Program is a workload whose operations are its own transactions
// (TPC-C) rather than YCSB row operations (see package program).
type Program = program.Program

// newProgram builds the program workload of entry e from p.
func newProgram(e Entry, p *properties.Properties) (*Workload, error) {
	w := &Workload{table: e.Name, entry: e}
	var err error
	if w.operationCount, err = p.Int(keyOperationCount, 0); err != nil {
		return nil, err
	}
	if w.operationCount < 0 {
		return nil, p.Error(keyOperationCount, "must not be negative (0 means no operation limit)")
	}
	if w.seed, err = p.Int(keySeed, time.Now().UnixNano()); err != nil {
		return nil, err
	}
	if w.prog, err = e.Kind.New(p, w.seed); err != nil {
		return nil, err
	}
	if w.prog == nil {
		return nil, fmt.Errorf("workload %s: built no program", e.Name)
	}
	if l, ok := w.prog.(program.Loader); ok {
		w.insertCount = l.LoadUnits()
	}
	return w, nil
}

// Program returns the program workload's operations, or nil for
// CoreWorkload.
func (w *Workload) Program() Program { return w.prog }

// OpNames returns the names of the workload's operations: the program's,
// or every OpKind's (the package function OpNames).
func (w *Workload) OpNames() []string {
	if w.prog != nil {
		return w.prog.OpNames()
	}
	return OpNames()
}

// Name returns the name of the workload's registry entry ("core" for
// YCSB's CoreWorkload).
func (w *Workload) Name() string { return w.entry.Name }

// Entry returns the workload's registry entry.
func (w *Workload) Entry() Entry { return w.entry }
