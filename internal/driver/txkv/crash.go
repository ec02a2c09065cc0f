package txkv

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// recoveryPoll is how often WaitClientRecovered asks the coordinator.
const recoveryPoll = 100 * time.Millisecond

// CrashClient implements driver.ClientCrasher: the client library instance
// the load runs on crashes — with txkv.client-process=true its process is
// killed with SIGKILL, else it is crashed in this process (client.Crash):
// heartbeats stop, pending flushes are abandoned, it does not unregister —
// and the load continues on a new
// instance named "NAME#N", registered before the crash so that the load
// does not wait for it. Transactions in flight on the crashed instance fail
// (a commit in flight has an unknown outcome, class timeout).
//
// With c.Hold > 0 the load first moves, for Hold, to an instance that
// commits without flushing (client.Config.SkipFlush) — the paper's window
// between commit and flush, held open — and that instance is the one that
// crashes; the instance the load ran on before finishes its flushes and
// unregisters cleanly at the crash. The recovery manager must then replay
// every write-set committed during the hold.
func (d *Driver) CrashClient(ctx context.Context, c driver.ClientCrash) (driver.CrashedClient, error) {
	if c.Hold < 0 {
		return driver.CrashedClient{}, fmt.Errorf("txkv crash-client: hold %v is negative", c.Hold)
	}
	d.crashMu.Lock()
	defer d.crashMu.Unlock()
	victim := d.instance()
	var before instance // closed cleanly at the crash
	if c.Hold > 0 {
		d.gen++
		held, err := d.open(ctx, d.name+"#"+strconv.Itoa(d.gen), true)
		if err != nil {
			return driver.CrashedClient{}, fmt.Errorf("txkv crash-client: opening the instance that holds flushes back: %w", err)
		}
		d.set(held)
		before, victim = victim, held
		t := time.NewTimer(c.Hold)
		select {
		case <-t.C:
		case <-ctx.Done(): // crash now rather than leave an instance that never flushes
			t.Stop()
		}
	}
	d.gen++
	repl, err := d.open(context.WithoutCancel(ctx), d.name+"#"+strconv.Itoa(d.gen), false)
	if err != nil {
		if before == nil {
			return driver.CrashedClient{}, fmt.Errorf("txkv crash-client: opening the replacement client (nothing crashed): %w", err)
		}
		// The held instance must crash whatever happens (it never flushes);
		// the load goes back to the instance it ran on before.
		d.set(before)
		info := victim.crash()
		return crashed(info, before.Name(), time.Now()), fmt.Errorf("txkv crash-client: opening the replacement client: %w; the load continues on %s", err, before.Name())
	}
	d.set(repl)
	info := victim.crash()
	at := time.Now()
	var cerr error
	if before != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.closeTimeout)
		if err := before.close(cctx); err != nil {
			cerr = fmt.Errorf("txkv crash-client: closing %s, the instance before the hold: %w", before.Name(), err)
		}
		cancel()
	}
	return crashed(info, repl.Name(), at), cerr
}

func crashed(info client.CrashInfo, replacement string, at time.Time) driver.CrashedClient {
	return driver.CrashedClient{Name: info.Name, ID: strconv.FormatUint(info.ID, 10), At: at,
		Unflushed: info.Unflushed, Replacement: replacement}
}

// WaitClientRecovered implements driver.ClientCrasher: it asks the
// coordinator (through the current instance) every 100 ms until its
// recovery manager has recorded the recovery of client c — declared failed
// after missed heartbeats, its write-sets committed after T_F(c) replayed —
// or ctx ends.
func (d *Driver) WaitClientRecovered(ctx context.Context, c driver.CrashedClient) (driver.ClientRecovery, error) {
	var last error
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := d.instance().status(sctx)
		cancel()
		if err == nil {
			if r, ok := findClientRecovery(st, c); ok {
				return r, nil
			}
			last = fmt.Errorf("client %s (id %s) is not recovered yet%s", c.Name, c.ID, clientState(st, c))
		} else {
			last = err
		}
		t := time.NewTimer(recoveryPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return driver.ClientRecovery{}, fmt.Errorf("waiting for the recovery of txkv client %s: %w (last: %v)", c.Name, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// findClientRecovery returns the coordinator's record of c's recovery.
func findClientRecovery(st wire.ClusterStatus, c driver.CrashedClient) (driver.ClientRecovery, bool) {
	for _, r := range st.Recoveries {
		if r.Kind != "client" || r.Name != c.Name || r.Detected.Before(c.At.Add(-time.Second)) {
			continue
		}
		return driver.ClientRecovery{Detected: r.Detected, Done: r.Done, Replayed: r.Replayed,
			Detail: fmt.Sprintf("write-sets committed after T_F(c) %d", r.From)}, true
	}
	return driver.ClientRecovery{}, false
}

// clientState describes c in the coordinator's client list.
func clientState(st wire.ClusterStatus, c driver.CrashedClient) string {
	for _, cl := range st.Clients {
		if strconv.FormatUint(cl.ID, 10) == c.ID {
			if cl.Dead {
				return " (declared failed, being recovered)"
			}
			return " (still registered: its failure is not detected yet)"
		}
	}
	return " (not in the client list)"
}
