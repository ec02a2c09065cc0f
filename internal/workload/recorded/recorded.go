// Package recorded is the machinery the workloads made for checking share
// (internal/workload/register, appendset, listappend, rwregister, bank):
// each records every operation it runs through the harness's
// program.Recorder for the history checkers, and they all do it the same
// way, so it is written once here:
//
//   - Recording: the workload's clock and recorder (its own clock until
//     the harness gives it one), and Do, which times, classifies and
//     records one operation;
//   - Process: a terminal's process id, a new one after an operation of
//     unknown outcome (history.Op.Process);
//   - Values: the unique values a workload writes, offset by the client
//     process's writer base (ValueBase), so that the values of two client
//     processes or worker hosts never collide in the merged history;
//   - OutcomeOf: a transaction's history outcome from its error;
//   - the transactional workloads' database side: RequireTxns, Table
//     (the SQL table created once), RunSQL and RunKV (one transaction and
//     its commit), Upsert and Ident.
//
// It imports nothing of the harness but the program contract, the history
// format and the outcome classes.
package recorded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// Recording is a workload's side of the history: the clock its
// operations are timed on and the recorder they go to. The zero value is
// not ready: use NewRecording.
type Recording struct {
	start time.Time
	rec   program.Recorder // nil: nothing is recorded
}

// NewRecording returns a recording on its own clock (ns since now) that
// records nothing until SetRecorder.
func NewRecording() Recording { return Recording{start: time.Now()} }

// SetRecorder makes r the recorder and its clock the clock (nil: ignored).
// The harness calls it once, before the first terminal.
func (r *Recording) SetRecorder(rec program.Recorder) {
	if rec != nil {
		r.rec = rec
	}
}

// Now is the time on the recorder's clock (ns since the run's t = 0), or
// on the recording's own before SetRecorder.
func (r *Recording) Now() int64 {
	if r.rec != nil {
		return r.rec.Now()
	}
	return time.Since(r.start).Nanoseconds()
}

// Record hands op to the recorder, if there is one.
func (r *Recording) Record(op *history.Op) {
	if r.rec != nil {
		r.rec.Record(op)
	}
}

// Refusal is an error of a workload's own that ends an operation before
// its commit with no effect (a transfer from an account without the
// money): Do records it under its text rather than an outcome class.
type Refusal string

func (e Refusal) Error() string { return string(e) }

// Do runs one transaction of op and records it: op's Invoke and Complete
// around run, its Outcome from OutcomeOf(err, atCommit), its Error the
// error's class (or a Refusal's text), the values of its reads forgotten
// when it did not commit (they are not known to have been read), and the
// terminal's process p moved to a new id after an unknown outcome. It
// returns run's error.
func (r *Recording) Do(op *history.Op, p *Process, run func() (atCommit bool, err error)) error {
	op.Process = p.ID()
	op.Invoke = r.Now()
	atCommit, err := run()
	op.Complete = r.Now()
	op.Outcome = OutcomeOf(err, atCommit)
	if err != nil {
		op.Error = outcome.ClassOf(err).String()
		var rf Refusal
		if errors.As(err, &rf) {
			op.Error = string(rf)
		}
		ForgetReads(op.Mops)
	}
	r.Record(op)
	p.After(op.Outcome)
	return err
}

// ForgetReads clears what the reads of mops returned.
func ForgetReads(mops []history.Mop) {
	for i := range mops {
		if m := &mops[i]; m.F == history.Read {
			m.List, m.Value, m.HasValue = nil, 0, false
		}
	}
}

// ProcessStride separates the process ids a terminal takes: terminal
// id's processes are id, id + stride, id + 2 stride, ... (a client
// process has far fewer terminals).
const ProcessStride = 1 << 20

// Process is one terminal's process id: a single-threaded client whose
// operation of unknown outcome may still take effect at any later time,
// so that its next operation must be another process's (history.Op).
type Process struct{ id, gen int }

// NewProcess returns terminal id's first process.
func NewProcess(id int) Process { return Process{id: id} }

// ID is the current process id.
func (p *Process) ID() int { return p.id + p.gen*ProcessStride }

// After moves to a new process when o is unknown.
func (p *Process) After(o history.Outcome) {
	if o == history.Unknown {
		p.gen++
	}
}

// KeyWriterBase is the property that numbers a client process's first
// terminal among all the phase's terminals (internal/distrib sets it for
// every client process and worker host: experiment.KeyHistoryWriterBase);
// 0 in a run of one process.
const KeyWriterBase = "history.writer-base"

// ValueSpan is how many values one client process may write: client
// process b's values are b*ValueSpan+1, b*ValueSpan+2, ... Writer bases
// are at most 10,000, so every value stays below 2^53 (exact in JSON
// readers that use doubles).
const ValueSpan = 1 << 32

// ValueBase is the base of the values written by the client process
// whose properties are p: its writer base (KeyWriterBase) times
// ValueSpan. Two client processes of one phase have distinct writer
// bases, so their values never collide in the merged history.
func ValueBase(p *properties.Properties) (int64, error) {
	p.Declare(KeyWriterBase)
	b, err := p.Int(KeyWriterBase, 0)
	if err != nil {
		return 0, err
	}
	if b < 0 || b > 1<<20 {
		return 0, p.Error(KeyWriterBase, "allowed 0..%d", 1<<20)
	}
	return b * ValueSpan, nil
}

// Values hands out the unique values a workload writes: Base+1, Base+2,
// ... Safe for concurrent use.
type Values struct {
	// Base is added to every value (ValueBase); set it before the first
	// Next.
	Base int64
	n    atomic.Int64
}

// Next returns the next value.
func (v *Values) Next() int64 { return v.Base + v.n.Add(1) }

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

// RequireTxns is the program.Requirer of a workload of transactions over
// several keys (name): db must have SQL transactions in the postgres or
// mysql dialect, or key-value transactions.
func RequireTxns(name string, db program.DB) error {
	if db.SQL == nil && db.KV == nil {
		return fmt.Errorf("workload %s needs transactions over several keys (SQL, or key-value transactions as txkv's), and the target's driver (%T) has neither: %w",
			name, db.Driver, program.ErrNoTransactions)
	}
	if db.SQL != nil && db.KV == nil && db.Dialect != "postgres" && db.Dialect != "mysql" {
		return fmt.Errorf("workload %s speaks the postgres and mysql SQL dialects, not %q", name, db.Dialect)
	}
	return nil
}

// RunSQL runs f in one SQL transaction of db and commits it; atCommit says
// whether err came from the commit (an error of f aborts).
func RunSQL(ctx context.Context, db program.DB, f func(program.SQLTx) error) (atCommit bool, err error) {
	tx, err := db.SQL(ctx)
	if err != nil {
		return false, err
	}
	if err := f(tx); err != nil {
		_ = tx.Abort(ctx)
		return false, err
	}
	return true, tx.Commit(ctx)
}

// RunKV runs f in one key-value transaction of db and commits it, as
// RunSQL.
func RunKV(ctx context.Context, db program.DB, f func(program.Txn) error) (atCommit bool, err error) {
	tx, err := db.KV(ctx)
	if err != nil {
		return false, err
	}
	if err := f(tx); err != nil {
		_ = tx.Abort(ctx)
		return false, err
	}
	return true, tx.Commit(ctx)
}

// Table is a workload's SQL table, created once (CREATE TABLE IF NOT
// EXISTS) before its first operation.
type Table struct {
	// Workload and Name name the workload and the table in messages and
	// the statements.
	Workload, Name string
	// Column is the value column's type: "TEXT" (on mysql LONGTEXT) or
	// "BIGINT".
	Column string
	// Field is the value column's name.
	Field string

	mu sync.Mutex
	ok bool
}

// Ensure creates the table on an SQL db, once per workload (a concurrent
// creation by another client process may fail once: the next operation
// tries again). A key-value db needs nothing.
func (t *Table) Ensure(ctx context.Context, db program.DB) error {
	if db.SQL == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ok {
		return nil
	}
	col, engine := t.Column, ""
	if db.Dialect == "mysql" {
		engine = " ENGINE=InnoDB"
		if col == "TEXT" {
			col = "LONGTEXT"
		}
	}
	ddl := "CREATE TABLE IF NOT EXISTS " + t.Name + " (k VARCHAR(64) PRIMARY KEY, " + t.Field + " " + col + " NOT NULL)" + engine
	if _, err := RunSQL(ctx, db, func(tx program.SQLTx) error {
		_, err := tx.Exec(ctx, ddl)
		return err
	}); err != nil {
		return fmt.Errorf("%s: creating table %s: %w", t.Workload, t.Name, err)
	}
	t.ok = true
	return nil
}

// Upsert is the statement that sets the value column of the row of key
// (parameters: key, value), inserting the row when there is none, in
// dialect ("mysql" or postgres). With appendList the value is appended to
// the column's comma-separated list instead of replacing it.
func (t *Table) Upsert(dialect string, appendList bool) string {
	ins := "INSERT INTO " + t.Name + " (k, " + t.Field + ") VALUES (?, ?) "
	switch {
	case dialect == "mysql" && appendList:
		return ins + "ON DUPLICATE KEY UPDATE " + t.Field + " = CONCAT(" + t.Field + ", ',', VALUES(" + t.Field + "))"
	case dialect == "mysql":
		return ins + "ON DUPLICATE KEY UPDATE " + t.Field + " = VALUES(" + t.Field + ")"
	case appendList:
		return ins + "ON CONFLICT (k) DO UPDATE SET " + t.Field + " = " + t.Name + "." + t.Field + " || ',' || EXCLUDED." + t.Field
	}
	return ins + "ON CONFLICT (k) DO UPDATE SET " + t.Field + " = EXCLUDED." + t.Field
}

// Select is the statement that reads the value column of the row of key.
func (t *Table) Select() string { return "SELECT " + t.Field + " FROM " + t.Name + " WHERE k = ?" }

// Ident reports whether s is a plain SQL identifier (letters, digits and
// _, not starting with a digit, at most 63 characters).
func Ident(s string) bool {
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

// CheckMix checks the settings the transactional workloads share: the
// share of reads (property readKey) within 0..1, the value base not
// negative, and the table (property tableKey) a plain SQL identifier.
func CheckMix(readKey string, read float64, base int64, tableKey, table string) error {
	switch {
	case read < 0 || read > 1:
		return fmt.Errorf("%s must be 0..1, got %g", readKey, read)
	case base < 0:
		return fmt.Errorf("value base %d: must not be negative", base)
	case !Ident(table):
		return fmt.Errorf("%s %q: want a plain name (letters, digits, _)", tableKey, table)
	}
	return nil
}
