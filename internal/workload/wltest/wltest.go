// Package wltest is the test harness of the workloads made for checking
// (internal/workload/register, appendset, listappend, rwregister, bank),
// imported by their tests only, never by a non-test package
// (internal/targets' TestLayers enforces it): a Recorder that keeps the
// operations (Collector), a serializable in-memory key-value store
// (SerialStore), running a workload's terminals (Run, Load), and a
// one-node PostgreSQL to run them on (StartPostgres, OpenPostgres) with
// the isolation checker's negative control on it (IsolationControl).
//
// It may import drivers and launchers (a test starts a real database),
// but not internal/runner or internal/workload: a workload's own in-package
// tests import it, and those import the workload.
package wltest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// Collector is a program.Recorder that keeps every operation. Its clock is
// the time since Start, or, with a zero Start, a counter that advances by
// one on every Now (so that operations are strictly ordered).
type Collector struct {
	Start time.Time
	mu    sync.Mutex
	n     int64
	ops   []history.Op
}

// Now implements program.Recorder.
func (c *Collector) Now() int64 {
	if !c.Start.IsZero() {
		return time.Since(c.Start).Nanoseconds()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

// Record implements program.Recorder: it keeps a copy of op.
func (c *Collector) Record(op *history.Op) {
	cp := *op
	cp.Mops = slices.Clone(op.Mops)
	for i := range cp.Mops {
		cp.Mops[i].List = slices.Clone(cp.Mops[i].List)
	}
	c.mu.Lock()
	c.ops = append(c.ops, cp)
	c.mu.Unlock()
}

// Ops returns a copy of the operations recorded so far.
func (c *Collector) Ops() []history.Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ops)
}

// Len is how many operations were recorded so far.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ops)
}

// Committed counts the operations of ops that are ok.
func Committed(ops []history.Op) int {
	n := 0
	for _, op := range ops {
		if op.Outcome == history.OK {
			n++
		}
	}
	return n
}

// NewProgram builds kind's workload from the properties kv (key, value,
// key, value, ...) and seed 1, failing the test on an error.
func NewProgram(t testing.TB, kind program.Kind, kv ...string) program.Program {
	t.Helper()
	p := properties.New()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	prg, err := kind.New(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// Run runs ops operations on each of terminals terminals of w at once
// (terminal i's seed 7), each terminal's one after the other; their
// errors are ignored (the history says how each ended).
func Run(w program.Program, db program.DB, terminals, ops int) {
	var wg sync.WaitGroup
	for id := range terminals {
		term := w.NewTerminal(id, 7)
		wg.Go(func() {
			for range ops {
				term.Next()
				_ = term.Execute(context.Background(), db)
			}
		})
	}
	wg.Wait()
}

// Load runs terminals terminals of w on db for d, each operation bounded
// by 10 s, and returns every operation rec holds afterwards. The
// terminals' seed is the number of operations rec held before, so that
// successive rounds differ.
func Load(w program.Program, rec *Collector, db program.DB, terminals int, d time.Duration) []history.Op {
	seed := int64(rec.Len() + 1) // read before the terminals record
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for id := range terminals {
		term := w.NewTerminal(id, seed)
		wg.Go(func() {
			for ctx.Err() == nil {
				term.Next()
				octx, ocancel := context.WithTimeout(context.Background(), 10*time.Second)
				_ = term.Execute(octx, db)
				ocancel()
			}
		})
	}
	wg.Wait()
	return rec.Ops()
}

// RunLoad runs w's load phase (a program.Loader) on one terminal,
// failing the test on an error.
func RunLoad(t testing.TB, w program.Program, db program.DB) {
	t.Helper()
	term := w.NewTerminal(0, 1)
	lt, ok := term.(program.LoadTerminal)
	if !ok {
		t.Fatalf("%T has no load phase", w)
	}
	for {
		if _, ok := lt.NextLoad(); !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := term.Execute(ctx, db)
		cancel()
		if err != nil {
			t.Fatalf("load: %v", err)
		}
	}
}

// SerialStore is a key-value store whose transactions run one at a time
// (Begin takes the store's lock, Commit and Abort give it back): every
// history of it is serializable. CommitErr, when set, fails every commit
// with it (the store keeps the writes only when Keep); ReadErr fails every
// read; AfterCommit, when set, runs after each commit, outside the lock.
// Set them between operations.
type SerialStore struct {
	lock        sync.Mutex
	data        map[string]map[string][]byte
	CommitErr   error
	Keep        bool
	ReadErr     error
	AfterCommit func()
}

// NewSerialStore returns an empty store.
func NewSerialStore() *SerialStore { return &SerialStore{data: map[string]map[string][]byte{}} }

// DB is the store as a program.DB of key-value transactions.
func (s *SerialStore) DB() program.DB { return program.DB{KV: s.Begin} }

// Forget drops everything committed so far: a store that lost its state.
func (s *SerialStore) Forget() {
	s.lock.Lock()
	s.data = map[string]map[string][]byte{}
	s.lock.Unlock()
}

// Begin begins a transaction.
func (s *SerialStore) Begin(context.Context) (program.Txn, error) {
	s.lock.Lock()
	return &serialTxn{s: s, writes: map[string]map[string][]byte{}}, nil
}

type serialTxn struct {
	s      *SerialStore
	writes map[string]map[string][]byte
}

func (t *serialTxn) Read(_ context.Context, table, key string, _ []string) (map[string][]byte, error) {
	if t.s.ReadErr != nil {
		return nil, t.s.ReadErr
	}
	if w, ok := t.writes[table+"/"+key]; ok {
		return w, nil
	}
	if r, ok := t.s.data[table+"/"+key]; ok {
		return r, nil
	}
	return nil, outcome.Classified(outcome.NotFound, "read", outcome.ErrNotFound)
}

func (t *serialTxn) Update(_ context.Context, table, key string, v map[string][]byte) error {
	t.writes[table+"/"+key] = v
	return nil
}

func (t *serialTxn) Insert(ctx context.Context, table, key string, v map[string][]byte) error {
	return t.Update(ctx, table, key, v)
}

func (t *serialTxn) Delete(context.Context, string, string) error { return errors.New("no deletes") }

func (t *serialTxn) Commit(context.Context) error {
	if t.s.CommitErr == nil || t.s.Keep {
		for k, v := range t.writes {
			t.s.data[k] = v
		}
	}
	err := t.s.CommitErr
	t.s.lock.Unlock()
	if t.s.AfterCommit != nil {
		t.s.AfterCommit()
	}
	return err
}

func (t *serialTxn) Abort(context.Context) error {
	t.s.lock.Unlock()
	return nil
}

// PropertyCase is one case of Properties: the properties KV (key, value,
// ...) and the key the error must name ("" for none).
type PropertyCase struct {
	Name string
	KV   []string
	Want string
}

// Properties tests that kind builds its workload from each case's
// properties, or refuses them with an error naming the case's key.
func Properties(t *testing.T, kind program.Kind, cases []PropertyCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			p := properties.New()
			for i := 0; i+1 < len(tc.KV); i += 2 {
				p.Set(tc.KV[i], tc.KV[i+1])
			}
			_, err := kind.New(p, 1)
			if tc.Want == "" && err != nil || tc.Want != "" && (err == nil || !strings.Contains(err.Error(), tc.Want)) {
				t.Fatalf("error %v, want one naming %q", err, tc.Want)
			}
		})
	}
}
