package bank

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/faultbench/faultbench/internal/check/bank"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// collector is a program.Recorder that keeps the operations.
type collector struct {
	mu  sync.Mutex
	n   int64
	ops []history.Op
}

func (c *collector) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *collector) Record(op *history.Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := *op
	cp.Mops = append([]history.Mop(nil), op.Mops...)
	c.ops = append(c.ops, cp)
}

// serialStore is a key-value store whose transactions run one at a time
// (Begin takes the store's lock, Commit and Abort give it back): every
// history of it is serializable. commitErr, when set, fails every commit
// with it after applying the writes (applied: the commit's outcome is
// what commitErr's class says, and the store keeps the writes only when
// keep).
type serialStore struct {
	lock      sync.Mutex
	data      map[string]map[string][]byte
	commitErr error
	keep      bool
	readErr   error
	// afterCommit, when set, runs after each commit, outside the lock
	afterCommit func()
}

type serialTxn struct {
	s      *serialStore
	writes map[string]map[string][]byte
}

func (s *serialStore) begin(context.Context) (program.Txn, error) {
	s.lock.Lock()
	return &serialTxn{s: s, writes: map[string]map[string][]byte{}}, nil
}

func (t *serialTxn) Read(_ context.Context, table, key string, _ []string) (map[string][]byte, error) {
	if t.s.readErr != nil {
		return nil, t.s.readErr
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
	if t.s.commitErr == nil || t.s.keep {
		for k, v := range t.writes {
			t.s.data[k] = v
		}
	}
	err := t.s.commitErr
	t.s.lock.Unlock()
	if t.s.afterCommit != nil {
		t.s.afterCommit()
	}
	return err
}

func (t *serialTxn) Abort(context.Context) error {
	t.s.lock.Unlock()
	return nil
}

func run(t *testing.T, w *Workload, db program.DB, terminals, txns int) {
	t.Helper()
	var wg sync.WaitGroup
	for id := range terminals {
		term := w.NewTerminal(id, 7)
		wg.Go(func() {
			for range txns {
				term.Next()
				_ = term.Execute(context.Background(), db)
			}
		})
	}
	wg.Wait()
}

func newWorkload(t *testing.T, kv ...string) *Workload {
	t.Helper()
	p := properties.New()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	prg, err := Kind{}.New(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	return prg.(*Workload)
}

// runLoad runs the load phase on one terminal.
func runLoad(t *testing.T, w *Workload, db program.DB) {
	t.Helper()
	term := w.NewTerminal(0, 1).(program.LoadTerminal)
	for {
		if _, ok := term.NextLoad(); !ok {
			return
		}
		if err := term.(program.Terminal).Execute(context.Background(), db); err != nil {
			t.Fatal(err)
		}
	}
}

func checkBank(t *testing.T, ops []history.Op) verdict.Verdict {
	t.Helper()
	v, err := bank.CheckOps(context.Background(), ops, bank.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSerialStore: on a store that runs one transaction at a time, with a
// read of all accounts after every commit, every read sums to the total:
// the bank checker passes; with transfers split in two transactions (the
// test-only switch), the read after a debit misses its amount and the
// checker fails.
func TestSerialStore(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			w := newWorkload(t, KeyAccounts, "4", KeyMaxTransfer, "30", KeyReadProp, "0")
			if split {
				SplitTransfers(w)
			}
			rec := &collector{}
			w.SetRecorder(rec)
			s := &serialStore{data: map[string]map[string][]byte{}}
			db := program.DB{KV: s.begin}
			runLoad(t, w, db)
			reader := w.NewTerminal(1, 1).(*terminal)
			reading := false
			s.afterCommit = func() {
				if reading {
					return
				}
				reading = true
				reader.op = OpRead
				if err := reader.Execute(context.Background(), db); err != nil {
					t.Error(err)
				}
				reading = false
			}
			run(t, w, db, 1, 200)
			v := checkBank(t, rec.ops)
			var transfers, reads, insufficient int
			for _, op := range rec.ops {
				switch op.Name {
				case "transfer":
					transfers++
					if op.Error == errInsufficient.Error() {
						insufficient++
					}
				case "read":
					reads++
				}
			}
			if transfers != 200 || reads < transfers-insufficient || insufficient == 0 {
				t.Fatalf("%d transfers (%d insufficient), %d reads", transfers, insufficient, reads)
			}
			if want := map[bool]verdict.Valid{false: verdict.True, true: verdict.False}[split]; v.Valid != want {
				t.Fatalf("split=%v: %s, want valid=%s", split, v.Line(), want)
			}
		})
	}
}

// TestOutcomes: how each error becomes the recorded outcome, and the new
// process after an unknown one.
func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		commitErr   error
		readErr     error
		want        history.Outcome
		newProcess  bool
		wantErrName string
	}{
		{name: "committed", want: history.OK},
		{name: "conflict at commit", commitErr: outcome.Classified(outcome.Conflict, "commit", errors.New("aborted")), want: history.Fail, wantErrName: "conflict"},
		{name: "commit lost", commitErr: outcome.Classified(outcome.Timeout, "commit", errors.New("connection lost")), want: history.Unknown, newProcess: true, wantErrName: "timeout"},
		{name: "commit unavailable", commitErr: outcome.Classified(outcome.Unavailable, "commit", errors.New("down")), want: history.Unknown, newProcess: true, wantErrName: "unavailable"},
		{name: "read failed before commit", readErr: outcome.Classified(outcome.Timeout, "read", errors.New("slow")), want: history.Fail, wantErrName: "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkload(t, KeyReadProp, "0")
			s := &serialStore{data: map[string]map[string][]byte{}}
			runLoad(t, w, program.DB{KV: s.begin})
			rec := &collector{}
			w.SetRecorder(rec)
			s.commitErr, s.readErr = tc.commitErr, tc.readErr
			term := w.NewTerminal(3, 1)
			for range 2 {
				term.Next()
				err := term.Execute(context.Background(), program.DB{KV: s.begin})
				if (err != nil) != (tc.want != history.OK) {
					t.Fatalf("Execute = %v", err)
				}
			}
			op := rec.ops[0]
			if op.Outcome != tc.want || op.Error != tc.wantErrName {
				t.Fatalf("outcome %s (%q), want %s (%q)", op.Outcome, op.Error, tc.want, tc.wantErrName)
			}
			if got := rec.ops[1].Process != rec.ops[0].Process; got != tc.newProcess {
				t.Fatalf("processes %d then %d: new process %v, want %v", rec.ops[0].Process, rec.ops[1].Process, got, tc.newProcess)
			}
			if rec.ops[0].Process != 3 {
				t.Fatalf("first process %d, want the worker id 3", rec.ops[0].Process)
			}
		})
	}
}

// TestRefused: a target without transactions is refused, naming what it
// lacks.
func TestRefused(t *testing.T) {
	w := newWorkload(t)
	type redisLike struct{}
	err := w.CheckDB(program.DB{Driver: redisLike{}})
	if !errors.Is(err, program.ErrNoTransactions) || !strings.Contains(err.Error(), "transactions over several keys") {
		t.Fatalf("CheckDB = %v", err)
	}
	term := w.NewTerminal(0, 1)
	term.Next()
	if err := term.Execute(context.Background(), program.DB{Driver: redisLike{}}); !errors.Is(err, program.ErrNoTransactions) {
		t.Fatalf("Execute = %v", err)
	}
	if err := w.CheckDB(program.DB{SQL: func(context.Context) (program.SQLTx, error) { return nil, nil }, Dialect: "sqlite"}); err == nil {
		t.Fatal("an unknown SQL dialect is accepted")
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{name: "defaults"},
		{name: "one account", kv: []string{KeyAccounts, "1"}, want: KeyAccounts},
		{name: "bad read proportion", kv: []string{KeyReadProp, "-1"}, want: KeyReadProp},
		{name: "bad table", kv: []string{KeyTable, "a;drop"}, want: KeyTable},
		{name: "not a number", kv: []string{KeyBalance, "lots"}, want: KeyBalance},
		{name: "zero transfer", kv: []string{KeyMaxTransfer, "0"}, want: KeyMaxTransfer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			for i := 0; i+1 < len(tc.kv); i += 2 {
				p.Set(tc.kv[i], tc.kv[i+1])
			}
			_, err := Kind{}.New(p, 1)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestCheckTotal: the workload gives the bank checker its total (the
// load phase's deposits are not in a run's history), unless the run set
// one.
func TestCheckTotal(t *testing.T) {
	p := properties.New()
	p.Set(KeyAccounts, "7")
	p.Set(KeyBalance, "20")
	if _, err := (Kind{}).New(p, 1); err != nil {
		t.Fatal(err)
	}
	if got := p.String(KeyCheckTotal, ""); got != "140" {
		t.Fatalf("%s = %q, want 140", KeyCheckTotal, got)
	}
	if u := p.Unknown(); len(u) > 0 {
		t.Fatalf("unknown keys %v", u)
	}
	p = properties.New()
	p.Set(KeyCheckTotal, "9")
	if _, err := (Kind{}).New(p, 1); err != nil {
		t.Fatal(err)
	}
	if got := p.String(KeyCheckTotal, ""); got != "9" {
		t.Fatalf("%s = %q, want the run's 9", KeyCheckTotal, got)
	}
}
