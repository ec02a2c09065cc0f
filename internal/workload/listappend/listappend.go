// Package listappend is the list-append workload (workload=list-append):
// transactions of appends of unique values to lists and reads of whole
// lists over a few keys, so that transactions contend, every transaction
// recorded in the run's history for the isolation checker
// (internal/check/elle), as Elle's list-append (Kingsbury and Alvaro, VLDB
// 2020). A key takes a bounded number of appends and is then retired for a
// fresh one, so lists stay short.
//
// On an SQL target (postgres-ha, galera) a list is one row whose text
// column holds the list's elements, comma-separated; an append is one
// upsert that concatenates (INSERT ... ON CONFLICT DO UPDATE SET v = v ||
// ',' || new, or ON DUPLICATE KEY UPDATE v = CONCAT(...)). The database
// itself orders the appends to a key (they update one row), and every read
// returns a prefix of that order: the checker recovers each key's version
// order from the reads. (Rows inserted one per element would need an
// ordering column, whose order is not the order of commits.) On a target
// with key-value transactions (txkv) a list is a record whose field holds
// the same text; an append reads it and writes it back longer, in the
// transaction. A target with neither is refused (program.Requirer).
// docs/workloads.md and docs/checks.md describe it.
package listappend

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
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
	KeyKeys       = "listappend.keys"           // keys appended to at a time (default 5)
	KeyMaxAppends = "listappend.maxappends"     // appends a key takes before it is retired (default 64)
	KeyTxnLen     = "listappend.txnlen"         // most micro-operations per transaction (default 4)
	KeyReadProp   = "listappend.readproportion" // share of reads among micro-operations (default 0.5)
	KeyTable      = "listappend.table"          // SQL table or key-value table (default listappend)
)

// Field is the record field (key-value targets) and column (SQL) that
// holds a list.
const Field = "v"

// Name is the workload's name (workload=list-append).
const Name = "list-append"

// Kind is the list-append workload as internal/workload registers it.
type Kind struct{}

// New builds the workload from p.
func (Kind) New(p *properties.Properties, seed int64) (program.Program, error) {
	p.Declare(KeyKeys, KeyMaxAppends, KeyTxnLen, KeyReadProp, KeyTable)
	var cfg Config
	var err error
	ints := []struct {
		key string
		def int64
		dst *int
	}{{KeyKeys, 5, &cfg.Keys}, {KeyMaxAppends, 64, &cfg.MaxAppends}, {KeyTxnLen, 4, &cfg.TxnLen}}
	for _, f := range ints {
		v, err := p.Int(f.key, f.def)
		if err != nil {
			return nil, err
		}
		if v < 0 || v > 1<<30 {
			return nil, p.Error(f.key, "out of range")
		}
		*f.dst = int(v)
	}
	if cfg.ReadProportion, err = p.Float(KeyReadProp, 0.5); err != nil {
		return nil, err
	}
	cfg.Table = p.String(KeyTable, "listappend")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewWorkload(cfg), nil
}

// Config is the workload's configuration.
type Config struct {
	// Keys is how many keys are appended to at a time: few keys, high
	// contention.
	Keys int
	// MaxAppends is how many appends a key takes before it is retired and
	// a fresh key takes its place.
	MaxAppends int
	// TxnLen is the most micro-operations of a transaction (each has
	// 1..TxnLen, uniformly).
	TxnLen int
	// ReadProportion is the share of reads among micro-operations.
	ReadProportion float64
	// Table holds the lists.
	Table string
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Keys < 1 || c.Keys > 100_000:
		return fmt.Errorf("%s must be 1..100000, got %d", KeyKeys, c.Keys)
	case c.MaxAppends < 1 || c.MaxAppends > 100_000:
		return fmt.Errorf("%s must be 1..100000, got %d", KeyMaxAppends, c.MaxAppends)
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

// Workload is a configured list-append workload, shared by its terminals.
type Workload struct {
	cfg   Config
	start time.Time
	rec   program.Recorder // nil: nothing is recorded
	next  atomic.Int64     // the last value appended
	// appends counts the appends given to each key slot; slot s appends
	// to key s + Keys*(count/MaxAppends).
	appends []atomic.Int64

	schemaMu sync.Mutex
	schemaOK bool
}

// NewWorkload returns the workload for cfg (valid).
func NewWorkload(cfg Config) *Workload {
	return &Workload{cfg: cfg, start: time.Now(), appends: make([]atomic.Int64, cfg.Keys)}
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

func keyName(id int64) string { return "k" + strconv.FormatInt(id, 10) }

// currentKey is the key slot s reads now.
func (w *Workload) currentKey(s int) string {
	n := w.appends[s].Load()
	return keyName(int64(s) + int64(w.cfg.Keys)*(n/int64(w.cfg.MaxAppends)))
}

// appendKey takes the next append of slot s: its key.
func (w *Workload) appendKey(s int) string {
	n := w.appends[s].Add(1) - 1
	return keyName(int64(s) + int64(w.cfg.Keys)*(n/int64(w.cfg.MaxAppends)))
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
	ddl := "CREATE TABLE IF NOT EXISTS " + w.cfg.Table + " (k VARCHAR(64) PRIMARY KEY, " + Field + " TEXT NOT NULL)"
	if db.Dialect == "mysql" {
		ddl = "CREATE TABLE IF NOT EXISTS " + w.cfg.Table + " (k VARCHAR(64) PRIMARY KEY, " + Field + " LONGTEXT NOT NULL) ENGINE=InnoDB"
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

// Next implements program.Terminal: the next transaction, 1..TxnLen
// micro-operations, each a read of a key or an append of a fresh value.
func (t *terminal) Next() (int, time.Duration) {
	cfg := &t.w.cfg
	n := 1 + t.rng.IntN(cfg.TxnLen)
	t.mops = make([]history.Mop, n) // recorded ops are not kept by the recorder, but Execute reads into them
	for i := range t.mops {
		s := t.rng.IntN(cfg.Keys)
		if t.rng.Float64() < cfg.ReadProportion {
			t.mops[i] = history.Mop{F: history.Read, Key: t.w.currentKey(s), IsList: true}
			continue
		}
		t.mops[i] = history.Mop{F: history.Append, Key: t.w.appendKey(s), Value: t.w.next.Add(1)}
	}
	return 0, 0
}

// Execute implements program.Terminal: it runs the transaction Next
// picked and records it. Committed is ok; an error before the commit, or
// a commit refused (conflict), is a failure (nothing took effect); any
// other error of the commit leaves it unknown, and the terminal continues
// as a new process.
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
				op.Mops[i].List = nil // not known
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
	appendQ := "INSERT INTO " + w.cfg.Table + " (k, " + Field + ") VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET " +
		Field + " = " + w.cfg.Table + "." + Field + " || ',' || EXCLUDED." + Field
	if db.Dialect == "mysql" {
		appendQ = "INSERT INTO " + w.cfg.Table + " (k, " + Field + ") VALUES (?, ?) ON DUPLICATE KEY UPDATE " +
			Field + " = CONCAT(" + Field + ", ',', VALUES(" + Field + "))"
	}
	readQ := "SELECT " + Field + " FROM " + w.cfg.Table + " WHERE k = ?"
	for i := range mops {
		m := &mops[i]
		switch m.F {
		case history.Append:
			_, err = tx.Exec(ctx, appendQ, m.Key, strconv.FormatInt(m.Value, 10))
		case history.Read:
			var text string
			err = tx.Query(ctx, readQ, []any{m.Key}, func(scan func(...any) error) error { return scan(&text) })
			if err == nil {
				m.List, err = ParseList(text)
			}
		}
		if err != nil {
			_ = tx.Abort(ctx)
			return false, err
		}
	}
	return true, tx.Commit(ctx)
}

// runKV runs mops as one key-value transaction: a list is read once, then
// extended in the transaction's own view and written back whole.
func (w *Workload) runKV(ctx context.Context, db program.DB, mops []history.Mop) (atCommit bool, err error) {
	tx, err := db.KV(ctx)
	if err != nil {
		return false, err
	}
	type state struct {
		list   []int64
		exists bool
	}
	view := map[string]*state{}
	get := func(key string) (*state, error) {
		if s, ok := view[key]; ok {
			return s, nil
		}
		s := &state{}
		rec, err := tx.Read(ctx, w.cfg.Table, key, []string{Field})
		switch {
		case errors.Is(err, outcome.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			s.exists = true
			if s.list, err = ParseList(string(rec[Field])); err != nil {
				return nil, err
			}
		}
		view[key] = s
		return s, nil
	}
	for i := range mops {
		m := &mops[i]
		var s *state
		if s, err = get(m.Key); err == nil {
			switch m.F {
			case history.Append:
				s.list = append(s.list, m.Value)
				rec := map[string][]byte{Field: []byte(FormatList(s.list))}
				if s.exists {
					err = tx.Update(ctx, w.cfg.Table, m.Key, rec)
				} else {
					err = tx.Insert(ctx, w.cfg.Table, m.Key, rec)
					s.exists = true
				}
			case history.Read:
				m.List = append([]int64(nil), s.list...)
			}
		}
		if err != nil {
			_ = tx.Abort(ctx)
			return false, err
		}
	}
	return true, tx.Commit(ctx)
}

// ParseList parses a list as stored: decimal elements, comma-separated;
// "" is the empty list.
func ParseList(s string) ([]int64, error) {
	if s == "" {
		return []int64{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, outcome.Classified(outcome.Other, Name, fmt.Errorf("a list holds %q, not a written value", p))
		}
		out[i] = v
	}
	return out, nil
}

// FormatList is the stored form of a list (ParseList's inverse).
func FormatList(l []int64) string {
	b := make([]byte, 0, 8*len(l))
	for i, v := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(b)
}
