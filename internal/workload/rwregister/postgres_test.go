package rwregister_test

import (
	"testing"

	"github.com/faultbench/faultbench/internal/check/elle"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/rwregister"
	"github.com/faultbench/faultbench/internal/workload/wltest"
)

// TestPostgresIsolation is the isolation checker's negative control on a
// real database (wltest.IsolationControl): PostgreSQL at REPEATABLE READ
// (snapshot isolation) allows write skew, so a contended rw-register
// history shows G2-item, which serializable forbids, and nothing snapshot
// isolation forbids; at SERIALIZABLE it shows nothing serializable
// forbids; at READ COMMITTED it shows what snapshot isolation forbids
// (lost update: two transactions read the same value of a register and
// both overwrite it).
func TestPostgresIsolation(t *testing.T) {
	hosts := wltest.StartPostgres(t, "test-rwregister")
	wltest.IsolationControl(t, []wltest.IsolationCase{
		{Level: "repeatable-read", Model: "serializable", Anomaly: true, Want: []string{elle.G2Item}},
		{Level: "repeatable-read", Model: "snapshot-isolation"},
		{Level: "serializable", Model: "serializable"},
		{Level: "read-committed", Model: "snapshot-isolation", Anomaly: true, Want: []string{elle.LostUpdate}},
	}, func(level string) program.DB { return runner.ProgramDB(wltest.OpenPostgres(t, hosts, level)) },
		func(table string) program.Program {
			return rwregister.NewWorkload(rwregister.Config{Keys: 3, TxnLen: 3, ReadProportion: 0.5, Table: "rw_" + table})
		})
}
