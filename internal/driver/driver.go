// Package driver defines how faultbench talks to a target database: the
// Driver interface (YCSB's five operations, context first), optional
// abilities discovered by type assertion (transactions, leader lookup), the
// error classes every failed operation is sorted into, and a name→constructor
// registry. Concrete drivers live in sub-packages (driver/etcd, driver/redis).
package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
)

// Class is the outcome class of an operation. OK is success; every other
// value is an error class.
type Class uint8

// The outcome classes. Their order is the column order of windows.csv.
const (
	OK          Class = iota // success
	Timeout                  // the operation's deadline passed, outcome unknown
	Unavailable              // no server could take the request (refused, no leader, cluster down)
	Conflict                 // aborted by the database (transaction conflict, retry-able)
	Rejected                 // the database refused the request (read-only, over capacity, bad request)
	Other                    // anything else
	// NumClasses is the number of classes, OK included.
	NumClasses
)

// String returns the class's lower-case name as used in files.
func (c Class) String() string {
	switch c {
	case OK:
		return "ok"
	case Timeout:
		return "timeout"
	case Unavailable:
		return "unavailable"
	case Conflict:
		return "conflict"
	case Rejected:
		return "rejected"
	case Other:
		return "other"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ErrorClasses lists the error classes (every class but OK) in file order.
func ErrorClasses() []Class { return []Class{Timeout, Unavailable, Conflict, Rejected, Other} }

// Error is an operation error with its class.
type Error struct {
	Class Class
	Op    string // the operation, e.g. "read"
	Err   error
}

func (e *Error) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("%s: %v", e.Class, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Op, e.Class, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Classified wraps err with a class; nil stays nil.
func Classified(class Class, op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: class, Op: op, Err: err}
}

// ErrNotFound is returned (possibly wrapped) by Read when the key does not
// exist. It is class Other for measurement, but checks test for it.
var ErrNotFound = errors.New("not found")

// ClassOf returns the class of err: OK for nil, the class of a wrapped
// *Error, and otherwise a generic guess from the standard library's error
// types (deadline → Timeout, refused/reset/unreachable → Unavailable).
func ClassOf(err error) Class {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return GenericClass(err)
}

// GenericClass classifies errors that carry no driver-specific meaning.
func GenericClass(err error) Class {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return Timeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed):
		return Unavailable
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Timeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return Unavailable
	}
	return Other
}

// Driver is a client of one target database, shared by all worker
// goroutines of a run (implementations must be safe for concurrent use).
// Values are records: field name → bytes. Every method takes ctx first and
// returns errors classified with Classified (or plain errors that ClassOf
// can classify).
type Driver interface {
	// Read reads the record at key; fields nil means all fields.
	// A missing key returns an error wrapping ErrNotFound.
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	// Scan reads up to count records in key order starting at startKey.
	Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error)
	// Update overwrites the given fields of the record at key.
	Update(ctx context.Context, table, key string, values map[string][]byte) error
	// Insert writes a new record at key.
	Insert(ctx context.Context, table, key string, values map[string][]byte) error
	// Delete removes the record at key.
	Delete(ctx context.Context, table, key string) error
	// Close releases the driver's connections.
	Close() error
}

// Txn is one transaction of a Transactional driver.
type Txn interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	Update(ctx context.Context, table, key string, values map[string][]byte) error
	Insert(ctx context.Context, table, key string, values map[string][]byte) error
	Delete(ctx context.Context, table, key string) error
	// Commit makes the transaction's writes durable; a Conflict-class error means it aborted.
	Commit(ctx context.Context) error
	// Abort discards the transaction.
	Abort(ctx context.Context) error
}

// Transactional is the optional ability to run multi-operation transactions.
type Transactional interface {
	Begin(ctx context.Context) (Txn, error)
}

// ClientCrash says how a ClientCrasher crashes its client.
type ClientCrash struct {
	// Hold is how long, before the crash, the client keeps committing
	// without flushing, so that the crash leaves that many seconds of
	// committed but unflushed write-sets behind; 0 crashes right away.
	Hold time.Duration
}

// CrashedClient identifies the client instance a crash ended.
type CrashedClient struct {
	Name string    // the crashed instance's name at the database
	ID   string    // its registration id at the database
	At   time.Time // when it stopped (heartbeats ended, flushes abandoned)
	// Unflushed counts the write-sets it had committed and not flushed when
	// it stopped (with Hold: every commit of the hold).
	Unflushed int64
	// Replacement names the new instance the load continues on.
	Replacement string
}

// ClientRecovery is the database's recovery of a crashed client.
type ClientRecovery struct {
	Detected time.Time // the database declared the client failed
	Done     time.Time // its recovery finished
	Replayed int       // write-sets the recovery replayed
	Detail   string    // database-specific facts, e.g. the threshold replay started after
}

// ClientCrasher is the optional ability of a driver whose client library
// keeps state the database must recover when the client dies (txkv's
// committed but unflushed write-sets). CrashClient makes the client
// instance the load runs on crash — it stops heartbeating and abandons its
// pending work without saying goodbye — and continues the load on a fresh
// instance (a new registration, a replacement client node); operations in
// flight on the crashed instance fail. WaitClientRecovered waits until the
// database has recovered the crashed instance. The crash-client fault uses
// both; see docs/faults.md.
type ClientCrasher interface {
	CrashClient(ctx context.Context, c ClientCrash) (CrashedClient, error)
	WaitClientRecovered(ctx context.Context, c CrashedClient) (ClientRecovery, error)
}

// Factory builds a driver from the run's properties. It must declare every
// property it understands (p.DeclarePrefix("etcd.") or typed getters) and
// validate them, returning errors that name the property.
type Factory func(ctx context.Context, p *properties.Properties) (Driver, error)

// Registry maps driver names to factories. Build one in main (no package
// state) and register each driver with one line.
type Registry struct {
	factories map[string]Factory
	help      map[string]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: map[string]Factory{}, help: map[string]string{}}
}

// Register adds a driver; help is a one-line description for --help.
// Registering a name twice panics (a programming error, caught by tests).
func (r *Registry) Register(name, help string, f Factory) {
	if _, dup := r.factories[name]; dup {
		panic("driver: duplicate registration of " + name)
	}
	r.factories[name] = f
	r.help[name] = help
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Help returns the one-line description of a driver.
func (r *Registry) Help(name string) string { return r.help[name] }

// New builds the named driver.
func (r *Registry) New(ctx context.Context, name string, p *properties.Properties) (Driver, error) {
	f, ok := r.factories[name]
	if !ok {
		return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(r.Names(), ", "))
	}
	d, err := f(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s driver: %w", name, err)
	}
	return d, nil
}
