package tpcc

import (
	"math"
	"testing"
	"time"
)

func TestNURandRange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, x, y int64
	}{
		{"C_LAST", aLast, 0, 999},
		{"C_ID", aCID, 1, 3000},
		{"OL_I_ID", aItem, 1, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRand(1, 2)
			c := NewConstants(3)
			seen := map[int64]int{}
			for i := 0; i < 50000; i++ {
				v := nurand(r, tc.a, c.LoadCID, tc.x, tc.y)
				if v < tc.x || v > tc.y {
					t.Fatalf("NURand(%d, %d, %d) = %d out of range", tc.a, tc.x, tc.y, v)
				}
				seen[v]++
			}
			// non-uniform: the most frequent value is drawn far more often
			// than a uniform draw would (50000/(y-x+1) on average)
			most := 0
			for _, n := range seen {
				most = max(most, n)
			}
			if avg := 50000.0 / float64(tc.y-tc.x+1); float64(most) < 3*avg {
				t.Errorf("most frequent value drawn %d times, uniform average %.1f: not skewed", most, avg)
			}
		})
	}
}

func TestRunConstantsDelta(t *testing.T) {
	for seed := int64(0); seed < 500; seed++ {
		c := NewConstants(seed).WithRun(seed + 7)
		if !validDelta(c.LoadLast, c.RunLast) {
			t.Fatalf("seed %d: C_LAST load %d run %d: delta outside [65,119] or 96/112", seed, c.LoadLast, c.RunLast)
		}
		for _, v := range []int64{c.LoadLast, c.RunLast} {
			if v < 0 || v > aLast {
				t.Fatalf("C_LAST constant %d out of [0,255]", v)
			}
		}
	}
	for _, tc := range []struct {
		load, run int64
		ok        bool
	}{{0, 65, true}, {0, 64, false}, {200, 81, true}, {0, 96, false}, {10, 122, false}, {0, 119, true}, {0, 120, false}} {
		if got := validDelta(tc.load, tc.run); got != tc.ok {
			t.Errorf("validDelta(%d, %d) = %v, want %v", tc.load, tc.run, got, tc.ok)
		}
	}
}

func TestLastName(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "BARBARBAR"}, {371, "PRICALLYOUGHT"}, {999, "EINGEINGEING"}, {40, "BARPRESBAR"}} {
		if got := LastName(tc.n); got != tc.want {
			t.Errorf("LastName(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

func TestMix(t *testing.T) {
	counts := [5]int{}
	for n := 0; n < 100; n++ {
		counts[pickMix(n)]++
	}
	if want := [5]int{45, 43, 4, 4, 4}; counts != want {
		t.Errorf("mix over [0,100) = %v, want %v", counts, want)
	}
	w, err := New(Config{Warehouses: 1, Items: SpecItems, Customers: SpecCustomers, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	term := w.NewTerminal(0, 9)
	got := [5]int{}
	const n = 100000
	for i := 0; i < n; i++ {
		op, pause := term.Next()
		if pause != 0 {
			t.Fatalf("pause %v without think times", pause)
		}
		got[op]++
	}
	for op, want := range []float64{0.45, 0.43, 0.04, 0.04, 0.04} {
		if f := float64(got[op]) / n; math.Abs(f-want) > 0.01 {
			t.Errorf("%s: %.3f of transactions, want %.2f", OpNames()[op], f, want)
		}
	}
}

// TestThinkTimes: the pause before each transaction is the previous
// think time plus this one's keying time, and think times are truncated at
// 10 times their mean. The truncation is checked directly (thinkTime on
// variates above, at and below the cut) and on a seeded terminal that is
// run long enough to reach the cut: an exponential variate above 10 comes
// about once in 22,000 draws, so with this seed some draw does within the
// 200,000 transactions, deterministically; without the cut that draw's
// think time is above 10x its mean and the test fails.
func TestThinkTimes(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want time.Duration
	}{
		{0, 0}, {1, 12 * time.Second}, {9.5, 114 * time.Second}, {10, 120 * time.Second},
		{10.5, 120 * time.Second}, {40, 120 * time.Second},
	} {
		if got := thinkTime(tc.x, 12*time.Second); got != tc.want {
			t.Errorf("thinkTime(%v, 12s) = %v, want %v", tc.x, got, tc.want)
		}
	}
	w, err := New(Config{Warehouses: 1, Items: SpecItems, Customers: SpecCustomers, ThinkTimes: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	term := w.NewTerminal(0, 1)
	op, pause := term.Next()
	if pause != keyingTime[op] {
		t.Errorf("first pause %v, want the keying time %v of %s", pause, keyingTime[op], OpNames()[op])
	}
	cut := 0
	for i := 0; i < 200000; i++ {
		prevThink := term.think
		op, pause := term.Next()
		if pause != prevThink+keyingTime[op] {
			t.Fatalf("pause %v != think %v + keying %v", pause, prevThink, keyingTime[op])
		}
		if term.think > 10*thinkMean[op] {
			t.Fatalf("transaction %d: think time %v above 10x the mean %v", i, term.think, thinkMean[op])
		}
		if term.think == 10*thinkMean[op] {
			cut++
		}
	}
	if cut == 0 {
		t.Error("no think time reached the cut in 200,000 transactions: the seed no longer exercises the truncation")
	}
}

func TestInputRules(t *testing.T) {
	w, err := New(Config{Warehouses: 4, Items: SpecItems, Customers: SpecCustomers, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := &Meta{warehouses: 4, items: SpecItems, customer: SpecCustomers, c: NewConstants(1).WithRun(2)}
	term := w.NewTerminal(5, 3)
	const n = 40000
	var lines, remoteLines, rollbacks, remotePay, byName int
	for i := 0; i < n; i++ {
		in := term.newOrderInput(m)
		if len(in.lines) < 5 || len(in.lines) > 15 {
			t.Fatalf("%d order lines", len(in.lines))
		}
		if in.w != term.wID {
			t.Fatalf("new-order of warehouse %d from a terminal of %d", in.w, term.wID)
		}
		for j, l := range in.lines {
			lines++
			if l.supply != in.w {
				remoteLines++
			}
			if l.item > SpecItems && !(in.rollback && j == len(in.lines)-1) {
				t.Fatalf("unused item outside a rollback's last line")
			}
		}
		if in.rollback {
			rollbacks++
		}
		p := term.paymentInput(m)
		if p.cw != p.w {
			remotePay++
		}
		if p.byName {
			byName++
			if p.last == "" {
				t.Fatal("by-name payment without a name")
			}
		}
		if p.amount < 100 || p.amount > 500000 {
			t.Fatalf("payment amount %d cents", p.amount)
		}
	}
	for _, tc := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"remote order lines", float64(remoteLines) / float64(lines), 0.01, 0.002},
		{"rolled-back new-orders", float64(rollbacks) / n, 0.01, 0.002},
		{"remote payments", float64(remotePay) / n, 0.15, 0.01},
		{"by-name payments", float64(byName) / n, 0.60, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > tc.tol {
				t.Errorf("%.4f, want %.2f ± %.3f", tc.got, tc.want, tc.tol)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	w, _ := New(Config{Warehouses: 2, Items: 1000, Customers: 300, Seed: 5})
	m := &Meta{warehouses: 2, items: 1000, customer: 300, c: NewConstants(5).WithRun(5)}
	a, b := w.NewTerminal(3, 11), w.NewTerminal(3, 11)
	for i := 0; i < 100; i++ {
		oa, _ := a.Next()
		ob, _ := b.Next()
		ia, ib := a.newOrderInput(m), b.newOrderInput(m)
		if oa != ob || ia.c != ib.c || len(ia.lines) != len(ib.lines) || ia.lines[0] != ib.lines[0] {
			t.Fatalf("draw %d differs between two terminals of the same seed", i)
		}
	}
	l1, f1 := w.customerName(1, 2, 1500)
	l2, f2 := w.customerName(1, 2, 1500)
	if l1 != l2 || f1 != f2 {
		t.Fatal("customer names differ for the same seed")
	}
	if l, _ := w.customerName(1, 1, 1); l != "BARBARBAR" {
		t.Errorf("customer 1's last name %s, want BARBARBAR (the first 1,000 take C_ID-1)", l)
	}
}

func TestPlanCoversEverything(t *testing.T) {
	cfg := Config{Warehouses: 2, Items: SpecItems, Customers: SpecCustomers}
	counts := map[unitKind]int64{}
	for _, u := range plan(cfg) {
		if u.kind == uItems || u.kind == uStock || u.kind == uCustomers || u.kind == uOrders {
			counts[u.kind] += u.to - u.from + 1
		} else {
			counts[u.kind]++
		}
	}
	want := map[unitKind]int64{uMeta: 1, uItems: 100000, uWarehouse: 2, uStock: 200000, uCustomers: 60000, uNames: 20, uOrders: 60000}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("unit kind %d covers %d rows, want %d", k, counts[k], v)
		}
	}
	if got := firstUndelivered(SpecCustomers); got != 2101 {
		t.Errorf("first undelivered order %d, want 2101 (900 new-orders per district)", got)
	}
}
