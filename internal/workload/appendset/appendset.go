// Package appendset is the append workload (workload=appendset): appends
// of unique values (unique across client processes too:
// recorded.ValueBase) to a few lists, one key per operation and no
// transactions (Redis RPUSH), every operation recorded through the
// harness's program.Recorder (the workload is a program.Historian), and
// a final read of every list once the measured phase has ended and every
// node is back. Its check `lost-appends` (a program.Check.History) makes
// the final reads, appends them as list reads to the run's history —
// merged from every client process and worker host — and judges the
// whole history with the set checker (internal/check/setvis): every
// acknowledged append, whichever process made it, must be in its final
// list, so no loss hides behind a later write (a register's last value
// would). It runs on a target whose driver has lists (Lister: Redis and
// Redis Cluster); docs/workloads.md, docs/checks.md.
package appendset

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/check/setvis"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
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
	base, err := recorded.ValueBase(p)
	if err != nil {
		return nil, err
	}
	cfg := Config{Lists: int(n), Prefix: p.String(KeyPrefix, "list"), ValueBase: base}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewWorkload(cfg), nil
}

// Checks returns the lost-appends check.
func (Kind) Checks() []program.Check {
	return []program.Check{{
		Name:    CheckName,
		Doc:     "every acknowledged append in its final list (set checker over the run's history and the final reads)",
		Timeout: 5 * time.Minute,
		History: func(ctx context.Context, w program.Program, db program.DB, h program.HistoryFile) (program.Verdict, error) {
			aw, ok := w.(*Workload)
			if !ok {
				return program.Verdict{}, fmt.Errorf("the %s check needs the appendset workload, got %T", CheckName, w)
			}
			l, ok := db.Driver.(Lister)
			if !ok {
				return program.Verdict{}, errNoLists(db.Driver)
			}
			v, lost, err := aw.FinalCheck(ctx, l, h)
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
	// ValueBase is added to every value appended (recorded.ValueBase: the
	// client process's, so that values are unique across processes).
	ValueBase int64
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Lists < 1 || c.Lists > 10_000:
		return fmt.Errorf("%s must be 1..10000, got %d", KeyLists, c.Lists)
	case c.ValueBase < 0:
		return fmt.Errorf("value base %d: must not be negative", c.ValueBase)
	case c.Prefix == "" || strings.ContainsAny(c.Prefix, " \t\r\n"):
		return fmt.Errorf("%s must be a non-empty key prefix without white space, got %q", KeyPrefix, c.Prefix)
	}
	return nil
}

func errNoLists(drv any) error {
	return fmt.Errorf("the target's driver (%T) has no lists (appending to and reading a list at one key, as Redis's RPUSH and LRANGE): the appendset workload runs on redis and redis-cluster", drv)
}

// Workload is a configured append workload: its terminals record every
// append through the Recorder the harness gives it (SetRecorder).
type Workload struct {
	cfg    Config
	values recorded.Values // the values appended
	rec    recorded.Recording
}

var (
	_ program.Historian = (*Workload)(nil)
	_ program.Requirer  = (*Workload)(nil)
)

// NewWorkload returns the workload for cfg (valid). Until SetRecorder,
// operations are timed on the workload's own clock and not recorded.
func NewWorkload(cfg Config) *Workload {
	w := &Workload{cfg: cfg, rec: recorded.NewRecording()}
	w.values.Base = cfg.ValueBase
	return w
}

// SetRecorder implements program.Historian.
func (w *Workload) SetRecorder(r program.Recorder) { w.rec.SetRecorder(r) }

// CheckDB implements program.Requirer: the driver must have lists.
func (w *Workload) CheckDB(db program.DB) error {
	if _, ok := db.Driver.(Lister); !ok {
		return errNoLists(db.Driver)
	}
	return nil
}

// Key returns list i's key.
func (w *Workload) Key(i int) string { return w.cfg.Prefix + strconv.Itoa(i) }

// OpNames implements program.Program.
func (w *Workload) OpNames() []string { return []string{"APPEND"} }

// NewTerminal implements program.Program: worker id's terminal.
func (w *Workload) NewTerminal(id int, seed int64) program.Terminal {
	return &terminal{w: w, rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))), proc: recorded.NewProcess(id)}
}

type terminal struct {
	w    *Workload
	rng  *rand.Rand
	proc recorded.Process
	list int
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
// the terminal continues as a new process (recorded.Recording.Do).
func (t *terminal) Execute(ctx context.Context, db program.DB) error {
	l, ok := db.Driver.(Lister)
	if !ok {
		return outcome.Classified(outcome.Rejected, "appendset", errNoLists(db.Driver))
	}
	key := t.w.Key(t.list)
	v := t.w.values.Next()
	op := history.Op{Name: "append", Mops: []history.Mop{{F: history.Append, Key: key, Value: v}}}
	return t.w.rec.Do(&op, &t.proc, func() (bool, error) {
		return true, l.ListAppend(ctx, key, strconv.AppendInt(nil, v, 10))
	})
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

// FinalCheck reads every list once and appends each read to the run's
// history h (a list read, by a process of its own, on the run's clock),
// then judges the whole history — every client process's appends and the
// final reads — with the set checker. It returns the verdict and every
// lost append, ordered by acknowledgement. A history without appends, or a
// list that cannot be read after a few attempts, is an error: the check
// could not be made.
func (w *Workload) FinalCheck(ctx context.Context, l Lister, h program.HistoryFile) (verdict.Verdict, []Lost, error) {
	appends, maxP := 0, -1
	if _, err := history.Each(ctx, h.Path, func(op *history.Op) error {
		maxP = max(maxP, op.Process)
		if op.Name == "append" {
			appends++
		}
		return nil
	}); err != nil {
		return verdict.Verdict{}, nil, err
	}
	if appends == 0 {
		return verdict.Verdict{}, nil, fmt.Errorf("no appends in %s: nothing was checked", h.Path)
	}
	f, err := os.OpenFile(h.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return verdict.Verdict{}, nil, fmt.Errorf("appending the final reads: %w", err)
	}
	defer f.Close()
	hw, err := history.NewWriter(f)
	if err != nil {
		return verdict.Verdict{}, nil, err
	}
	for i := range w.cfg.Lists {
		key := w.Key(i)
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return verdict.Verdict{}, nil, fmt.Errorf("final read of %s: %w (after %v)", key, ctx.Err(), err)
				case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
				}
			}
			if err = finalRead(ctx, l, key, hw, maxP+1, h.Start); err == nil {
				break
			}
			if attempt+1 == finalReadAttempts {
				return verdict.Verdict{}, nil, fmt.Errorf("final read of %s: %w", key, err)
			}
		}
	}
	if err := hw.Flush(); err != nil {
		return verdict.Verdict{}, nil, fmt.Errorf("appending the final reads: %w", err)
	}
	ops, _, err := history.ReadFile(h.Path)
	if err != nil {
		return verdict.Verdict{}, nil, err
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
		lost = append(lost, Lost{Key: op.Mops[0].Key, Value: op.Mops[0].Value, Invoke: op.Invoke, Complete: op.Complete,
			Wall: h.Start.Add(time.Duration(op.Complete))})
	}
	slices.SortFunc(lost, func(a, b Lost) int { return cmp.Compare(a.Complete, b.Complete) })
	return v, lost, nil
}

// finalRead reads the list at key and writes the read to hw as process
// process's, on the clock of start; a failed read is written as unknown.
func finalRead(ctx context.Context, l Lister, key string, hw *history.Writer, process int, start time.Time) error {
	op := history.Op{Process: process, Name: "read", Mops: []history.Mop{{F: history.Read, Key: key, IsList: true}}}
	op.Invoke = int64(time.Since(start))
	elems, err := l.ListRead(ctx, key)
	op.Complete = int64(time.Since(start))
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
	if werr := hw.Write(&op); werr != nil {
		return werr
	}
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
