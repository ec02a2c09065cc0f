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
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
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
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Keys < 1 || c.Keys > 1_000_000:
		return fmt.Errorf("%s must be 1..1000000, got %d", KeyKeys, c.Keys)
	case c.TxnLen < 1 || c.TxnLen > 100:
		return fmt.Errorf("%s must be 1..100, got %d", KeyTxnLen, c.TxnLen)
	case c.ReadProportion < 0 || c.ReadProportion > 1:
		return fmt.Errorf("%s must be 0..1, got %g", KeyReadProp, c.ReadProportion)
	case !ident(c.Table):
		return fmt.Errorf("%s %q: want a plain name (letters, digits, _)", KeyTable, c.Table)
	}
	return nil
}

// ident reports whether s is a plain SQL identifier.
func ident(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Workload is a configured rw-register workload, shared by its terminals.
type Workload struct {
	cfg   Config
	start time.Time
	rec   program.Recorder // nil: nothing is recorded
	next  atomic.Int64     // the last value written

	schemaMu sync.Mutex
	schemaOK bool
}

// NewWorkload returns the workload for cfg (valid).
func NewWorkload(cfg Config) *Workload {
	return &Workload{cfg: cfg, start: time.Now()}
}

// OpNames implements program.Program: one operation, a transaction.
func (w *Workload) OpNames() []string { return []string{"TXN"} }

// SetRecorder implements program.Historian.
func (w *Workload) SetRecorder(r program.Recorder) { w.rec = r }

// CheckDB implements program.Requirer: the workload needs transactions
// over several keys, SQL or key-value.
func (w *Workload) CheckDB(db program.DB) error {
	if db.SQL == nil && db.KV == nil {
		return fmt.Errorf("workload %s needs transactions over several keys (SQL, or key-value transactions as txkv's), and the target's driver (%T) has neither: %w",
			Name, db.Driver, program.ErrNoTransactions)
	}
	if db.SQL != nil && db.KV == nil && db.Dialect != "postgres" && db.Dialect != "mysql" {
		return fmt.Errorf("workload %s speaks the postgres and mysql SQL dialects, not %q", Name, db.Dialect)
	}
	return nil
}

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), id: id, process: id}
}

func (w *Workload) now() int64 {
	if w.rec != nil {
		return w.rec.Now()
	}
	return time.Since(w.start).Nanoseconds()
}

// ensureSchema creates the SQL table once per workload (a concurrent
// creation by another client process may fail once: the next operation
// tries again).
func (w *Workload) ensureSchema(ctx context.Context, db program.DB) error {
	if db.SQL == nil {
		return nil
	}
	w.schemaMu.Lock()
	defer w.schemaMu.Unlock()
	if w.schemaOK {
		return nil
	}
	ddl := "CREATE TABLE IF NOT EXISTS " + w.cfg.Table + " (k VARCHAR(64) PRIMARY KEY, " + Field + " BIGINT NOT NULL)"
	if db.Dialect == "mysql" {
		ddl += " ENGINE=InnoDB"
	}
	tx, err := db.SQL(ctx)
	if err != nil {
		return fmt.Errorf("%s: creating table %s: %w", Name, w.cfg.Table, err)
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		_ = tx.Abort(ctx)
		return fmt.Errorf("%s: creating table %s: %w", Name, w.cfg.Table, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: creating table %s: %w", Name, w.cfg.Table, err)
	}
	w.schemaOK = true
	return nil
}

// processStride separates the process ids a worker takes: worker id's
// processes are id, id + stride, id + 2 stride, ...
const processStride = 1 << 20

type terminal struct {
	w       *Workload
	rng     *rand.Rand
	id      int
	process int
	gen     int
	mops    []history.Mop
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
			t.mops = append(t.mops, history.Mop{F: history.Write, Key: key, Value: t.w.next.Add(1)})
		}
	}
	return 0, 0
}

// Execute implements program.Terminal: it runs the transaction Next
// picked and records it (outcomes as OutcomeOf; a new process after an
// unknown one).
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	if err := t.w.CheckDB(db); err != nil {
		return err
	}
	if err := t.w.ensureSchema(ctx, db); err != nil {
		return err
	}
	op := history.Op{Process: t.process, Name: "txn", Mops: t.mops}
	op.Invoke = t.w.now()
	var (
		atCommit bool
		err      error
	)
	if db.SQL != nil {
		atCommit, err = t.w.runSQL(ctx, db, op.Mops)
	} else {
		atCommit, err = t.w.runKV(ctx, db, op.Mops)
	}
	op.Complete = t.w.now()
	op.Outcome = OutcomeOf(err, atCommit)
	if err != nil {
		op.Error = outcome.ClassOf(err).String()
		for i := range op.Mops {
			if op.Mops[i].F == history.Read {
				op.Mops[i].HasValue, op.Mops[i].Value = false, 0 // not known
			}
		}
	}
	if t.w.rec != nil {
		t.w.rec.Record(&op)
	}
	if op.Outcome == history.Unknown {
		t.gen++
		t.process = t.id + t.gen*processStride
	}
	return err
}

// OutcomeOf is a transaction's outcome from its error and whether the
// error came from the commit: an error before the commit leaves nothing
// committed (fail); a commit refused as a conflict, rejected or not found
// took no effect (fail); any other commit error may have committed
// (unknown).
func OutcomeOf(err error, atCommit bool) history.Outcome {
	if err == nil {
		return history.OK
	}
	if !atCommit {
		return history.Fail
	}
	switch outcome.ClassOf(err) {
	case outcome.Conflict, outcome.Rejected, outcome.NotFound:
		return history.Fail
	}
	return history.Unknown
}

// runSQL runs mops as one SQL transaction; atCommit says whether err came
// from the commit.
func (w *Workload) runSQL(ctx context.Context, db program.DB, mops []history.Mop) (atCommit bool, err error) {
	tx, err := db.SQL(ctx)
	if err != nil {
		return false, err
	}
	writeQ := "INSERT INTO " + w.cfg.Table + " (k, " + Field + ") VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET " + Field + " = EXCLUDED." + Field
	if db.Dialect == "mysql" {
		writeQ = "INSERT INTO " + w.cfg.Table + " (k, " + Field + ") VALUES (?, ?) ON DUPLICATE KEY UPDATE " + Field + " = VALUES(" + Field + ")"
	}
	readQ := "SELECT " + Field + " FROM " + w.cfg.Table + " WHERE k = ?"
	for i := range mops {
		m := &mops[i]
		switch m.F {
		case history.Write:
			_, err = tx.Exec(ctx, writeQ, m.Key, m.Value)
		case history.Read:
			err = tx.Query(ctx, readQ, []any{m.Key}, func(scan func(...any) error) error {
				m.HasValue = true
				return scan(&m.Value)
			})
		}
		if err != nil {
			_ = tx.Abort(ctx)
			return false, err
		}
	}
	return true, tx.Commit(ctx)
}

// runKV runs mops as one key-value transaction.
func (w *Workload) runKV(ctx context.Context, db program.DB, mops []history.Mop) (atCommit bool, err error) {
	tx, err := db.KV(ctx)
	if err != nil {
		return false, err
	}
	exists := map[string]bool{}
	for i := range mops {
		m := &mops[i]
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
			_ = tx.Abort(ctx)
			return false, err
		}
	}
	return true, tx.Commit(ctx)
}
