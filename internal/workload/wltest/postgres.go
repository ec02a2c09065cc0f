package wltest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/driver/sqldb"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// StartPostgres starts a one-node postgres-ha cluster named name
// (skipping the test when it cannot: -short, not root, PostgreSQL not
// installed) and returns its address; the cluster is stopped when the
// test ends.
func StartPostgres(t *testing.T, name string) string {
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
	c, err := postgresha.Launcher{}.Up(ctx, env, launcher.Spec{Name: name, Nodes: 1})
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

// OpenPostgres opens the PostgreSQL driver on hosts at an isolation level
// (sqldb.isolation) and checks that its transactions run at it; the driver
// is closed when the test ends. The caller adapts it to a program.DB
// (runner.ProgramDB).
func OpenPostgres(t *testing.T, hosts, level string) driver.Driver {
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx, err := d.(driver.SQL).BeginSQL(ctx)
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
	return d
}

// IsolationCase is one case of IsolationControl: PostgreSQL at Level,
// its history judged against Model; Anomaly says the level allows an
// anomaly the model forbids (the verdict must be false, with each of Want
// found), else the verdict must be true.
type IsolationCase struct {
	Level, Model string
	Anomaly      bool
	Want         []string
}

// IsolationControl is the isolation checker's negative control on a real
// PostgreSQL: for each case, a workload of newWorkload (on its own table)
// runs on open(level) with 8 terminals in rounds of 2 s, and its history
// is judged (elle) against the case's model; an anomaly the level allows
// is looked for over up to 8 rounds, the absence of one it forbids is
// judged on 2 (with at least 50 committed transactions).
func IsolationControl(t *testing.T, cases []IsolationCase, open func(level string) program.DB, newWorkload func(table string) program.Program) {
	for _, tc := range cases {
		t.Run(tc.Level+"/"+tc.Model, func(t *testing.T) {
			db := open(tc.Level)
			w := newWorkload(strings.ReplaceAll(tc.Level, "-", "_") + "_" + strings.ReplaceAll(tc.Model, "-", "_"))
			rec := &Collector{Start: time.Now()}
			w.(program.Historian).SetRecorder(rec)
			rounds := 2
			if tc.Anomaly {
				rounds = 8
			}
			var (
				v   verdict.Verdict
				ops []history.Op
			)
			for range rounds {
				ops = Load(w, rec, db, 8, 2*time.Second)
				var err error
				if v, err = elle.CheckOps(context.Background(), ops, elle.Options{Model: tc.Model}); err != nil {
					t.Fatal(err)
				}
				if v.Valid == verdict.False {
					break
				}
			}
			t.Logf("%s: %d transactions, %d committed: %s", tc.Level, len(ops), Committed(ops), v.Line())
			if !tc.Anomaly {
				if Committed(ops) < 50 {
					t.Fatalf("only %d transactions committed: too little load to judge a pass", Committed(ops))
				}
				if v.Valid != verdict.True {
					for _, a := range v.Anomalies {
						t.Log(a.Explanation)
					}
					t.Fatalf("PostgreSQL at %s judged against %s: %s", tc.Level, tc.Model, v.Line())
				}
				return
			}
			if v.Valid != verdict.False {
				t.Fatalf("PostgreSQL at %s shows nothing %s forbids: %s", tc.Level, tc.Model, v.Line())
			}
			for _, name := range tc.Want {
				if v.AnomalyCounts[name] == 0 {
					t.Fatalf("PostgreSQL at %s: no %s found: %s", tc.Level, name, v.Line())
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
