package bank_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	bankcheck "github.com/faultbench/faultbench/internal/check/bank"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/driver/sqldb"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload/bank"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// collector is a program.Recorder that keeps the operations.
type collector struct {
	start time.Time
	mu    sync.Mutex
	ops   []history.Op
}

func (c *collector) Now() int64 { return time.Since(c.start).Nanoseconds() }

func (c *collector) Record(op *history.Op) {
	cp := *op
	cp.Mops = append([]history.Mop(nil), op.Mops...)
	c.mu.Lock()
	c.ops = append(c.ops, cp)
	c.mu.Unlock()
}

// startPostgres starts a one-node postgres-ha cluster (skipping when it
// cannot: -short, not root, PostgreSQL not installed) and returns its
// address; the cluster is stopped when the test ends.
func startPostgres(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("postgres-ha runs PostgreSQL as its system user, which needs root")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := postgresha.Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-bank", Nodes: 1})
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := launcher.Down(ctx, c, 10*time.Second); err != nil {
				t.Errorf("Down: %v", err)
			}
		})
	}
	if err != nil {
		if strings.Contains(err.Error(), "scripts/setup.sh") {
			t.Skipf("PostgreSQL is not installed (scripts/setup.sh installs it): %v", err)
		}
		t.Fatalf("Up: %v", err)
	}
	return strings.Join(postgresha.Endpoints(c), ",")
}

// openAt opens the PostgreSQL driver at an isolation level and checks
// that its transactions run at it.
func openAt(t *testing.T, hosts, level string) program.DB {
	t.Helper()
	p := properties.New()
	p.Set("postgres.hosts", hosts)
	p.Set("postgres.poolsize", "16")
	p.Set(sqldb.PropIsolation, level)
	d, err := sqldb.NewPostgres(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	db := runner.ProgramDB(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx, err := db.SQL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := tx.Query(ctx, "SHOW transaction_isolation", nil, func(scan func(...any) error) error { return scan(&got) }); err != nil {
		t.Fatal(err)
	}
	_ = tx.Abort(ctx)
	if want := strings.ReplaceAll(level, "-", " "); got != want {
		t.Fatalf("sqldb.isolation=%s: the transaction runs at %q", level, got)
	}
	return db
}

// load runs the workload's terminals on db for d and returns the history.
func load(t *testing.T, w *bank.Workload, rec *collector, db program.DB, terminals int, d time.Duration) []history.Op {
	rec.mu.Lock()
	seedBase := int64(len(rec.ops) + 1) // read before the terminals record
	rec.mu.Unlock()
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for id := range terminals {
		term := w.NewTerminal(id, seedBase)
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
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]history.Op(nil), rec.ops...)
}

func check(t *testing.T, ops []history.Op) verdict.Verdict {
	t.Helper()
	v, err := bankcheck.CheckOps(context.Background(), ops, bankcheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPostgresBank is the bank checker's control on a real database: at
// SERIALIZABLE every read of all accounts sums to the total; with the
// test-only switch that runs each transfer as two transactions (debit,
// then credit) reads between them miss money and the checker fails. A
// round is 2 s of load on 4 accounts, 8 workers; the pass is judged on 2
// rounds, the failure looked for over up to 8.
func TestPostgresBank(t *testing.T) {
	hosts := startPostgres(t)
	for _, tc := range []struct {
		name  string
		split bool
	}{{name: "serializable"}, {name: "serializable, transfers split", split: true}} {
		t.Run(tc.name, func(t *testing.T) {
			db := openAt(t, hosts, "serializable")
			w := bank.NewWorkload(bank.Config{Accounts: 4, Balance: 100, MaxTransfer: 20, ReadProportion: 0.3,
				Table: map[bool]string{false: "bank_atomic", true: "bank_split"}[tc.split]})
			if tc.split {
				bank.SplitTransfers(w)
			}
			rec := &collector{start: time.Now()}
			w.SetRecorder(rec)
			term := w.NewTerminal(0, 1)
			for {
				if _, ok := term.(program.LoadTerminal).NextLoad(); !ok {
					break
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := term.Execute(ctx, db)
				cancel()
				if err != nil {
					t.Fatalf("load: %v", err)
				}
			}
			// rounds until the checker has enough to judge (a loaded
			// 2-core machine may give 2 s rounds few reads), or an anomaly
			var (
				v   verdict.Verdict
				ops []history.Op
			)
			for range 8 {
				ops = load(t, w, rec, db, 8, 2*time.Second)
				if v = check(t, ops); v.Valid == verdict.False || (!tc.split && v.Measures["reads_judged_count"] >= 20) {
					break
				}
			}
			t.Logf("%d operations, %d ok, %v reads judged: %s", len(ops), committed(ops), v.Measures["reads_judged_count"], v.Line())
			if v.Measures["reads_judged_count"] < 20 {
				t.Fatalf("only %v reads of all accounts: too little load to judge", v.Measures["reads_judged_count"])
			}
			if !tc.split {
				if v.Valid != verdict.True {
					for _, a := range v.Anomalies {
						t.Log(a.Explanation)
					}
					t.Fatalf("PostgreSQL at serializable: %s", v.Line())
				}
				return
			}
			if v.Valid != verdict.False || v.AnomalyCounts[bankcheck.WrongTotal] == 0 {
				t.Fatalf("transfers split in two transactions, yet: %s", v.Line())
			}
			t.Log(v.Anomalies[0].Explanation)
		})
	}
}

func committed(ops []history.Op) int {
	n := 0
	for _, op := range ops {
		if op.Outcome == history.OK {
			n++
		}
	}
	return n
}
