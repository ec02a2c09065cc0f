package txkv

import (
	"context"
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

var _ launcher.RecoveryReporter = Launcher{}

// Recoveries implements launcher.RecoveryReporter: the recovery manager's
// records of region-server failures (regions reassigned, the failed
// server's WAL split and the write-sets after its T_P replayed) and of
// coordinator restarts (the log replayed after the servers' T_P). Client
// recoveries are left to the crash-client fault, which knows the crash it
// caused and reports them itself. The coordinator keeps its records in
// memory, so a restart forgets those made before it.
func (Launcher) Recoveries(ctx context.Context, c *launcher.Cluster) ([]launcher.Recovery, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := Status(sctx, c)
	if err != nil {
		return nil, err
	}
	return recoveriesOf(st), nil
}

// recoveriesOf turns the coordinator's server and coordinator recovery
// records into launcher records.
func recoveriesOf(st wire.ClusterStatus) []launcher.Recovery {
	var out []launcher.Recovery
	for _, r := range st.Recoveries {
		rec := launcher.Recovery{Kind: r.Kind, Name: r.Name, Detected: r.Detected, Done: r.Done}
		took := r.Done.Sub(r.Detected).Round(time.Millisecond)
		switch r.Kind {
		case "server":
			rec.Detail = fmt.Sprintf("region server %s: %d regions back, %d write-sets replayed after T_P %d, %v after detection",
				r.Name, r.Regions, r.Replayed, r.From, took)
		case "coordinator":
			rec.Name = CoordinatorNode
			rec.Detail = fmt.Sprintf("coordinator restart: %d write-sets replayed after T_P %d, serving %v after the start",
				r.Replayed, r.From, took)
		default:
			continue
		}
		out = append(out, rec)
	}
	return out
}
