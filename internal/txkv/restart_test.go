package txkv_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/coord"
	"github.com/faultbench/faultbench/internal/txkv/seglog"
	"github.com/faultbench/faultbench/internal/txkv/txkvtest"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// crashCoord stops the coordinator as kill -9 would and returns its
// address, to restart it there.
func (c *cluster) crashCoord() string {
	c.t.Helper()
	c.mu.Lock()
	co, done, addr := c.coord, c.coordDone, c.addr
	c.mu.Unlock()
	co.Crash()
	if err := <-done; err != coord.ErrCrashed {
		c.t.Fatalf("coordinator: Run returned %v after Crash", err)
	}
	return addr
}

// stopCoord stops the coordinator cleanly (SIGTERM) and returns its address.
func (c *cluster) stopCoord() string {
	c.t.Helper()
	c.mu.Lock()
	stop, done, addr := c.coordStop, c.coordDone, c.addr
	c.mu.Unlock()
	stop()
	if err := <-done; err != nil {
		c.t.Fatalf("coordinator: Run returned %v after a clean stop", err)
	}
	return addr
}

// restartCoord starts a new coordinator on addr over the same directories.
func (c *cluster) restartCoord(addr string, servers int) {
	c.t.Helper()
	var l net.Listener
	var err error
	for i := 0; i < 100; i++ {
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("listening on %s again: %v", addr, err)
	}
	c.startCoord(l, servers)
}

// waitRestartRecovery waits until the restarted coordinator replayed its
// log and returns that recovery.
func (c *cluster) waitRestartRecovery(t *testing.T, d time.Duration) wire.Recovery {
	t.Helper()
	var rec wire.Recovery
	eventually(t, d, "the coordinator's restart recovery", func() bool {
		st := c.coord.Status()
		for _, r := range st.Recoveries {
			if r.Kind == "coordinator" {
				rec = r
			}
		}
		return !st.Recovering
	})
	return rec
}

// TestCoordinatorRestartEmptyLog: a coordinator restarted before any
// commit keeps its servers (same ids) and regions, and serves at once.
func TestCoordinatorRestartEmptyLog(t *testing.T) {
	c := startCluster(t, 2, testConfig(wire.Async))
	before := c.coord.Status()
	c.restartCoord(c.crashCoord(), 2)
	c.waitOnline(30 * time.Second)
	st := c.coord.Status()
	if st.Recovering {
		t.Error("recovering with an empty log")
	}
	if len(st.Servers) != len(before.Servers) {
		t.Fatalf("servers after the restart: %+v, before: %+v", st.Servers, before.Servers)
	}
	for i, s := range st.Servers {
		if s.ID != before.Servers[i].ID || s.Name != before.Servers[i].Name || !s.Live {
			t.Errorf("server after the restart: %+v, before: %+v", s, before.Servers[i])
		}
	}
	if st.Map.Version <= before.Map.Version {
		t.Errorf("region map version went from %d to %d", before.Map.Version, st.Map.Version)
	}
	cl := openClient(t, c.addr)
	defer cl.Close(context.Background())
	put(t, cl, map[string]string{"user20": "a", "user80": "b"})
	eventually(t, 5*time.Second, "the write", func() bool { v, _ := get(t, cl, "user80"); return v == "b" })
	// the servers stay: heartbeats after the restart renewed them
	time.Sleep(2 * c.cfg.SessionTimeout)
	for _, s := range c.coord.Status().Servers {
		if !s.Live {
			t.Errorf("server %s declared failed after the restart", s.Name)
		}
	}
}

// pairs commits transactions that write the same value to two keys in
// different regions, and reads both at one snapshot, checking that no
// transaction is ever seen half applied.
func pairs(t *testing.T, cl *client.Client, stop <-chan struct{}) (*sync.WaitGroup, *atomic.Int64) {
	var wg sync.WaitGroup
	var torn, reads atomic.Int64
	key := func(side string, i int) string { return fmt.Sprintf("user%s-pair%d", side, i) }
	wg.Add(2)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if tx, err := cl.Begin(ctx); err == nil {
				v := []byte(fmt.Sprint(n))
				tx.Write("t", key("15", n%5), map[string][]byte{"f": v})
				tx.Write("t", key("85", n%5), map[string][]byte{"f": v})
				tx.Commit(ctx)
			}
			cancel()
		}
	}()
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if tx, err := cl.Begin(ctx); err == nil {
				a, _, errA := tx.Read(ctx, "t", key("15", n%5), nil)
				b, _, errB := tx.Read(ctx, "t", key("85", n%5), nil)
				if errA == nil && errB == nil {
					reads.Add(1)
					if string(a["f"]) != string(b["f"]) {
						torn.Add(1)
						t.Errorf("snapshot %d: pair %d half applied: %q vs %q", tx.StartTS(), n%5, a["f"], b["f"])
					}
				}
			}
			cancel()
		}
	}()
	return &wg, &reads
}

// logRecords returns the write-sets in a coordinator's recovery log.
func logRecords(t *testing.T, dir string) []wire.TxnRecord {
	t.Helper()
	var out []wire.TxnRecord
	err := seglog.ReadDir(filepath.Join(dir, "coord", "log"), func(b []byte) error {
		rec, err := wire.DecodeTxnRecord(b)
		if err == nil {
			out = append(out, rec)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// noDuplicates checks that no transaction was logged twice: the same
// (client, txn id), or the same values under two timestamps.
func noDuplicates(t *testing.T, recs []wire.TxnRecord) {
	t.Helper()
	ids := map[[2]uint64]uint64{}
	vals := map[string]uint64{}
	for _, r := range recs {
		k := [2]uint64{r.ClientID, r.TxnID}
		if ts, ok := ids[k]; ok && ts != r.TS {
			t.Errorf("client %d txn %d committed twice: at %d and %d", r.ClientID, r.TxnID, ts, r.TS)
		}
		ids[k] = r.TS
		v := ""
		for _, w := range r.Writes {
			v += w.Key + "=" + string(w.Fields[0].Value) + ";"
		}
		if ts, ok := vals[v]; ok && ts != r.TS {
			t.Errorf("write-set %s committed twice: at %d and %d", v, ts, r.TS)
		}
		vals[v] = r.TS
	}
}

// crashingClient opens a client that commits n two-region write-sets and
// flushes them only in part (even timestamps: the low key; odd: nothing),
// records them in h and returns it, to be crashed (Abandon) together with
// the coordinator: only the restarted coordinator's log replay can bring
// these write-sets back, since the coordinator that would have detected
// the client's failure is gone.
func crashingClient(t *testing.T, addr string, h *txkvtest.History, n int) *client.Client {
	t.Helper()
	ctx := context.Background()
	cl, err := client.Open(ctx, client.Config{Coordinator: addr, Name: "crashing",
		FlushFilter: func(ts uint64, w wire.Write) bool { return ts%2 == 0 && w.Key < "user50" }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		kv := map[string]string{fmt.Sprintf("user%d-x", 10+i): fmt.Sprintf("c%d", i), fmt.Sprintf("user%d-x", 60+i): fmt.Sprintf("c%d", i)}
		h.Acked(put(t, cl, kv), kv)
	}
	return cl
}

// TestCoordinatorRestartUnderLoad: the coordinator crashes (losing the log
// records it had not synced) or stops cleanly with commits in flight and
// restarts, together with a client that had committed write-sets and
// flushed them only in part; every acknowledged commit is there at its
// commit timestamp, none is logged twice, no transaction is seen half
// applied, and the load continues. Negative control: with the restart's
// log replay switched off the check must fail.
func TestCoordinatorRestartUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		p        wire.Persistence
		clean    bool
		sw       coord.TestSwitches
		negative bool
	}{
		{p: wire.Async}, {p: wire.Sync}, {p: wire.Async, clean: true},
		{p: wire.Async, sw: coord.TestSwitches{NoRestartReplay: true}, negative: true},
	} {
		name := string(tc.p)
		if tc.clean {
			name += "-clean-stop"
		}
		if tc.negative {
			name = "negative-control/no-restart-replay"
		}
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(tc.p)
			cfg.Heartbeat = 100 * time.Millisecond
			cfg.SessionTimeout = 500 * time.Millisecond
			c := startClusterWith(t, 2, cfg, tc.sw)
			cl := openClient(t, c.addr)
			defer cl.Close(context.Background())
			h := txkvtest.NewHistory("t", "f")
			stop := make(chan struct{})
			wg := load(t, cl, h, 8, stop)
			pwg, reads := pairs(t, cl, stop)
			time.Sleep(600 * time.Millisecond)
			crashing := crashingClient(t, c.addr, h, 20)
			before := h.Acks()
			crashing.Abandon()
			var addr string
			if tc.clean {
				addr = c.stopCoord()
			} else {
				addr = c.crashCoord()
			}
			crashed := time.Now()
			time.Sleep(150 * time.Millisecond)
			c.restartCoord(addr, 2)
			rec := c.waitRestartRecovery(t, 20*time.Second)
			t.Logf("restart recovery: %d write-sets replayed, done %v after the crash (replay %v)",
				rec.Replayed, time.Since(crashed).Round(time.Millisecond), rec.Done.Sub(rec.Detected).Round(time.Millisecond))
			eventually(t, 10*time.Second, "commits after the restart", func() bool { return h.Acks() > before+50 })
			close(stop)
			wg.Wait()
			pwg.Wait()
			if reads.Load() == 0 {
				t.Error("no pair was read")
			}
			requireCheck(t, verify(t, h, cl), tc.negative)
			noDuplicates(t, logRecords(t, c.dir))
			if rec.Replayed == 0 && !tc.negative {
				t.Error("nothing replayed: the crash did not leave write-sets in the log")
			}
		})
	}
}

// TestCoordinatorRestartWithDeadServer: a server crashes and the
// coordinator crashes right after it declared the server failed, while
// its regions may still be recovering; the restarted coordinator finishes
// their recovery from the metadata, and a server that crashed while the
// coordinator was down is declared failed (T_P 0: the whole log is
// replayed to its regions' new hosts). Every acknowledged commit is there
// at its commit timestamp. Negative control: with the region-open hook's
// replay and the restart's log replay switched off the check must fail.
func TestCoordinatorRestartWithDeadServer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sw       coord.TestSwitches
		negative bool
	}{
		{"replay", coord.TestSwitches{}, false},
		// the restart's log replay also covers what the servers lost
		// above the survivors' T_P, so both are switched off
		{"negative-control/no-server-no-restart-replay", coord.TestSwitches{NoServerReplay: true, NoRestartReplay: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cl, h, stop, wg := crashableUnderLoad(t, tc.sw)

			// s1 crashes; the coordinator crashes as soon as it noticed
			c.crashServerPending(t, "s1")
			var pending int
			eventually(t, 10*time.Second, "s1 to be declared failed", func() bool {
				for _, s := range c.coord.Status().Servers {
					if s.Name == "s1" && s.Live {
						return false
					}
				}
				return true
			})
			for _, r := range c.coord.Status().Map.Regions {
				if !r.Online {
					pending++
				}
			}
			addr := c.crashCoord()
			t.Logf("coordinator crashed with %d regions not online", pending)
			// s2 crashes while the coordinator is down
			c.crashServer("s2")
			time.Sleep(100 * time.Millisecond)
			c.restartCoord(addr, 3)
			rec := c.waitRestartRecovery(t, 30*time.Second)
			t.Logf("restart recovery: %+v", rec)
			c.waitOnline(30 * time.Second)
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			requireCheck(t, verify(t, h, cl), tc.negative)
			st := c.coord.Status()
			for _, s := range st.Servers {
				if s.Live && s.Name != "s3" {
					t.Errorf("server %s still live", s.Name)
				}
			}
			var servers int
			for _, r := range st.Recoveries {
				if r.Kind == "server" {
					servers++
					t.Logf("server recovery: %+v", r)
				}
			}
			if servers < 1 {
				t.Errorf("recoveries: %+v", st.Recoveries)
			}
			for _, r := range st.Map.Regions {
				if r.Server != "s3" {
					t.Errorf("region %v on %q, want s3", r.Region, r.Server)
				}
			}
		})
	}
}

// TestCommitRetriedAcrossRestart: a client that did not learn the outcome
// of a commit asks again after the coordinator restarted and gets the
// logged outcome; a commit it never got logged is refused, not committed.
func TestCommitRetriedAcrossRestart(t *testing.T) {
	c := startCluster(t, 2, testConfig(wire.Async))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := wire.NewConn(c.addr)
	defer conn.Close()
	var reg wire.RegisterClientReply
	if err := conn.Call(ctx, "Coord.RegisterClient", &wire.RegisterClientArgs{Name: "raw"}, &reg); err != nil || reg.Code != wire.OK {
		t.Fatal(err, reg.Status)
	}
	var b wire.BeginReply
	if err := conn.Call(ctx, "Coord.Begin", &wire.ClientArgs{ClientID: reg.ClientID}, &b); err != nil || b.Code != wire.OK {
		t.Fatal(err, b.Status)
	}
	w := []wire.Write{{Table: "t", Key: "user33", Fields: []wire.Field{{Name: "f", Value: []byte("retried")}}}}
	args := &wire.CommitArgs{ClientID: reg.ClientID, TxnID: 1, StartTS: b.StartTS, Writes: w, ResolvedBelow: 1}
	var first wire.CommitReply
	if err := conn.Call(ctx, "Coord.Commit", args, &first); err != nil || first.Code != wire.OK {
		t.Fatal(err, first.Status)
	}
	// the answer is "lost"; the write-set is never flushed by the client
	c.restartCoord(c.crashCoord(), 2)
	var again wire.CommitReply
	for {
		err := conn.Call(ctx, "Coord.Commit", args, &again)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if again.Code != wire.OK || again.CommitTS != first.CommitTS {
		t.Fatalf("retried commit: %+v, first answer ts %d", again, first.CommitTS)
	}
	other := *args
	other.TxnID = 2
	var refused wire.CommitReply
	if err := conn.Call(ctx, "Coord.Commit", &other, &refused); err != nil || refused.Code != wire.Unknown {
		t.Fatalf("a commit from the client's previous registration: %v %+v, want unknown", err, refused)
	}
	rec := c.waitRestartRecovery(t, 10*time.Second)
	if rec.Replayed != 1 {
		t.Errorf("replayed %d write-sets, want 1", rec.Replayed)
	}
	// the replay made it visible
	cl := openClient(t, c.addr)
	defer cl.Close(context.Background())
	if v, _ := get(t, cl, "user33"); v != "retried" {
		t.Errorf("user33 = %q after the restart, want the retried commit's value", v)
	}
	// a snapshot from before the restart cannot commit (its conflicts are unknown)...
	var late wire.CommitReply
	stale := &wire.CommitArgs{ClientID: cl.ID(), TxnID: 1 << 40, StartTS: 0, Writes: w}
	if err := conn.Call(ctx, "Coord.Commit", stale, &late); err != nil || late.Code != wire.Aborted {
		t.Errorf("commit with snapshot 0 after the restart: %v %+v, want aborted", err, late)
	}
	// ...and first-committer-wins still sees the logged commit
	conflict := &wire.CommitArgs{ClientID: cl.ID(), TxnID: 1<<40 + 1, StartTS: first.CommitTS - 1, Writes: w}
	if err := conn.Call(ctx, "Coord.Commit", conflict, &late); err != nil || late.Code != wire.Aborted {
		t.Errorf("conflicting commit after the restart: %v %+v, want aborted", err, late)
	}
}
