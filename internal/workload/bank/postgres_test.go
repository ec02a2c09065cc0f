package bank_test

import (
	"context"
	"testing"
	"time"

	bankcheck "github.com/faultbench/faultbench/internal/check/bank"
	"github.com/faultbench/faultbench/internal/check/verdict"
	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload/bank"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

// TestPostgresBank is the bank checker's control on a real database: at
// SERIALIZABLE every read of all accounts sums to the total; with the
// test-only switch that runs each transfer as two transactions (debit,
// then credit) reads between them miss money and the checker fails. A
// round is 2 s of load on 4 accounts, 8 workers; the pass is judged on 2
// rounds, the failure looked for over up to 8.
func TestPostgresBank(t *testing.T) {
	hosts := wltest.StartPostgres(t, "test-bank")
	for _, tc := range []struct {
		name  string
		split bool
	}{{name: "serializable"}, {name: "serializable, transfers split", split: true}} {
		t.Run(tc.name, func(t *testing.T) {
			db := runner.ProgramDB(wltest.OpenPostgres(t, hosts, "serializable"))
			w := bank.NewWorkload(bank.Config{Accounts: 4, Balance: 100, MaxTransfer: 20, ReadProportion: 0.3,
				Table: map[bool]string{false: "bank_atomic", true: "bank_split"}[tc.split]})
			if tc.split {
				bank.SplitTransfers(w)
			}
			rec := &wltest.Collector{Start: time.Now()}
			w.SetRecorder(rec)
			wltest.RunLoad(t, w, db)
			// rounds until the checker has enough to judge (a loaded
			// 2-core machine may give 2 s rounds few reads), or an anomaly
			var (
				v   verdict.Verdict
				ops []history.Op
			)
			for range 8 {
				ops = wltest.Load(w, rec, db, 8, 2*time.Second)
				var err error
				if v, err = bankcheck.CheckOps(context.Background(), ops, bankcheck.Options{}); err != nil {
					t.Fatal(err)
				}
				if v.Valid == verdict.False || (!tc.split && v.Measures["reads_judged_count"] >= 20) {
					break
				}
			}
			t.Logf("%d operations, %d ok, %v reads judged: %s", len(ops), wltest.Committed(ops), v.Measures["reads_judged_count"], v.Line())
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
