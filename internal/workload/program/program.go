// Package program is what a program workload is: a workload whose
// operations are its own transactions (TPC-C) rather than YCSB's row
// operations. A program workload is registered in internal/workload as a
// Kind; what it can do beyond running its operations it says through
// optional abilities, found by type assertion:
//
//   - Kind.New builds the workload (a Program) from the run's properties;
//     the Program names its operations and gives each worker a Terminal.
//   - Requirer (on the Program): what the database must have, checked
//     before anything runs, so that a target that cannot run the workload
//     is refused with what it lacks.
//   - Loader (on the Program): a load phase of LoadUnits transactions, run
//     by terminals that are LoadTerminals.
//   - Checker (on the Kind): checks — consistency conditions, anomaly
//     checkers — each a named Check a scenario's `checks:` may name, run
//     against the database after the measured phase.
//   - Summarizer (on the Program): figures of its own for summary.json and
//     the terminal summary (TPC-C: tpmC, tpm, aborts per type).
//   - Historian (on the Program): its operations form an operation history
//     (internal/history) that the harness writes to the run directory's
//     history.jsonl and that history checkers (linearizable, isolation,
//     bank, set) judge after the run.
//
// The package holds only these interfaces and small types. It imports
// nothing of the harness but properties and the history format, so that a workload package
// (internal/workload/tpcc, ...) implements them without importing the
// registry, and the harness (runner, experiment) uses them without knowing
// any one workload. docs/workloads.md says how to add a workload.
package program

import (
	"context"
	"errors"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/properties"
)

// Txn is one key-value transaction: the methods of driver.Txn (this package
// does not depend on drivers; a driver.Txn is a Txn).
type Txn interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	Update(ctx context.Context, table, key string, values map[string][]byte) error
	Insert(ctx context.Context, table, key string, values map[string][]byte) error
	Delete(ctx context.Context, table, key string) error
	Commit(ctx context.Context) error
	Abort(ctx context.Context) error
}

// Begin begins a key-value transaction.
type Begin func(ctx context.Context) (Txn, error)

// SQLTx is one SQL transaction: the methods of driver.SQLTxn. Statements
// use ? for parameters.
type SQLTx interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args []any, row func(scan func(dest ...any) error) error) error
	Commit(ctx context.Context) error
	Abort(ctx context.Context) error
}

// BeginSQL begins an SQL transaction.
type BeginSQL func(ctx context.Context) (SQLTx, error)

// DB is the database a program workload's operations and checks run on,
// as the harness adapts the target's driver: SQL transactions in Dialect
// when the driver speaks SQL, else key-value transactions (KV) when it has
// them. Driver is the driver itself, for what neither gives (reads and
// scans outside a transaction, abilities this package does not name):
// assert the interface you need.
type DB struct {
	KV      Begin
	SQL     BeginSQL
	Dialect string
	Driver  any
}

// ErrNoTransactions says the target's driver has neither SQL nor key-value
// transactions, which the workload needs.
var ErrNoTransactions = errors.New("the target's driver has no transactions")

// Terminal is one worker's source of a program workload's operations.
type Terminal interface {
	// Next picks the next run-phase operation: its index in OpNames and
	// how long to wait before its intended start (keying and think times).
	Next() (op int, pause time.Duration)
	// Execute runs the operation Next (or LoadTerminal.NextLoad) picked.
	// A nil error is a success; an error's outcome class
	// (internal/outcome) says how the operation ended.
	Execute(ctx context.Context, db DB) error
}

// Program is a configured program workload, shared by all workers.
type Program interface {
	// OpNames names the operations; an operation index is a position.
	// The names label windows.csv and summary.json's per-operation rows.
	OpNames() []string
	// NewTerminal returns worker id's terminal for the run's seed.
	NewTerminal(id int, seed int64) Terminal
}

// Kind is a program workload as registered: it builds the Program from a
// run's properties. New declares the property keys it reads (p.Declare),
// so that unknown keys are still reported; seed is the run's seed.
type Kind interface {
	New(p *properties.Properties, seed int64) (Program, error)
}

// Requirer is the ability of a Program that says, before any operation
// runs, whether the database has what its operations need (SQL or
// key-value transactions, an ability of the driver).
type Requirer interface {
	// CheckDB returns an error naming what db lacks; nil when the
	// workload can run on it.
	CheckDB(db DB) error
}

// Loader is the ability of a Program with a load phase: LoadUnits load
// operations, which its terminals pick with LoadTerminal.NextLoad. A
// Program without it has nothing to load.
type Loader interface {
	LoadUnits() int64
}

// LoadTerminal is the ability of a Terminal that runs load operations.
type LoadTerminal interface {
	// NextLoad picks the next load operation and returns its index in
	// OpNames; false once the load is complete.
	NextLoad() (op int, ok bool)
}

// Checker is the ability of a Kind whose workload has checks of its own.
// The checks are the Kind's, not the Program's, so that a scenario naming
// one is validated before any workload is built.
type Checker interface {
	Checks() []Check
}

// Check is one named check of a workload: a consistency condition or an
// anomaly checker, run against the database once the measured phase has
// ended and every node is back.
type Check struct {
	// Name is what a scenario's checks: names and summary.json's
	// checks_passed records, e.g. "tpcc-consistency".
	Name string
	// Doc says what is checked, for listings and the line printed while it
	// runs ("checking <Doc> ...").
	Doc string
	// Timeout bounds Run; 0 means DefaultCheckTimeout.
	Timeout time.Duration
	// Run checks the database w ran on. An error means the check could not
	// be made (the database could not be read): it counts as failed.
	Run func(ctx context.Context, w Program, db DB) (Verdict, error)
	// History, when set, is called instead of Run: the check judges the
	// run's operation history, merged from every client process and
	// worker host (h), and the database (final reads, which it may append
	// to h.Path). Such a check runs with client processes too (the
	// harness opens a driver of its own for it); Run may be nil.
	History func(ctx context.Context, w Program, db DB, h HistoryFile) (Verdict, error)
}

// HistoryFile is the run's operation history as a Check.History sees it.
type HistoryFile struct {
	// Path is the run directory's history.jsonl: every client process's
	// and worker host's operations, merged (internal/history).
	Path string
	// Start is the run's t = 0: an operation's Invoke and Complete are ns
	// since Start (time.Since(Start) for an operation appended now).
	Start time.Time
}

// DefaultCheckTimeout bounds a Check without a Timeout.
const DefaultCheckTimeout = 5 * time.Minute

// Verdict is a check's result: whether the condition held, and a line that
// says what was found (the first violations when it did not hold).
type Verdict struct {
	OK   bool
	Text string
}

// Summarizer is the ability of a Program with figures of its own.
type Summarizer interface {
	// Summarize computes the figures of a measured run phase from its
	// totals.
	Summarize(t Totals) Summary
}

// Totals is what the measurement of a run phase says, the input of
// Summarize.
type Totals struct {
	// RunTimeMs is the measured period in milliseconds.
	RunTimeMs float64
	// PerOp holds each operation's counts, by name.
	PerOp map[string]OpTotals
}

// OpTotals is one operation's counts.
type OpTotals struct {
	Count int64
	OK    int64
	// Errors counts the failed operations by outcome class name
	// (outcome.Class.String(): "conflict", "timeout", ...).
	Errors map[string]int64
	// P90Us is the 90th percentile latency of the successful operations,
	// from their intended start, µs (0 without successes).
	P90Us float64
}

// Summary is a Program's own part of summary.json.
type Summary struct {
	// Key is the top-level key of summary.json that Data is written under
	// (TPC-C: "tpcc"); it must not be one of summary.json's own keys.
	Key string
	// Data is written as JSON under Key; "" Key or nil Data writes nothing.
	Data any
	// Figures are the headline numbers, in order: written to summary.json's
	// workload_figures and printed in the terminal summary as
	// "[Group], Name, value".
	Figures []Figure
}

// Figure is one headline number of a program workload.
type Figure struct {
	Group string  // the section of the terminal summary, e.g. "TPC-C"
	Name  string  // e.g. "tpmC"
	Value float64 // printed with one decimal
}

// Recorder takes a checked workload's operations as they complete. The
// harness gives one to a Historian; it is safe for concurrent use by every
// terminal of a client process.
type Recorder interface {
	// Now is the time since the run's t = 0 on its monotonic clock, ns:
	// the clock of an Op's Invoke and Complete.
	Now() int64
	// Record appends a completed operation to the run's history. The
	// recorder does not keep op: the caller may reuse it after Record
	// returns.
	Record(op *history.Op)
}

// Historian is the ability of a Program whose operations form a history
// for the history checkers. The harness calls SetRecorder once, before the
// first NewTerminal; a terminal records each operation it executes with
// the process id of the single-threaded client that issued it (a new id
// after an Unknown outcome, see history.Op.Process). Process ids must be
// distinct across the workers of one client process; the harness makes
// them distinct across client processes and worker hosts when it merges.
type Historian interface {
	SetRecorder(r Recorder)
}
