// Package rwregister is the rw-register workload (workload=rw-register):
// transactions of reads and writes of unique values on a few registers,
// so that transactions contend, every transaction recorded in the run's
// history for the isolation checker (internal/check/elle), as Elle's
// rw-register (Kingsbury and Alvaro, VLDB 2020).
//
// A transaction touches distinct keys; it reads each one and then may
// write it, so every write follows a read of the value it overwrites in
// the same transaction: that read is what lets the checker order the
// versions of a register (the value read precedes the value written).
//
// On an SQL target (postgres-ha, galera) a register is one row (k, v
// BIGINT), written by an upsert; on a target with key-value transactions
// (txkv) a record whose field v holds the value. A target with neither is
// refused (program.Requirer). docs/workloads.md and docs/checks.md
// describe it.
package rwregister

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
)

// The properties the workload reads.
const (
	KeyKeys     = "rwregister.keys"           // registers (default 5)
	KeyTxnLen   = "rwregister.txnlen"         // most registers a transaction touches (default 3)
	KeyReadProp = "rwregister.readproportion" // share of touched registers only read (default 0.5)
	KeyTable    = "rwregister.table"          // SQL table or key-value table (default rwregister)
)

// Field is the record field (key-value targets) and column (SQL) that
// holds a register's value.
const Field = "v"

// Name is the workload's name (workload=rw-register).
const Name = "rw-register"

// Kind is the rw-register workload as internal/workload registers it.
type Kind struct{}

// New builds the workload from p.
func (Kind) New(p *properties.Properties, seed int64) (program.Program, error) {
	p.Declare(KeyKeys, KeyTxnLen, KeyReadProp, KeyTable)
	var cfg Config
	keys, err := p.Int(KeyKeys, 5)
	if err != nil {
		return nil, err
	}
	n, err := p.Int(KeyTxnLen, 3)
	if err != nil {
		return nil, err
	}
	if keys > 1<<30 || n > 1<<30 || keys < 0 || n < 0 {
		return nil, fmt.Errorf("%s and %s must be small positive numbers", KeyKeys, KeyTxnLen)
	}
	cfg.Keys, cfg.TxnLen = int(keys), int(n)
	if cfg.ReadProportion, err = p.Float(KeyReadProp, 0.5); err != nil {
		return nil, err
	}
	cfg.Table = p.String(KeyTable, "rwregister")
	if cfg.ValueBase, err = recorded.ValueBase(p); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewWorkload(cfg), nil
}

// Config is the workload's configuration.
type Config struct {
	// Keys is the number of registers: few, high contention.
	Keys int
	// TxnLen is the most registers a transaction touches (each touches
	// 1..min(TxnLen, Keys) distinct ones, uniformly).
	TxnLen int
	// ReadProportion is the share of the touched registers that are only
	// read; the others are read and then written.
	ReadProportion float64
	// Table holds the registers.
	Table string
	// ValueBase is added to every value written (recorded.ValueBase: the
	// client process's, so that values are unique across processes).
	ValueBase int64
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Keys < 1 || c.Keys > 1_000_000:
		return fmt.Errorf("%s must be 1..1000000, got %d", KeyKeys, c.Keys)
	case c.TxnLen < 1 || c.TxnLen > 100:
		return fmt.Errorf("%s must be 1..100, got %d", KeyTxnLen, c.TxnLen)
	}
	return recorded.CheckMix(KeyReadProp, c.ReadProportion, c.ValueBase, KeyTable, c.Table)
}

// Workload is a configured rw-register workload, shared by its terminals.
type Workload struct {
	cfg    Config
	rec    recorded.Recording
	values recorded.Values // the values written
	table  *recorded.Table
}

// NewWorkload returns the workload for cfg (valid).
func NewWorkload(cfg Config) *Workload {
	w := &Workload{cfg: cfg, rec: recorded.NewRecording(),
		table: &recorded.Table{Workload: Name, Name: cfg.Table, Column: "BIGINT", Field: Field}}
	w.values.Base = cfg.ValueBase
	return w
}

// OpNames implements program.Program: one operation, a transaction.
func (w *Workload) OpNames() []string { return []string{"TXN"} }

// SetRecorder implements program.Historian.
func (w *Workload) SetRecorder(r program.Recorder) { w.rec.SetRecorder(r) }

// CheckDB implements program.Requirer: the workload needs transactions
// over several keys, SQL or key-value.
func (w *Workload) CheckDB(db program.DB) error { return recorded.RequireTxns(Name, db) }

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), proc: recorded.NewProcess(id)}
}

type terminal struct {
	w    *Workload
	rng  *rand.Rand
	proc recorded.Process
	mops []history.Mop
}

// Next implements program.Terminal: the next transaction, over 1..TxnLen
// distinct registers, each read and then, unless it is only read, written
// with a fresh value.
func (t *terminal) Next() (int, time.Duration) {
	cfg := &t.w.cfg
	n := 1 + t.rng.IntN(min(cfg.TxnLen, cfg.Keys))
	t.mops = make([]history.Mop, 0, 2*n)
	for _, k := range t.rng.Perm(cfg.Keys)[:n] {
		key := "r" + strconv.Itoa(k)
		t.mops = append(t.mops, history.Mop{F: history.Read, Key: key})
		if t.rng.Float64() >= cfg.ReadProportion {
			t.mops = append(t.mops, history.Mop{F: history.Write, Key: key, Value: t.w.values.Next()})
		}
	}
	return 0, 0
}

// Execute implements program.Terminal: it runs the transaction Next
// picked and records it (outcomes as recorded.OutcomeOf; a new process
// after an unknown one).
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	if err := t.w.CheckDB(db); err != nil {
		return err
	}
	if err := t.w.table.Ensure(ctx, db); err != nil {
		return err
	}
	op := history.Op{Name: "txn", Mops: t.mops}
	return t.w.rec.Do(&op, &t.proc, func() (bool, error) {
		if db.SQL != nil {
			return recorded.RunSQL(ctx, db, func(tx program.SQLTx) error { return t.w.runSQL(ctx, tx, db.Dialect, op.Mops) })
		}
		return recorded.RunKV(ctx, db, func(tx program.Txn) error { return t.w.runKV(ctx, tx, op.Mops) })
	})
}

// runSQL runs mops in the SQL transaction tx.
func (w *Workload) runSQL(ctx context.Context, tx program.SQLTx, dialect string, mops []history.Mop) error {
	writeQ, readQ := w.table.Upsert(dialect, false), w.table.Select()
	for i := range mops {
		var err error
		switch m := &mops[i]; m.F {
		case history.Write:
			_, err = tx.Exec(ctx, writeQ, m.Key, m.Value)
		case history.Read:
			err = tx.Query(ctx, readQ, []any{m.Key}, func(scan func(...any) error) error {
				m.HasValue = true
				return scan(&m.Value)
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runKV runs mops in the key-value transaction tx.
func (w *Workload) runKV(ctx context.Context, tx program.Txn, mops []history.Mop) error {
	exists := map[string]bool{}
	for i := range mops {
		m := &mops[i]
		var err error
		switch m.F {
		case history.Read:
			var rec map[string][]byte
			rec, err = tx.Read(ctx, w.cfg.Table, m.Key, []string{Field})
			switch {
			case errors.Is(err, outcome.ErrNotFound):
				err = nil
			case err == nil:
				exists[m.Key] = true
				m.HasValue = true
				if m.Value, err = strconv.ParseInt(string(rec[Field]), 10, 64); err != nil {
					err = outcome.Classified(outcome.Other, Name, fmt.Errorf("register %s holds %q, not a written value", m.Key, rec[Field]))
				}
			}
		case history.Write:
			rec := map[string][]byte{Field: []byte(strconv.FormatInt(m.Value, 10))}
			if exists[m.Key] {
				err = tx.Update(ctx, w.cfg.Table, m.Key, rec)
			} else {
				err = tx.Insert(ctx, w.cfg.Table, m.Key, rec)
				exists[m.Key] = true
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
