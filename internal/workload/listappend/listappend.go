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
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
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
	// ValueBase is added to every value appended (recorded.ValueBase: the
	// client process's, so that values are unique across processes).
	ValueBase int64
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
	}
	return recorded.CheckMix(KeyReadProp, c.ReadProportion, c.ValueBase, KeyTable, c.Table)
}

// Workload is a configured list-append workload, shared by its terminals.
type Workload struct {
	cfg    Config
	rec    recorded.Recording
	values recorded.Values // the values appended
	table  *recorded.Table
	// appends counts the appends given to each key slot; slot s appends
	// to key s + Keys*(count/MaxAppends).
	appends []atomic.Int64
}

// NewWorkload returns the workload for cfg (valid).
func NewWorkload(cfg Config) *Workload {
	w := &Workload{cfg: cfg, rec: recorded.NewRecording(), appends: make([]atomic.Int64, cfg.Keys),
		table: &recorded.Table{Workload: Name, Name: cfg.Table, Column: "TEXT", Field: Field}}
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

type terminal struct {
	w    *Workload
	rng  *rand.Rand
	proc recorded.Process
	mops []history.Mop
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
		t.mops[i] = history.Mop{F: history.Append, Key: t.w.appendKey(s), Value: t.w.values.Next()}
	}
	return 0, 0
}

// Execute implements program.Terminal: it runs the transaction Next
// picked and records it (recorded.Recording.Do: committed is ok; an
// error before the commit, or a commit refused as a conflict, is a
// failure; any other commit error leaves it unknown, and the terminal
// continues as a new process).
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
	appendQ, readQ := w.table.Upsert(dialect, true), w.table.Select()
	for i := range mops {
		var err error
		switch m := &mops[i]; m.F {
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
			return err
		}
	}
	return nil
}

// runKV runs mops in the key-value transaction tx: a list is read once,
// then extended in the transaction's own view and written back whole.
func (w *Workload) runKV(ctx context.Context, tx program.Txn, mops []history.Mop) error {
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
		s, err := get(m.Key)
		if err == nil {
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
			return err
		}
	}
	return nil
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
