package tpcc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	txkvdriver "github.com/faultbench/faultbench/internal/driver/txkv"
	"github.com/faultbench/faultbench/internal/launcher"
	txkvl "github.com/faultbench/faultbench/internal/launcher/txkv"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/internal/workload/tpcc"
)

// TestMain lets the test binary stand in for the faultbench binary (see
// internal/launcher/txkv).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "node" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		var err error
		switch os.Args[2] {
		case "txkv-coordinator":
			err = txkvl.RunCoordinator(ctx, os.Args[3:])
		case "txkv-server":
			err = txkvl.RunServer(ctx, os.Args[3:])
		}
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// small is a 1-warehouse database scaled down in items and customers so
// the test loads in seconds; the rules do not depend on the sizes.
const (
	items     = 2000
	customers = 300
)

type env struct {
	d     *txkvdriver.Driver
	p     *properties.Properties
	begin tpcc.Begin
}

func startTxkv(t *testing.T, ctx context.Context, opts ...string) *env {
	t.Helper()
	o := map[string]string{"txkv.heartbeat": "200ms"}
	nodes := 2
	for i := 0; i+1 < len(opts); i += 2 {
		if opts[i] == "nodes" {
			fmt.Sscan(opts[i+1], &nodes)
			continue
		}
		o[opts[i]] = opts[i+1]
	}
	t.Setenv("TMPDIR", t.TempDir())
	le, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	c, err := txkvl.Launcher{}.Up(ctx, le, launcher.Spec{Nodes: nodes, Options: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = launcher.Down(context.Background(), c, 10*time.Second) })
	p := properties.New()
	txkvl.Connect(p, c)
	d, err := txkvdriver.NewDriver(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	begin := func(ctx context.Context) (tpcc.Txn, error) { return d.Begin(ctx) }
	return &env{d: d, p: p, begin: begin}
}

// eventually retries f until it succeeds (txkv's snapshots trail commits
// by up to a flush report).
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readInt(ctx context.Context, d *txkvdriver.Driver, table, key, field string) (int64, error) {
	m, err := d.Read(ctx, table, key, []string{field})
	if err != nil {
		return 0, err
	}
	var n int64
	_, err = fmt.Sscan(string(m[field]), &n)
	return n, err
}

func load(t *testing.T, ctx context.Context, e *env, w *tpcc.Workload) {
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
				if err := term.Execute(ctx, tpcc.DB{KV: e.begin}); err != nil {
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

func sumDistricts(ctx context.Context, e *env, field string) (int64, error) {
	var s int64
	for d := int64(1); d <= tpcc.DistrictsPerWarehouse; d++ {
		n, err := readInt(ctx, e.d, tpcc.TDistrict, tpcc.DistrictKey(1, d), field)
		if err != nil {
			return 0, err
		}
		s += n
	}
	return s, nil
}

func consistent(ctx context.Context, e *env) error {
	res, err := tpcc.Consistency(ctx, e.d, 4)
	if err != nil {
		return err
	}
	if !res.OK() {
		return errors.New(res.String())
	}
	return nil
}

// TestPopulationAndTransactions loads a 1-warehouse database into a real
// txkv cluster, checks the population rules, runs each transaction type
// and checks its effects, then runs the mix through the runner and checks
// the consistency conditions.
func TestPopulationAndTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real txkv processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := startTxkv(t, ctx)
	cfg := tpcc.Config{Warehouses: 1, Items: items, Customers: customers, Retries: 20, Seed: 1}
	w, err := tpcc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	load(t, ctx, e, w)

	t.Run("population", func(t *testing.T) {
		eventually(t, "the meta row", func() error {
			_, err := tpcc.ReadMeta(ctx, e.d)
			return err
		})
		eventually(t, "consistency after load", func() error { return consistent(ctx, e) })
		for _, tc := range []struct {
			name, table, key string
			want             bool
		}{
			{"last item", tpcc.TItem, tpcc.ItemKeyOf(items), true},
			{"no item beyond", tpcc.TItem, tpcc.ItemKeyOf(items + 1), false},
			{"last order", tpcc.TOrder, tpcc.OrderKey(1, 10, customers), true},
			{"no order beyond", tpcc.TOrder, tpcc.OrderKey(1, 10, customers+1), false},
			{"first new-order (last 30 %)", tpcc.TNewOrder, tpcc.OrderKey(1, 3, customers*7/10+1), true},
			{"no new-order for a delivered order", tpcc.TNewOrder, tpcc.OrderKey(1, 3, customers*7/10), false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.d.Read(ctx, tc.table, tc.key, nil)
				if got := err == nil; got != tc.want {
					t.Errorf("present = %v (%v), want %v", got, err, tc.want)
				}
				if err != nil && !errors.Is(err, outcome.ErrNotFound) {
					t.Errorf("read: %v", err)
				}
			})
		}
		if n, err := readInt(ctx, e.d, tpcc.TWarehouse, tpcc.WarehouseKey(1), "W_YTD"); err != nil || n != 30000000 {
			t.Errorf("W_YTD = %d (%v), want 300,000.00", n, err)
		}
		if n, err := readInt(ctx, e.d, tpcc.TDistrict, tpcc.DistrictKey(1, 4), "D_NEXT_O_ID"); err != nil || n != customers+1 {
			t.Errorf("D_NEXT_O_ID = %d (%v), want %d", n, err, customers+1)
		}
		c1, err := e.d.Read(ctx, tpcc.TCustomer, tpcc.CustomerKeyOf(1, 1, 1), nil)
		if err != nil || string(c1["C_LAST"]) != "BARBARBAR" || string(c1["C_MIDDLE"]) != "OE" {
			t.Errorf("customer 1: last %q middle %q (%v), want BARBARBAR, OE", c1["C_LAST"], c1["C_MIDDLE"], err)
		}
		idx, err := e.d.Read(ctx, tpcc.TCustomerName, tpcc.CustomerNameKeyOf(1, 1, "BARBARBAR"), nil)
		if err != nil || len(idx["C_IDS"]) == 0 {
			t.Errorf("name index of BARBARBAR: %q (%v)", idx["C_IDS"], err)
		}
	})

	term := w.NewTerminal(0, 42)
	run := func(t *testing.T, op, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			term.Force(op)
			if err := term.Execute(ctx, tpcc.DB{KV: e.begin}); err != nil {
				t.Fatalf("%s #%d: %v", tpcc.OpNames()[op], i, err)
			}
		}
	}

	t.Run("new-order", func(t *testing.T) {
		before, err := sumDistricts(ctx, e, "D_NEXT_O_ID")
		if err != nil {
			t.Fatal(err)
		}
		rb := w.RolledBack()
		run(t, tpcc.OpNewOrder, 30)
		committed := 30 - (w.RolledBack() - rb)
		eventually(t, "D_NEXT_O_ID advanced by the committed new-orders", func() error {
			after, err := sumDistricts(ctx, e, "D_NEXT_O_ID")
			if err != nil {
				return err
			}
			if after-before != committed {
				return fmt.Errorf("sum(D_NEXT_O_ID) grew by %d, committed %d", after-before, committed)
			}
			return nil
		})
		eventually(t, "consistency", func() error { return consistent(ctx, e) })
	})

	t.Run("payment", func(t *testing.T) {
		wBefore, _ := readInt(ctx, e.d, tpcc.TWarehouse, tpcc.WarehouseKey(1), "W_YTD")
		run(t, tpcc.OpPayment, 30)
		eventually(t, "W_YTD grew and equals sum(D_YTD)", func() error {
			wAfter, err := readInt(ctx, e.d, tpcc.TWarehouse, tpcc.WarehouseKey(1), "W_YTD")
			if err != nil {
				return err
			}
			if wAfter-wBefore < 30*100 {
				return fmt.Errorf("W_YTD grew by %d cents after 30 payments", wAfter-wBefore)
			}
			return consistent(ctx, e)
		})
	})

	t.Run("delivery", func(t *testing.T) {
		first := int64(customers*7/10 + 1)
		cur, err := readInt(ctx, e.d, tpcc.TDeliveryCursor, tpcc.DistrictKey(1, 5), "NO_O_ID")
		if err != nil || cur != first {
			t.Fatalf("delivery cursor %d (%v), want %d", cur, err, first)
		}
		run(t, tpcc.OpDelivery, 2)
		eventually(t, "two orders delivered in every district", func() error {
			for d := int64(1); d <= tpcc.DistrictsPerWarehouse; d++ {
				cur, err := readInt(ctx, e.d, tpcc.TDeliveryCursor, tpcc.DistrictKey(1, d), "NO_O_ID")
				if err != nil {
					return err
				}
				if cur != first+2 {
					return fmt.Errorf("district %d: cursor %d, want %d", d, cur, first+2)
				}
				if _, err := e.d.Read(ctx, tpcc.TNewOrder, tpcc.OrderKey(1, d, first), nil); !errors.Is(err, outcome.ErrNotFound) {
					return fmt.Errorf("district %d: new-order %d still there (%v)", d, first, err)
				}
				o, err := e.d.Read(ctx, tpcc.TOrder, tpcc.OrderKey(1, d, first+1), nil)
				if err != nil {
					return err
				}
				if len(o["O_CARRIER_ID"]) == 0 {
					return fmt.Errorf("district %d: delivered order without a carrier", d)
				}
			}
			return consistent(ctx, e)
		})
	})

	t.Run("order-status and stock-level", func(t *testing.T) {
		run(t, tpcc.OpOrderStatus, 20)
		run(t, tpcc.OpStockLevel, 5)
	})

	t.Run("mix through the runner", func(t *testing.T) {
		p := properties.New()
		for k, v := range map[string]string{"workload": "tpcc", tpcc.PropWarehouses: "1", tpcc.PropItems: fmt.Sprint(items),
			tpcc.PropCustomers: fmt.Sprint(customers), "seed": "1"} {
			p.Set(k, v)
		}
		wl, err := workload.New(p)
		if err != nil {
			t.Fatal(err)
		}
		if u := p.Unknown(); len(u) > 0 {
			t.Fatalf("unknown properties %v", u)
		}
		start := time.Now()
		col, err := measure.NewCollector(measure.Config{Dir: t.TempDir(), Ops: wl.OpNames(), Window: time.Second, Start: start, Workers: 6})
		if err != nil {
			t.Fatal(err)
		}
		cctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { col.Run(cctx); close(done) }()
		r := &runner.Runner{Config: runner.Config{Phase: runner.Run, Threads: 6, Duration: 5 * time.Second, Seed: 3}, Workload: wl, Driver: e.d, Collector: col, Start: start}
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
			names[o.Name] = o.OK + o.Errors[outcome.Conflict]
			for c, n := range o.Errors {
				if n > 0 && outcome.Class(c) != outcome.Conflict {
					t.Errorf("%s: %d errors of class %v", o.Name, n, outcome.Class(c))
				}
			}
		}
		t.Logf("transactions: %v", names)
		if names["NEW-ORDER"] == 0 || names["PAYMENT"] == 0 {
			t.Errorf("no New-Order or Payment recorded: %v", names)
		}
		if names["LOAD"] != 0 {
			t.Errorf("LOAD recorded in the run phase")
		}
		eventually(t, "consistency after the mix", func() error { return consistent(ctx, e) })
	})
}

// TestConsistencyCheckFindsViolations corrupts a loaded database one
// condition at a time and expects the check to say which.
func TestConsistencyCheckFindsViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real txkv processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := startTxkv(t, ctx)
	w, err := tpcc.New(tpcc.Config{Warehouses: 1, Items: 100, Customers: 30, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	load(t, ctx, e, w)
	eventually(t, "consistency after load", func() error { return consistent(ctx, e) })
	for _, tc := range []struct {
		name    string
		corrupt func() error
		want    string
	}{
		{"condition 1", func() error {
			return e.d.Update(ctx, tpcc.TWarehouse, tpcc.WarehouseKey(1), map[string][]byte{"W_YTD": []byte("1")})
		}, "condition 1: warehouse 1"},
		{"condition 2", func() error {
			return e.d.Update(ctx, tpcc.TDistrict, tpcc.DistrictKey(1, 2), map[string][]byte{"D_NEXT_O_ID": []byte("99")})
		}, "condition 2: district 1/2"},
		{"condition 3", func() error {
			return e.d.Delete(ctx, tpcc.TNewOrder, tpcc.OrderKey(1, 3, 25))
		}, "condition 3: district 1/3"},
		{"condition 4", func() error {
			return e.d.Delete(ctx, tpcc.TOrderLine, tpcc.OrderLineKey(1, 4, 7, 1))
		}, "condition 4: district 1/4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.corrupt(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the violation reported", func() error {
				res, err := tpcc.Consistency(ctx, e.d, 4)
				if err != nil {
					return err
				}
				for _, v := range res.Violations {
					if len(v) >= len(tc.want) && v[:len(tc.want)] == tc.want {
						return nil
					}
				}
				return fmt.Errorf("violations %v lack %q", res.Violations, tc.want)
			})
		})
	}
}
