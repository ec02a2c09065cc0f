package tpcc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver/sqldb"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/tpcc"
)

const pgBin = "/usr/lib/postgresql/15/bin"

// startPostgres starts one plain PostgreSQL server (no replication) on
// 127.0.0.1 as the postgres user, stopped at the test's end, and returns
// the sqldb driver connected to it (database postgres).
func startPostgres(t *testing.T, ctx context.Context) *sqldb.Driver {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real PostgreSQL server (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("PostgreSQL runs as the postgres user, which needs root")
	}
	if _, err := os.Stat(filepath.Join(pgBin, "postgres")); err != nil {
		t.Skipf("PostgreSQL 15 not installed (scripts/setup.sh): %v", err)
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	work, err := os.MkdirTemp("", "faultbench-tpcc-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	data := filepath.Join(work, "data")
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	asPG := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(pgBin, name), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, out)
		}
		return nil
	}
	if err := asPG("initdb", "-D", data, "-A", "trust", "-U", "postgres"); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := asPG("pg_ctl", "-D", data, "-l", filepath.Join(data, "server.log"), "-w", "-o",
		fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c deadlock_timeout=200ms", port, data), "start"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(pgBin, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("stopping PostgreSQL: %v: %s", err, out)
		}
	})
	p := properties.New()
	p.Set("postgres.hosts", fmt.Sprintf("127.0.0.1:%d", port))
	p.Set("postgres.db", "postgres")
	d, err := sqldb.NewPostgres(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d.(*sqldb.Driver)
}

func sqlDB(d *sqldb.Driver) tpcc.DB {
	return tpcc.DB{SQL: func(ctx context.Context) (tpcc.SQLTx, error) { return d.BeginSQL(ctx) }, Dialect: d.SQLDialect()}
}

// loadDB runs the load with 4 terminals.
func loadDB(t *testing.T, ctx context.Context, db tpcc.DB, w *tpcc.Workload) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		term := w.NewTerminal(i, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, ok := term.NextLoad(); !ok {
					return
				}
				if err := term.Execute(ctx, db); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// q1 runs a query returning one integer.
func q1(t *testing.T, ctx context.Context, db tpcc.DB, q string, args ...any) int64 {
	t.Helper()
	tx, err := db.SQL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Abort(ctx)
	var n int64
	if err := tx.Query(ctx, q, args, func(scan func(...any) error) error { return scan(&n) }); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func exec1(t *testing.T, ctx context.Context, db tpcc.DB, q string, args ...any) {
	t.Helper()
	tx, err := db.SQL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		tx.Abort(ctx)
		t.Fatalf("%s: %v", q, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func consistentSQL(t *testing.T, ctx context.Context, db tpcc.DB) {
	t.Helper()
	res, err := tpcc.ConsistencySQL(ctx, db.SQL)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatal(res.String())
	}
}

// TestSQLPopulationAndTransactions loads a 1-warehouse database into a
// real PostgreSQL through the sqldb driver, checks the population rules,
// runs each transaction type and checks its effects and the consistency
// conditions, runs the mix through the runner, and checks that the
// consistency check finds each condition's violation.
func TestSQLPopulationAndTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := startPostgres(t, ctx)
	db := sqlDB(d)
	w, err := tpcc.New(tpcc.Config{Warehouses: 1, Items: items, Customers: customers, Retries: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	loadDB(t, ctx, db, w)

	first := int64(customers*7/10 + 1) // the first undelivered order
	t.Run("population", func(t *testing.T) {
		consistentSQL(t, ctx, db)
		for _, tc := range []struct {
			name string
			q    string
			want int64
		}{
			{"items", "SELECT COUNT(*) FROM item", items},
			{"stock", "SELECT COUNT(*) FROM stock WHERE s_w_id = 1", items},
			{"districts", "SELECT COUNT(*) FROM district", tpcc.DistrictsPerWarehouse},
			{"customers", "SELECT COUNT(*) FROM customer", customers * tpcc.DistrictsPerWarehouse},
			{"history", "SELECT COUNT(*) FROM history", customers * tpcc.DistrictsPerWarehouse},
			{"orders", "SELECT COUNT(*) FROM orders", customers * tpcc.DistrictsPerWarehouse},
			{"one order per customer", "SELECT COUNT(DISTINCT o_c_id) FROM orders WHERE o_d_id = 3", customers},
			{"new orders: the last 30 %", "SELECT COUNT(*) FROM new_order WHERE no_d_id = 3", customers - first + 1},
			{"oldest new order", "SELECT MIN(no_o_id) FROM new_order WHERE no_d_id = 3", first},
			{"undelivered orders have no carrier", "SELECT COUNT(*) FROM orders WHERE o_carrier_id IS NULL", (customers - first + 1) * tpcc.DistrictsPerWarehouse},
			{"order lines 5..15", "SELECT COUNT(*) FROM orders WHERE o_ol_cnt < 5 OR o_ol_cnt > 15", 0},
			{"W_YTD 300,000.00", "SELECT w_ytd FROM warehouse WHERE w_id = 1", 30000000},
			{"D_NEXT_O_ID", "SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 4", customers + 1},
			{"customer 1 is BARBARBAR", "SELECT COUNT(*) FROM customer WHERE c_id = 1 AND c_last = 'BARBARBAR' AND c_middle = 'OE'", tpcc.DistrictsPerWarehouse},
			{"about 10 % bad credit", "SELECT CASE WHEN COUNT(*) BETWEEN 200 AND 400 THEN 1 ELSE 0 END FROM customer WHERE c_credit = 'BC'", 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := q1(t, ctx, db, tc.q); got != tc.want {
					t.Errorf("%s = %d, want %d", tc.q, got, tc.want)
				}
			})
		}
	})

	term := w.NewTerminal(0, 42)
	run := func(t *testing.T, op, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			term.Force(op)
			if err := term.Execute(ctx, db); err != nil {
				t.Fatalf("%s #%d: %v", tpcc.OpNames()[op], i, err)
			}
		}
	}

	t.Run("new-order", func(t *testing.T) {
		before := q1(t, ctx, db, "SELECT SUM(d_next_o_id) FROM district")
		lines := q1(t, ctx, db, "SELECT COUNT(*) FROM order_line")
		rb := w.RolledBack()
		run(t, tpcc.OpNewOrder, 40)
		committed := 40 - (w.RolledBack() - rb)
		if got := q1(t, ctx, db, "SELECT SUM(d_next_o_id) FROM district") - before; got != committed {
			t.Errorf("sum(D_NEXT_O_ID) grew by %d, committed %d", got, committed)
		}
		if got := q1(t, ctx, db, "SELECT COUNT(*) FROM new_order WHERE no_o_id > ?", customers); got != committed {
			t.Errorf("%d new-order rows for new orders, committed %d", got, committed)
		}
		if got := q1(t, ctx, db, "SELECT COUNT(*) FROM order_line") - lines; got < 5*committed || got > 15*committed {
			t.Errorf("%d order lines for %d orders", got, committed)
		}
		if got := q1(t, ctx, db, "SELECT COUNT(*) FROM orders WHERE o_id > ? AND o_entry_d IS NULL", customers); got != 0 {
			t.Errorf("%d new orders without an entry date", got)
		}
		consistentSQL(t, ctx, db)
	})

	t.Run("payment", func(t *testing.T) {
		wBefore := q1(t, ctx, db, "SELECT w_ytd FROM warehouse WHERE w_id = 1")
		hBefore := q1(t, ctx, db, "SELECT COUNT(*) FROM history")
		cBefore := q1(t, ctx, db, "SELECT SUM(c_payment_cnt) FROM customer")
		bBefore := q1(t, ctx, db, "SELECT SUM(c_balance) FROM customer")
		run(t, tpcc.OpPayment, 30)
		grew := q1(t, ctx, db, "SELECT w_ytd FROM warehouse WHERE w_id = 1") - wBefore
		if grew < 30*100 || grew > 30*500000 {
			t.Errorf("W_YTD grew by %d cents after 30 payments", grew)
		}
		if got := bBefore - q1(t, ctx, db, "SELECT SUM(c_balance) FROM customer"); got != grew {
			t.Errorf("customers' balances fell by %d, W_YTD grew by %d", got, grew)
		}
		if got := q1(t, ctx, db, "SELECT COUNT(*) FROM history") - hBefore; got != 30 {
			t.Errorf("%d history rows for 30 payments", got)
		}
		if got := q1(t, ctx, db, "SELECT SUM(c_payment_cnt) FROM customer") - cBefore; got != 30 {
			t.Errorf("C_PAYMENT_CNT grew by %d for 30 payments", got)
		}
		consistentSQL(t, ctx, db)
	})

	t.Run("delivery", func(t *testing.T) {
		cnt := q1(t, ctx, db, "SELECT SUM(c_delivery_cnt) FROM customer")
		run(t, tpcc.OpDelivery, 2)
		for dist := int64(1); dist <= tpcc.DistrictsPerWarehouse; dist++ {
			if got := q1(t, ctx, db, "SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = 1 AND no_d_id = ?", dist); got != first+2 {
				t.Errorf("district %d: oldest new order %d, want %d", dist, got, first+2)
			}
			if got := q1(t, ctx, db, "SELECT COUNT(*) FROM orders WHERE o_w_id = 1 AND o_d_id = ? AND o_id IN (?, ?) AND o_carrier_id IS NOT NULL",
				dist, first, first+1); got != 2 {
				t.Errorf("district %d: %d of the 2 delivered orders have a carrier", dist, got)
			}
			if got := q1(t, ctx, db, "SELECT COUNT(*) FROM order_line WHERE ol_w_id = 1 AND ol_d_id = ? AND ol_o_id = ? AND ol_delivery_d IS NULL",
				dist, first); got != 0 {
				t.Errorf("district %d: %d lines of a delivered order without a delivery date", dist, got)
			}
		}
		if got := q1(t, ctx, db, "SELECT SUM(c_delivery_cnt) FROM customer") - cnt; got != 2*tpcc.DistrictsPerWarehouse {
			t.Errorf("C_DELIVERY_CNT grew by %d, want %d", got, 2*tpcc.DistrictsPerWarehouse)
		}
		consistentSQL(t, ctx, db)
	})

	t.Run("order-status and stock-level", func(t *testing.T) {
		run(t, tpcc.OpOrderStatus, 20)
		run(t, tpcc.OpStockLevel, 5)
	})

	t.Run("deadlock is a conflict", func(t *testing.T) {
		a, err := d.BeginSQL(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Abort(ctx)
		b, err := d.BeginSQL(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Abort(ctx)
		upd := "UPDATE district SET d_ytd = d_ytd WHERE d_w_id = 1 AND d_id = ?"
		if _, err := a.Exec(ctx, upd, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Exec(ctx, upd, 2); err != nil {
			t.Fatal(err)
		}
		errA := make(chan error, 1)
		go func() { _, err := a.Exec(ctx, upd, 2); errA <- err }()
		_, errB := b.Exec(ctx, upd, 1)
		if errB == nil {
			b.Abort(ctx) // a waited; b's rollback lets it through
			errB = <-errA
		} else {
			b.Abort(ctx)
			<-errA
		}
		if outcome.ClassOf(errB) != outcome.Conflict {
			t.Errorf("deadlock classified %v (%v), want conflict", outcome.ClassOf(errB), errB)
		}
	})

	t.Run("mix through the runner", func(t *testing.T) {
		p := properties.New()
		for k, v := range map[string]string{"workload": "tpcc", tpcc.PropWarehouses: "1", tpcc.PropItems: fmt.Sprint(items),
			tpcc.PropCustomers: fmt.Sprint(customers), tpcc.PropRetries: "10", "seed": "1"} {
			p.Set(k, v)
		}
		wl, err := workload.New(p)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: wl.OpNames(), Window: time.Second, Start: start, Workers: 6})
		if err != nil {
			t.Fatal(err)
		}
		cctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { col.Run(cctx); close(done) }()
		r := &runner.Runner{Config: runner.Config{Phase: runner.Run, Threads: 6, Duration: 5 * time.Second, Seed: 3}, Workload: wl, Driver: d, Collector: col, Start: start}
		if _, err := r.Run(ctx); err != nil {
			t.Fatal(err)
		}
		stop()
		<-done
		tot, err := col.Close()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]int64{}
		for _, o := range tot.Ops {
			names[o.Name] = o.OK
			for c, n := range o.Errors {
				if n > 0 && outcome.Class(c) != outcome.Conflict {
					t.Errorf("%s: %d errors of class %v", o.Name, n, outcome.Class(c))
				}
			}
		}
		t.Logf("committed: %v", names)
		for _, op := range []string{"NEW-ORDER", "PAYMENT"} {
			if names[op] == 0 {
				t.Errorf("no %s committed: %v", op, names)
			}
		}
		consistentSQL(t, ctx, db)
	})

	t.Run("violations found", func(t *testing.T) {
		for _, tc := range []struct {
			name, corrupt, want string
		}{
			{"condition 1", "UPDATE warehouse SET w_ytd = 1 WHERE w_id = 1", "condition 1: warehouse 1"},
			{"condition 2", "UPDATE district SET d_next_o_id = 99999 WHERE d_w_id = 1 AND d_id = 2", "condition 2: district 1/2"},
			{"condition 3", "DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3 AND no_o_id = " +
				"(SELECT MIN(no_o_id) + 1 FROM new_order WHERE no_w_id = 1 AND no_d_id = 3)", "condition 3: district 1/3"},
			{"condition 4", "DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = 7 AND ol_number = 1", "condition 4: district 1/4"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				exec1(t, ctx, db, tc.corrupt)
				res, err := tpcc.ConsistencySQL(ctx, db.SQL)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, v := range res.Violations {
					found = found || strings.HasPrefix(v, tc.want)
				}
				if !found {
					t.Errorf("violations %v lack %q", res.Violations, tc.want)
				}
			})
		}
	})

	t.Run("run before load", func(t *testing.T) {
		exec1(t, ctx, db, "DROP TABLE tpcc_meta")
		w2, err := tpcc.New(tpcc.Config{Warehouses: 1, Items: items, Customers: customers, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		tm := w2.NewTerminal(0, 1)
		tm.Force(tpcc.OpPayment)
		err = tm.Execute(ctx, db)
		if err == nil || !strings.Contains(err.Error(), "tpcc_meta") {
			t.Errorf("a run on an unloaded database: %v, want an error naming tpcc_meta", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Error(err)
		}
	})
}
