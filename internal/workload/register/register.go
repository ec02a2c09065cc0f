// Package register is the register workload (workload=register): reads
// and writes of single keys — few of them, so operations contend — with
// unique written values, every operation recorded through the harness's
// program.Recorder (the workload is a program.Historian) for the
// history checker `linearizable` (internal/check/linear): each key must
// behave as a linearizable register. It runs on any target whose driver
// reads and updates records (docs/workloads.md, docs/checks.md).
package register

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

	"github.com/faultbench/faultbench/internal/check/linear"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// The properties the workload reads.
const (
	KeyKeys     = "register.keys"           // number of registers (default 5)
	KeyReadProp = "register.readproportion" // share of reads (default 0.5)
	KeyTable    = "table"                   // YCSB's table name (default usertable)
	// Field is the record field the value is written in.
	Field = "v"
)

// The operations, in OpNames order.
const (
	opRead = iota
	opWrite
)

// CheckName is the workload's check in a scenario's checks:.
const CheckName = "linearizable"

// KV is what the workload needs of a driver: a driver.Driver is one.
type KV interface {
	Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error)
	Update(ctx context.Context, table, key string, values map[string][]byte) error
}

// Kind is the register workload as internal/workload registers it.
type Kind struct{}

// New builds the workload from p.
func (Kind) New(p *properties.Properties, seed int64) (program.Program, error) {
	p.Declare(KeyKeys, KeyReadProp, KeyTable)
	keys, err := p.Int(KeyKeys, 5)
	if err != nil {
		return nil, err
	}
	rp, err := p.Float(KeyReadProp, 0.5)
	if err != nil {
		return nil, err
	}
	cfg := Config{Keys: int(keys), ReadProportion: rp, Table: p.String(KeyTable, "usertable")}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewWorkload(cfg), nil
}

// Checks returns the linearizable check.
func (Kind) Checks() []program.Check {
	return []program.Check{{
		Name:    CheckName,
		Doc:     "every register linearizable (porcupine, per key)",
		Timeout: 10 * time.Minute,
		Run: func(ctx context.Context, w program.Program, _ program.DB) (program.Verdict, error) {
			rw, ok := w.(*Workload)
			if !ok {
				return program.Verdict{}, fmt.Errorf("the %s check needs the register workload, got %T", CheckName, w)
			}
			return rw.Check(ctx)
		},
	}}
}

// Config is the workload's configuration.
type Config struct {
	Keys           int
	ReadProportion float64
	Table          string
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Keys < 1 || c.Keys > 1_000_000:
		return fmt.Errorf("%s must be 1..1000000, got %d", KeyKeys, c.Keys)
	case c.ReadProportion < 0 || c.ReadProportion > 1:
		return fmt.Errorf("%s must be 0..1, got %g", KeyReadProp, c.ReadProportion)
	case c.Table == "":
		return errors.New("table must not be empty")
	}
	return nil
}

// Workload is a configured register workload: its terminals record every
// operation through the Recorder the harness gives it (SetRecorder), on
// the run's clock. It also keeps the operations of this process in
// memory (History), on the recorder's clock, for its own check.
type Workload struct {
	cfg  Config
	next atomic.Int64 // the last value written
	rec  program.Recorder
	mem  *memory
}

// NewWorkload returns the workload for cfg (valid). Until SetRecorder,
// operations are timed on the workload's own clock (ns since NewWorkload).
func NewWorkload(cfg Config) *Workload {
	m := &memory{start: time.Now()}
	return &Workload{cfg: cfg, rec: m, mem: m}
}

var _ program.Historian = (*Workload)(nil)

// SetRecorder implements program.Historian: every operation from now on is
// recorded through r, timed on r's clock.
func (w *Workload) SetRecorder(r program.Recorder) {
	if r != nil {
		w.rec = r
	}
}

// memory is the in-process history: a Recorder of its own clock, and the
// copy of every operation recorded through the harness's.
type memory struct {
	start time.Time
	mu    sync.Mutex
	ops   []history.Op
}

func (m *memory) Now() int64 { return time.Since(m.start).Nanoseconds() }

func (m *memory) Record(op *history.Op) {
	c := *op
	c.Mops = append([]history.Mop(nil), op.Mops...)
	m.mu.Lock()
	m.ops = append(m.ops, c)
	m.mu.Unlock()
}

// record hands op to the harness's recorder and keeps a copy in memory.
func (w *Workload) record(op *history.Op) {
	if w.rec != program.Recorder(w.mem) {
		w.rec.Record(op)
	}
	w.mem.Record(op)
}

// OpNames implements program.Program.
func (w *Workload) OpNames() []string { return []string{"READ", "WRITE"} }

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), id: id, process: id}
}

// History returns a copy of the operations this process recorded so far.
func (w *Workload) History() []history.Op {
	w.mem.mu.Lock()
	defer w.mem.mu.Unlock()
	return append([]history.Op(nil), w.mem.ops...)
}

// Check runs the linearizable checker on the recorded history. A history
// without operations fails: its operations ran elsewhere (client
// processes, worker hosts), and nothing was checked.
func (w *Workload) Check(ctx context.Context) (program.Verdict, error) {
	ops := w.History()
	if len(ops) == 0 {
		return program.Verdict{OK: false, Text: "no operations recorded in this process (client processes and worker hosts keep their own): nothing was checked"}, nil
	}
	v, err := linear.CheckOps(ctx, ops, linear.Options{})
	if err != nil {
		return program.Verdict{}, err
	}
	var b strings.Builder
	b.WriteString(v.Line())
	for _, an := range v.Anomalies {
		b.WriteString("; ")
		b.WriteString(an.Explanation)
	}
	for _, n := range v.Notes {
		b.WriteString("; ")
		b.WriteString(n)
	}
	return program.Verdict{OK: v.Valid == verdict.True, Text: b.String()}, nil
}

type terminal struct {
	w       *Workload
	rng     *rand.Rand
	id      int
	process int
	gen     int
	op, key int
}

// Next implements program.Terminal: a read or a write of a random key, no
// pause.
func (t *terminal) Next() (int, time.Duration) {
	t.op = opWrite
	if t.rng.Float64() < t.w.cfg.ReadProportion {
		t.op = opRead
	}
	t.key = t.rng.IntN(t.w.cfg.Keys)
	return t.op, 0
}

// processStride separates the process ids a worker takes: worker id's
// processes are id, id + stride, id + 2 stride, ...
const processStride = 1 << 20

// Execute implements program.Terminal: it runs the operation Next picked
// and records it. A write acknowledged is ok, one refused as a conflict
// failed (it was not applied), any other error leaves it unknown and the
// terminal continues as a new process (the write may still take effect).
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	kv, ok := db.Driver.(KV)
	if !ok {
		return outcome.Classified(outcome.Rejected, "register", fmt.Errorf("the target's driver cannot read and update records (%T)", db.Driver))
	}
	key := "reg" + strconv.Itoa(t.key)
	op := history.Op{Process: t.process, Mops: make([]history.Mop, 1)}
	var err error
	op.Invoke = t.w.rec.Now()
	switch t.op {
	case opRead:
		op.Name = "read"
		var rec map[string][]byte
		rec, err = kv.Read(ctx, t.w.cfg.Table, key, []string{Field})
		op.Complete = t.w.rec.Now()
		m := history.Mop{F: history.Read, Key: key}
		switch {
		case err == nil:
			v, perr := strconv.ParseInt(string(rec[Field]), 10, 64)
			if perr != nil {
				return outcome.Classified(outcome.Other, "register", fmt.Errorf("key %s holds %q, not a written value", key, rec[Field]))
			}
			m.Value, m.HasValue = v, true
		case errors.Is(err, outcome.ErrNotFound):
			op.Outcome = history.OK // no value yet
		default:
			op.Outcome = history.Unknown // told nothing; left out by the checker
		}
		op.Mops[0] = m
	case opWrite:
		op.Name = "write"
		v := t.w.next.Add(1)
		op.Mops[0] = history.Mop{F: history.Write, Key: key, Value: v}
		err = kv.Update(ctx, t.w.cfg.Table, key, map[string][]byte{Field: []byte(strconv.FormatInt(v, 10))})
		op.Complete = t.w.rec.Now()
		switch {
		case err == nil:
		case outcome.ClassOf(err) == outcome.Conflict:
			op.Outcome = history.Fail
		default:
			op.Outcome = history.Unknown
		}
	}
	if err != nil {
		op.Error = outcome.ClassOf(err).String()
	}
	t.w.record(&op)
	if op.Outcome == history.Unknown && t.op == opWrite {
		t.gen++
		t.process = t.id + t.gen*processStride
	}
	return err
}
