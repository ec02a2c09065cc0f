package bank

import (
	"context"
	"fmt"
	"testing"

	"github.com/faultbench/faultbench/internal/check/bank"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

func newWorkload(t *testing.T, kv ...string) *Workload {
	t.Helper()
	return wltest.NewProgram(t, Kind{}, kv...).(*Workload)
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
			rec := &wltest.Collector{}
			w.SetRecorder(rec)
			s := wltest.NewSerialStore()
			db := s.DB()
			wltest.RunLoad(t, w, db)
			reader := w.NewTerminal(1, 1).(*terminal)
			reading := false
			s.AfterCommit = func() {
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
			wltest.Run(w, db, 1, 200)
			ops := rec.Ops()
			v := checkBank(t, ops)
			var transfers, reads, insufficient int
			for _, op := range ops {
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
	wltest.Outcomes(t, func(t *testing.T, s *wltest.SerialStore) program.Program {
		w := newWorkload(t, KeyReadProp, "0")
		wltest.RunLoad(t, w, s.DB())
		return w
	})
}

// TestRefused: a target without transactions is refused, naming what it
// lacks.
func TestRefused(t *testing.T) { wltest.Refused(t, newWorkload(t)) }

func TestConfig(t *testing.T) {
	wltest.Properties(t, Kind{}, []wltest.PropertyCase{
		{Name: "defaults"},
		{Name: "one account", KV: []string{KeyAccounts, "1"}, Want: KeyAccounts},
		{Name: "bad read proportion", KV: []string{KeyReadProp, "-1"}, Want: KeyReadProp},
		{Name: "bad table", KV: []string{KeyTable, "a;drop"}, Want: KeyTable},
		{Name: "not a number", KV: []string{KeyBalance, "lots"}, Want: KeyBalance},
		{Name: "zero transfer", KV: []string{KeyMaxTransfer, "0"}, Want: KeyMaxTransfer},
	})
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
