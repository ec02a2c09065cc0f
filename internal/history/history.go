// Package history is the operation history of a run: every operation a
// checked workload issued, as invoked and completed, with its process, its
// micro-operations (the keys, the values written and the values read), its
// invoke and complete times on the run's monotonic clock and its outcome.
//
// The file format (docs/output.md, "history.jsonl") is JSON lines: an
// optional header line, then one line per completed operation, appended as
// operations complete. A Writer is safe for concurrent use and flushes at
// least every FlushInterval, so a run killed halfway leaves a readable
// prefix; a Reader tolerates a torn last line. Merge joins the histories of
// several client processes or worker hosts into one, ordered by time, with
// distinct process ids.
//
// The checkers (internal/check/...) read histories; this package knows no
// database, driver or runner.
package history

import (
	"fmt"
)

// Version is the format version written in the header line.
const Version = 1

// FileName is the history's file name in a run directory.
const FileName = "history.jsonl"

// Outcome is how an operation ended.
type Outcome uint8

// The outcomes.
const (
	// OK: the database acknowledged the operation; its reads are known.
	OK Outcome = iota
	// Fail: the operation certainly took no effect (refused, aborted).
	Fail
	// Unknown: the operation may or may not have taken effect (a timeout,
	// a lost connection); its reads are not known.
	Unknown
)

// String is the outcome's name in the file: ok, fail or unknown.
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Fail:
		return "fail"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// ParseOutcome is the inverse of Outcome.String.
func ParseOutcome(s string) (Outcome, error) {
	switch s {
	case "ok":
		return OK, nil
	case "fail":
		return Fail, nil
	case "unknown":
		return Unknown, nil
	}
	return 0, fmt.Errorf("unknown outcome %q (want ok, fail or unknown)", s)
}

// Func is what a micro-operation does.
type Func string

// The micro-operation functions.
const (
	// Read of a key: a register's value (Value, or none: HasValue false
	// when the key had no value) or a list's elements (List; IsList).
	Read Func = "r"
	// Write of Value to a register.
	Write Func = "w"
	// Append of Value to the list (or set) at the key.
	Append Func = "append"
	// CAS: compare-and-set from Value to New.
	CAS Func = "cas"
	// Add Value (may be negative) to the key's number: a bank transfer's
	// half.
	Add Func = "add"
)

// Mop is a micro-operation: one function on one key. An operation is a
// sequence of them (one for a single-key operation, several for a
// transaction). A read's result is meaningful only when the operation's
// outcome is OK.
type Mop struct {
	F   Func
	Key string
	// Value: written (Write), appended (Append), added (Add), expected
	// (CAS), or read (Read of a register, when HasValue).
	Value int64
	// New is the value a CAS sets.
	New int64
	// HasValue: a register Read returned a value (false: the key had none).
	HasValue bool
	// List is what a list Read returned, in order; meaningful only when
	// IsList.
	List []int64
	// IsList: the Read is of a list (List holds its elements, possibly
	// none), not of a register.
	IsList bool
}

// Op is one operation of the history.
type Op struct {
	// Process is the single-threaded client that issued the operation.
	// A process issues its operations one after the other; a workload
	// gives a worker a new process id after an Unknown outcome, since the
	// old operation may still take effect while the worker goes on.
	Process int
	// Name is the workload's name of the operation: "read", "write",
	// "cas", "txn", "transfer", ...
	Name string
	// Mops are its micro-operations in the order the client issued them.
	Mops []Mop
	// Invoke and Complete are nanoseconds since the run's t = 0 on its
	// monotonic clock: when the client issued the operation and when it
	// saw the outcome.
	Invoke, Complete int64
	Outcome          Outcome
	// Error is the outcome class or message of a failed or unknown
	// operation (informational).
	Error string
}

// Validate reports an operation the checkers cannot use.
func (o *Op) Validate() error {
	if o.Process < 0 {
		return fmt.Errorf("negative process %d", o.Process)
	}
	if o.Complete < o.Invoke {
		return fmt.Errorf("completes at %d ns before its invoke at %d ns", o.Complete, o.Invoke)
	}
	if o.Outcome > Unknown {
		return fmt.Errorf("bad outcome %d", o.Outcome)
	}
	for i, m := range o.Mops {
		switch m.F {
		case Read, Write, Append, CAS, Add:
		default:
			return fmt.Errorf("micro-operation %d: unknown function %q", i, m.F)
		}
	}
	return nil
}
