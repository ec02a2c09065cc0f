// Package appendset is the append workload (workload=appendset): appends
// of unique values to a few lists, one key per operation and no
// transactions (Redis RPUSH), every operation recorded through the
// harness's program.Recorder (the workload is a program.Historian), and
// a final read of every list once the measured phase has ended and every
// node is back. Its check `lost-appends` makes the final reads, records
// them as list reads in the history and judges them with the set checker
// (internal/check/setvis): every acknowledged append must be in its final
// list, so no loss hides behind a later write (a register's last value
// would). It runs on a target whose driver has lists (Lister: Redis and
// Redis Cluster); docs/workloads.md, docs/checks.md.
package appendset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/check/setvis"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// The properties the workload reads.
const (
	KeyLists  = "appendset.lists"  // number of lists (default 8)
	KeyPrefix = "appendset.prefix" // the lists' key prefix (default "list")
)

// CheckName is the workload's check in a scenario's checks:.
const CheckName = "lost-appends"

// Lister is the driver ability the workload needs: appends to and reads
// of a list at one key. The Redis driver has it.
type Lister interface {
	// ListAppend appends value to the end of the list at key.
	ListAppend(ctx context.Context, key string, value []byte) error
	// ListRead returns the list at key in order; a missing key is empty.
	ListRead(ctx context.Context, key string) ([][]byte, error)
}

// Kind is the append workload as internal/workload registers it.
type Kind struct{}

// New builds the workload from p.
func (Kind) New(p *properties.Properties, _ int64) (program.Program, error) {
	p.Declare(KeyLists, KeyPrefix)
	n, err := p.Int(KeyLists, 8)
	if err != nil {
		return nil, err
	}
	cfg := Config{Lists: int(n), Prefix: p.String(KeyPrefix, "list")}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewWorkload(cfg), nil
}

// Checks returns the lost-appends check.
func (Kind) Checks() []program.Check {
	return []program.Check{{
		Name:    CheckName,
		Doc:     "every acknowledged append in its final list (set checker over the final reads)",
		Timeout: 5 * time.Minute,
		Run: func(ctx context.Context, w program.Program, db program.DB) (program.Verdict, error) {
			aw, ok := w.(*Workload)
			if !ok {
				return program.Verdict{}, fmt.Errorf("the %s check needs the appendset workload, got %T", CheckName, w)
			}
			l, ok := db.Driver.(Lister)
			if !ok {
				return program.Verdict{}, errNoLists(db.Driver)
			}
			v, lost, err := aw.FinalCheck(ctx, l)
			if err != nil {
				return program.Verdict{}, err
			}
			return program.Verdict{OK: v.Valid == verdict.True, Text: Describe(v, lost)}, nil
		},
	}}
}

// Config is the workload's configuration.
type Config struct {
	Lists  int
	Prefix string
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Lists < 1 || c.Lists > 10_000:
		return fmt.Errorf("%s must be 1..10000, got %d", KeyLists, c.Lists)
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, " \t\r\n"):
		return fmt.Errorf("%s must be a non-empty key prefix without white space, got %q", KeyPrefix, c.Prefix)
	}
	return nil
}

func errNoLists(drv any) error {
	return fmt.Errorf("the target's driver (%T) has no lists (appending to and reading a list at one key, as Redis's RPUSH and LRANGE): the appendset workload runs on redis and redis-cluster", drv)
}

// Workload is a configured append workload: its terminals record every
// append through the Recorder the harness gives it (SetRecorder), and it
// keeps this process's operations in memory for its check.
type Workload struct {
	cfg  Config
	next atomic.Int64 // the last value appended
	rec  program.Recorder
	mem  *memory
	// wall0 is the wall clock at rec0 on rec's clock: the anchor that
	// turns an operation's time into a wall-clock time for messages.
	wall0 time.Time
	rec0  int64
}

var (
	_ program.Historian = (*Workload)(nil)
	_ program.Requirer  = (*Workload)(nil)
)

// NewWorkload returns the workload for cfg (valid). Until SetRecorder,
// operations are timed on the workload's own clock (ns since NewWorkload).
func NewWorkload(cfg Config) *Workload {
	m := &memory{start: time.Now()}
	return &Workload{cfg: cfg, rec: m, mem: m, wall0: m.start}
}

// SetRecorder implements program.Historian.
func (w *Workload) SetRecorder(r program.Recorder) {
	if r == nil {
		return
	}
	w.rec = r
	w.wall0, w.rec0 = time.Now(), r.Now()
}

// CheckDB implements program.Requirer: the driver must have lists.
func (w *Workload) CheckDB(db program.DB) error {
	if _, ok := db.Driver.(Lister); !ok {
		return errNoLists(db.Driver)
	}
	return nil
}

// Wall returns the wall-clock time of t on the recorder's clock.
func (w *Workload) Wall(t int64) time.Time { return w.wall0.Add(time.Duration(t - w.rec0)) }

// Key returns list i's key.
func (w *Workload) Key(i int) string { return w.cfg.Prefix + strconv.Itoa(i) }

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
	c.Mops = slices.Clone(op.Mops)
	for i := range c.Mops {
		c.Mops[i].List = slices.Clone(c.Mops[i].List)
	}
	m.mu.Lock()
	m.ops = append(m.ops, c)
	m.mu.Unlock()
}

func (w *Workload) record(op *history.Op) {
	if w.rec != program.Recorder(w.mem) {
		w.rec.Record(op)
	}
	w.mem.Record(op)
}

// History returns a copy of the operations this process recorded so far.
func (w *Workload) History() []history.Op {
	w.mem.mu.Lock()
	defer w.mem.mu.Unlock()
	return slices.Clone(w.mem.ops)
}

// OpNames implements program.Program.
func (w *Workload) OpNames() []string { return []string{"APPEND"} }

// processStride separates the process ids a worker takes: worker id's
// processes are id, id + stride, id + 2 stride, ...
const processStride = 1 << 20

// finalProcess is the process id of the final reads.
const finalProcess = processStride - 1

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), id: id, process: id}
}

type terminal struct {
	w       *Workload
	rng     *rand.Rand
	id      int
	process int
	gen     int
	list    int
}

// Next implements program.Terminal: an append to a random list, no pause.
func (t *terminal) Next() (int, time.Duration) {
	t.list = t.rng.IntN(t.w.cfg.Lists)
	return 0, 0
}

// Execute implements program.Terminal: it appends the next unique value
// to the list Next picked and records the append. An acknowledged append
// is ok; one the server refused (class rejected: READONLY, OOM, ...) is
// fail; any other error leaves it unknown (it may have been applied) and
// the terminal continues as a new process.
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	l, ok := db.Driver.(Lister)
	if !ok {
		return outcome.Classified(outcome.Rejected, "appendset", errNoLists(db.Driver))
	}
	key := t.w.Key(t.list)
	v := t.w.next.Add(1)
	op := history.Op{Process: t.process, Name: "append", Mops: []history.Mop{{F: history.Append, Key: key, Value: v}}}
	op.Invoke = t.w.rec.Now()
	err := l.ListAppend(ctx, key, strconv.AppendInt(nil, v, 10))
	op.Complete = t.w.rec.Now()
	switch {
	case err == nil:
	case outcome.ClassOf(err) == outcome.Rejected:
		op.Outcome = history.Fail
	default:
		op.Outcome = history.Unknown
	}
	if err != nil {
		op.Error = outcome.ClassOf(err).String()
	}
	t.w.record(&op)
	if op.Outcome == history.Unknown {
		t.gen++
		t.process = t.id + t.gen*processStride
	}
	return err
}

// Lost is one acknowledged append missing from its final list.
type Lost struct {
	Key              string
	Value            int64
	Invoke, Complete int64     // on the recorder's clock, ns
	Wall             time.Time // Complete on the wall clock
}

// finalReadAttempts is how often a final read of one list is tried.
const finalReadAttempts = 5

// FinalCheck reads every list once (each read recorded as a list read),
// then judges this process's appends and the final reads with the set
// checker. It returns the verdict and every lost append, ordered by
// acknowledgement. A list that cannot be read after a few attempts is an
// error: the check could not be made.
func (w *Workload) FinalCheck(ctx context.Context, l Lister) (verdict.Verdict, []Lost, error) {
	for i := range w.cfg.Lists {
		key := w.Key(i)
		var err error
		for attempt := range finalReadAttempts {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return verdict.Verdict{}, nil, fmt.Errorf("final read of %s: %w (after %v)", key, ctx.Err(), err)
				case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
				}
			}
			if err = w.finalRead(ctx, l, key); err == nil {
				break
			}
		}
		if err != nil {
			return verdict.Verdict{}, nil, fmt.Errorf("final read of %s: %w", key, err)
		}
	}
	ops := w.History()
	appends := 0
	for i := range ops {
		if ops[i].Name == "append" {
			appends++
		}
	}
	if appends == 0 {
		return verdict.Verdict{}, nil, errors.New("no appends recorded in this process (client processes and worker hosts keep their own): nothing was checked")
	}
	v, err := setvis.CheckOps(ctx, ops, setvis.Options{Examples: len(ops)})
	if err != nil {
		return verdict.Verdict{}, nil, err
	}
	var lost []Lost
	for _, a := range v.Anomalies {
		if a.Name != setvis.Lost || len(a.Ops) == 0 {
			continue
		}
		op := &ops[a.Ops[0]]
		lost = append(lost, Lost{Key: op.Mops[0].Key, Value: op.Mops[0].Value, Invoke: op.Invoke, Complete: op.Complete, Wall: w.Wall(op.Complete)})
	}
	slices.SortFunc(lost, func(a, b Lost) int { return cmp.Compare(a.Complete, b.Complete) })
	return v, lost, nil
}

// finalRead reads the list at key and records the read; a failed read is
// recorded as unknown.
func (w *Workload) finalRead(ctx context.Context, l Lister, key string) error {
	op := history.Op{Process: finalProcess, Name: "read", Mops: []history.Mop{{F: history.Read, Key: key, IsList: true}}}
	op.Invoke = w.rec.Now()
	elems, err := l.ListRead(ctx, key)
	op.Complete = w.rec.Now()
	if err == nil {
		list := make([]int64, len(elems))
		for i, e := range elems {
			v, perr := strconv.ParseInt(string(e), 10, 64)
			if perr != nil {
				return fmt.Errorf("list %s holds %q, not an appended value", key, e)
			}
			list[i] = v
		}
		op.Mops[0].List = list
	} else {
		op.Outcome, op.Error = history.Unknown, outcome.ClassOf(err).String()
	}
	w.record(&op)
	return err
}

// Describe is the check's verdict line: the set checker's line, then every
// lost append with its acknowledgement time on the run's clock and the
// wall clock (RFC 3339, to place it among the run's events).
func Describe(v verdict.Verdict, lost []Lost) string {
	var b strings.Builder
	b.WriteString(v.Line())
	if n := v.Measures["acknowledged_inserts_count"]; n > 0 {
		fmt.Fprintf(&b, "; %d acknowledged appends", int(n))
	}
	for _, l := range lost {
		fmt.Fprintf(&b, "; lost %s %d acknowledged %.6f s wall %s", l.Key, l.Value, float64(l.Complete)/1e9, l.Wall.UTC().Format(time.RFC3339Nano))
	}
	for _, a := range v.Anomalies {
		if a.Name == setvis.Unexpected {
			b.WriteString("; ")
			b.WriteString(a.Explanation)
		}
	}
	return b.String()
}
