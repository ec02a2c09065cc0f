package listappend_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/driver/sqldb"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload/listappend"
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
	c, err := postgresha.Launcher{}.Up(ctx, env, launcher.Spec{Name: "test-listappend", Nodes: 1})
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
func load(t *testing.T, w *listappend.Workload, rec *collector, db program.DB, terminals int, d time.Duration) []history.Op {
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

func check(t *testing.T, ops []history.Op, model string) verdict.Verdict {
	t.Helper()
	v, err := elle.CheckOps(context.Background(), ops, elle.Options{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return v
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

// TestPostgresIsolation is the isolation checker's negative control on a
// real database: PostgreSQL at REPEATABLE READ (snapshot isolation)
// allows write skew, so a contended list-append history shows G2-item,
// which serializable forbids, and nothing snapshot isolation forbids; at
// SERIALIZABLE it shows nothing serializable forbids; at READ COMMITTED it
// shows what snapshot isolation forbids (G-single: a transaction sees part
// of another's effects). A round is 2 s of load on 3 keys; an anomaly the
// level allows is looked for over up to 8 rounds, one it forbids over 2.
func TestPostgresIsolation(t *testing.T) {
	hosts := startPostgres(t)
	for _, tc := range []struct {
		level string
		// model judged, and whether the level allows one of its forbidden
		// anomalies (want: valid=false, which names must appear)
		model   string
		anomaly bool
		want    []string
	}{
		{level: "repeatable-read", model: "serializable", anomaly: true, want: []string{elle.G2Item}},
		{level: "repeatable-read", model: "snapshot-isolation"},
		{level: "serializable", model: "serializable"},
		{level: "read-committed", model: "snapshot-isolation", anomaly: true},
	} {
		t.Run(tc.level+"/"+tc.model, func(t *testing.T) {
			db := openAt(t, hosts, tc.level)
			w := listappend.NewWorkload(listappend.Config{Keys: 3, MaxAppends: 200, TxnLen: 4, ReadProportion: 0.5,
				Table: "la_" + strings.ReplaceAll(tc.level, "-", "_") + "_" + strings.ReplaceAll(tc.model, "-", "_")})
			rec := &collector{start: time.Now()}
			w.SetRecorder(rec)
			rounds := 2
			if tc.anomaly {
				rounds = 8
			}
			var (
				v   verdict.Verdict
				ops []history.Op
			)
			for range rounds {
				ops = load(t, w, rec, db, 8, 2*time.Second)
				v = check(t, ops, tc.model)
				if v.Valid == verdict.False {
					break
				}
			}
			t.Logf("%s: %d transactions, %d committed: %s", tc.level, len(ops), committed(ops), v.Line())
			if !tc.anomaly {
				if committed(ops) < 50 {
					t.Fatalf("only %d transactions committed: too little load to judge a pass", committed(ops))
				}
				if v.Valid != verdict.True {
					for _, a := range v.Anomalies {
						t.Log(a.Explanation)
					}
					t.Fatalf("PostgreSQL at %s judged against %s: %s", tc.level, tc.model, v.Line())
				}
				return
			}
			if v.Valid != verdict.False {
				t.Fatalf("PostgreSQL at %s shows nothing %s forbids: %s", tc.level, tc.model, v.Line())
			}
			for _, name := range tc.want {
				if v.AnomalyCounts[name] == 0 {
					t.Fatalf("PostgreSQL at %s: no %s found: %s", tc.level, name, v.Line())
				}
			}
			for _, a := range v.Anomalies {
				if slices.Contains(v.Forbidden, a.Name) {
					t.Log(a.Explanation)
					break
				}
			}
		})
	}
}
