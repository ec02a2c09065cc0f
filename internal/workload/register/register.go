// Package register is the register workload (workload=register): reads
// and writes — and, with register.casproportion, compare-and-sets — of
// single keys — few of them, so operations contend — with
// unique written values (unique across client processes too:
// recorded.ValueBase), every operation recorded through the harness's
// program.Recorder (the workload is a program.Historian). The harness's
// history checker `linearizable` (internal/check/linear, `checks:
// [linearizable]`) judges the run's history, merged from every client
// process: each key must behave as a linearizable register. The workload
// has no check of its own. It runs on any target whose driver reads and
// updates records; a mix with compare-and-sets needs a driver with the
// CASer ability (etcd, Cassandra, the SQL targets) and is refused on
// others (docs/workloads.md, docs/checks.md).
package register

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
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
	KeyKeys     = "register.keys"           // number of registers (default 5)
	KeyReadProp = "register.readproportion" // share of reads (default 0.5)
	KeyCASProp  = "register.casproportion"  // share of compare-and-sets (default 0)
	KeyField    = "register.field"          // the record field the value is in (default field0)
	KeyTable    = "table"                   // YCSB's table name (default usertable)
	// DefaultField is the default of register.field: YCSB's first field,
	// a column of every target's usertable.
	DefaultField = "field0"
)

// The operations, in OpNames order.
const (
	opRead = iota
	opWrite
	opCAS
)

// KV is what the workload needs of a driver: a driver.Driver is one.
type KV interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	Update(ctx context.Context, table, key string, values map[string][]byte) error
}

// CASer is the optional driver ability the compare-and-sets need: set
// field of the record at key to new if and only if it holds old, as one
// atomic step of the database. swapped false with a nil error: the field
// did not hold old (a missing record or field never does), nothing was
// written. An error's class says whether the write may have happened
// (Timeout, Unavailable after sending: unknown; Conflict, Rejected: not).
type CASer interface {
	CompareAndSet(ctx context.Context, table, key, field string, old, new []byte) (swapped bool, err error)
}

// Inserter is the ability to create a record: a write to a key with no
// record yet, on a database whose Update refuses a missing record (SQL),
// inserts it.
type Inserter interface {
	Insert(ctx context.Context, table, key string, values map[string][]byte) error
}

// Kind is the register workload as internal/workload registers it.
type Kind struct{}

// New builds the workload from p.
func (Kind) New(p *properties.Properties, seed int64) (program.Program, error) {
	p.Declare(KeyKeys, KeyReadProp, KeyCASProp, KeyField, KeyTable)
	keys, err := p.Int(KeyKeys, 5)
	if err != nil {
		return nil, err
	}
	rp, err := p.Float(KeyReadProp, 0.5)
	if err != nil {
		return nil, err
	}
	cp, err := p.Float(KeyCASProp, 0)
	if err != nil {
		return nil, err
	}
	base, err := recorded.ValueBase(p)
	if err != nil {
		return nil, err
	}
	cfg := Config{Keys: int(keys), ReadProportion: rp, CASProportion: cp, Field: p.String(KeyField, DefaultField), Table: p.String(KeyTable, "usertable"), ValueBase: base}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewWorkload(cfg), nil
}

// Config is the workload's configuration.
type Config struct {
	Keys           int
	ReadProportion float64
	// CASProportion is the share of compare-and-sets; the rest of the
	// operations (1 - ReadProportion - CASProportion) are writes.
	CASProportion float64
	Field         string
	Table         string
	// ValueBase is added to every value written (recorded.ValueBase: the
	// client process's, so that values are unique across processes).
	ValueBase int64
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Keys < 1 || c.Keys > 1_000_000:
		return fmt.Errorf("%s must be 1..1000000, got %d", KeyKeys, c.Keys)
	case c.ReadProportion < 0 || c.ReadProportion > 1:
		return fmt.Errorf("%s must be 0..1, got %g", KeyReadProp, c.ReadProportion)
	case c.CASProportion < 0 || c.CASProportion > 1:
		return fmt.Errorf("%s must be 0..1, got %g", KeyCASProp, c.CASProportion)
	case c.ReadProportion+c.CASProportion > 1+1e-9:
		return fmt.Errorf("%s (%g) and %s (%g) must add up to at most 1 (the rest are writes)", KeyReadProp, c.ReadProportion, KeyCASProp, c.CASProportion)
	case !fieldRE.MatchString(c.Field):
		return fmt.Errorf("%s must be a field name (a letter, then letters, digits or _), got %q", KeyField, c.Field)
	case c.Table == "":
		return errors.New("table must not be empty")
	case c.ValueBase < 0:
		return fmt.Errorf("value base %d: must not be negative", c.ValueBase)
	}
	return nil
}

var fieldRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// Workload is a configured register workload: its terminals record every
// operation through the Recorder the harness gives it (SetRecorder), on
// the run's clock.
type Workload struct {
	cfg    Config
	values recorded.Values // the values written
	rec    recorded.Recording
}

// NewWorkload returns the workload for cfg (valid). Until SetRecorder,
// operations are timed on the workload's own clock and not recorded.
func NewWorkload(cfg Config) *Workload {
	w := &Workload{cfg: cfg, rec: recorded.NewRecording()}
	w.values.Base = cfg.ValueBase
	return w
}

var (
	_ program.Historian = (*Workload)(nil)
	_ program.Requirer  = (*Workload)(nil)
)

// CheckDB implements program.Requirer: the driver must read and update
// records, and have compare-and-set when the mix has any.
func (w *Workload) CheckDB(db program.DB) error {
	if _, ok := db.Driver.(KV); !ok {
		return fmt.Errorf("the target's driver (%T) cannot read and update records, which the register workload needs", db.Driver)
	}
	if _, ok := db.Driver.(CASer); !ok && w.cfg.CASProportion > 0 {
		return errNoCAS(db.Driver)
	}
	return nil
}

func errNoCAS(drv any) error {
	return fmt.Errorf("the target's driver (%T) has no compare-and-set (CompareAndSet: etcd, cassandra, postgres-ha and galera have it), which %s > 0 needs; set %s=0 for reads and writes only",
		drv, KeyCASProp, KeyCASProp)
}

// SetRecorder implements program.Historian: every operation from now on is
// recorded through r, timed on r's clock.
func (w *Workload) SetRecorder(r program.Recorder) { w.rec.SetRecorder(r) }

// OpNames implements program.Program.
func (w *Workload) OpNames() []string { return []string{"READ", "WRITE", "CAS"} }

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), proc: recorded.NewProcess(id), known: map[int]int64{}}
}

type terminal struct {
	w       *Workload
	rng     *rand.Rand
	proc    recorded.Process
	op, key int
	// known is the value this terminal last saw or wrote at each key: a
	// compare-and-set expects it.
	known map[int]int64
}

// Next implements program.Terminal: a read, write or compare-and-set of a
// random key, no pause.
func (t *terminal) Next() (int, time.Duration) {
	switch r := t.rng.Float64(); {
	case r < t.w.cfg.ReadProportion:
		t.op = opRead
	case r < t.w.cfg.ReadProportion+t.w.cfg.CASProportion:
		t.op = opCAS
	default:
		t.op = opWrite
	}
	t.key = t.rng.IntN(t.w.cfg.Keys)
	return t.op, 0
}

// Execute implements program.Terminal: it runs the operation Next picked
// and records it. A read that found the key is ok with its value, one
// that found none ok without a value, any other error unknown. A write or
// compare-and-set acknowledged is ok; a compare-and-set that found
// another value, and a write or compare-and-set refused as a conflict or
// rejected, failed (not applied); any other error leaves it unknown and
// the terminal continues as a new process (it may still take effect).
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	kv, ok := db.Driver.(KV)
	if !ok {
		return outcome.Classified(outcome.Rejected, "register", fmt.Errorf("the target's driver cannot read and update records (%T)", db.Driver))
	}
	cfg := &t.w.cfg
	key := "reg" + strconv.Itoa(t.key)
	op := history.Op{Process: t.proc.ID(), Mops: make([]history.Mop, 1)}
	var err error
	op.Invoke = t.w.rec.Now()
	switch t.op {
	case opRead:
		op.Name = "read"
		var rec map[string][]byte
		rec, err = kv.Read(ctx, cfg.Table, key, []string{cfg.Field})
		op.Complete = t.w.rec.Now()
		m := history.Mop{F: history.Read, Key: key}
		switch {
		case err == nil && rec[cfg.Field] == nil:
			op.Outcome = history.OK // a record without the field: no value yet
		case err == nil:
			v, perr := strconv.ParseInt(string(rec[cfg.Field]), 10, 64)
			if perr != nil {
				return outcome.Classified(outcome.Other, "register", fmt.Errorf("key %s holds %q, not a written value", key, rec[cfg.Field]))
			}
			m.Value, m.HasValue = v, true
			t.known[t.key] = v
		case errors.Is(err, outcome.ErrNotFound):
			op.Outcome = history.OK // no value yet
		default:
			op.Outcome = history.Unknown // told nothing; left out by the checker
		}
		op.Mops[0] = m
	case opWrite:
		op.Name = "write"
		v := t.w.values.Next()
		op.Mops[0] = history.Mop{F: history.Write, Key: key, Value: v}
		err = put(ctx, kv, db.Driver, cfg.Table, key, map[string][]byte{cfg.Field: []byte(strconv.FormatInt(v, 10))})
		op.Complete = t.w.rec.Now()
		op.Outcome = recorded.OutcomeOf(err, true)
		if err == nil {
			t.known[t.key] = v
		}
	case opCAS:
		op.Name = "cas"
		c, ok := db.Driver.(CASer)
		if !ok {
			return outcome.Classified(outcome.Rejected, "register", errNoCAS(db.Driver))
		}
		old, v := t.known[t.key], t.w.values.Next()
		op.Mops[0] = history.Mop{F: history.CAS, Key: key, Value: old, New: v}
		var swapped bool
		swapped, err = c.CompareAndSet(ctx, cfg.Table, key, cfg.Field, []byte(strconv.FormatInt(old, 10)), []byte(strconv.FormatInt(v, 10)))
		op.Complete = t.w.rec.Now()
		op.Outcome = recorded.OutcomeOf(err, true)
		switch {
		case err == nil && swapped:
			t.known[t.key] = v
		case err == nil:
			op.Outcome, op.Error = history.Fail, "not swapped"
			delete(t.known, t.key)
		}
	}
	if err != nil {
		op.Error = outcome.ClassOf(err).String()
	}
	t.w.rec.Record(&op)
	if t.op != opRead {
		t.proc.After(op.Outcome) // a read of unknown outcome changed nothing
	}
	return err
}

// put writes values to the record at key: an Update, and when the
// database refuses it because there is no record yet (SQL), an Insert;
// an Insert refused because another writer created the record in between
// is followed by one more Update. Each step either takes effect as one
// write or not at all, so the write is atomic.
func put(ctx context.Context, kv KV, drv any, table, key string, values map[string][]byte) error {
	err := kv.Update(ctx, table, key, values)
	ins, ok := drv.(Inserter)
	if !ok || outcome.ClassOf(err) != outcome.NotFound {
		return err
	}
	if err = ins.Insert(ctx, table, key, values); outcome.ClassOf(err) == outcome.Rejected {
		return kv.Update(ctx, table, key, values)
	}
	return err
}
