package txkv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/coord"
	"github.com/faultbench/faultbench/internal/txkv/server"
	"github.com/faultbench/faultbench/internal/txkv/txkvtest"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// cluster is an in-process txkv cluster for unit tests of the protocol
// (the launcher's tests run real processes).
type cluster struct {
	t       testing.TB
	dir     string
	coord   *coord.Coordinator
	addr    string
	cfg     wire.Config
	cancel  context.CancelFunc
	ctx     context.Context
	wg      sync.WaitGroup
	mu      sync.Mutex
	servers map[string]*srv
	// coordDone receives what the running coordinator's Run returned;
	// coordStop stops it cleanly
	coordDone chan error
	coordStop context.CancelFunc
	regions   int
	// sw switches replay paths off in every coordinator the cluster
	// starts (negative controls)
	sw coord.TestSwitches
	// faults inject storage I/O errors into the named servers
	faults map[string]func(written bool) error
}

type srv struct {
	s      *server.Server
	cancel context.CancelFunc
	done   chan error
}

func quiet() *log.Logger {
	if testing.Verbose() {
		return nil
	}
	return log.New(io.Discard, "", 0)
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func startCluster(t testing.TB, servers int, cfg wire.Config) *cluster {
	t.Helper()
	return startClusterWith(t, servers, cfg, coord.TestSwitches{})
}

// startClusterWith starts a cluster whose coordinators have the replay
// paths sw switches off.
func startClusterWith(t testing.TB, servers int, cfg wire.Config, sw coord.TestSwitches) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir(), cfg: cfg, servers: map[string]*srv{}, regions: 8, sw: sw}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.startCoord(listen(t), servers)
	for i := 1; i <= servers; i++ {
		c.startServer(fmt.Sprintf("s%d", i))
	}
	t.Cleanup(c.stop)
	// generous: a loaded 2-core machine can stall process start-up for seconds
	c.waitOnline(60 * time.Second)
	return c
}

// startCoord starts a coordinator on l over the cluster's directories
// (again after crashCoord: a restart).
func (c *cluster) startCoord(l net.Listener, servers int) {
	c.t.Helper()
	co, err := coord.New(coord.Config{Listener: l, Dir: filepath.Join(c.dir, "coord"), Storage: filepath.Join(c.dir, "storage"),
		Servers: servers, Regions: c.regions, Cluster: c.cfg, NoSync: true, Logger: quiet(), TestOnly: c.sw})
	if err != nil {
		l.Close()
		c.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(c.ctx)
	c.mu.Lock()
	c.coord, c.addr = co, co.Addr()
	c.coordDone, c.coordStop = make(chan error, 1), stop
	done := c.coordDone
	c.mu.Unlock()
	c.wg.Add(1)
	go func() { defer c.wg.Done(); done <- co.Run(ctx) }()
}

func (c *cluster) startServer(name string) {
	s, err := server.New(server.Config{Name: name, Listener: listen(c.t), Coordinator: c.addr, Storage: filepath.Join(c.dir, "storage"), NoSync: true, Logger: quiet(),
		StorageFault: c.faults[name]})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	x := &srv{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { x.done <- s.Run(ctx) }()
	c.mu.Lock()
	c.servers[name] = x
	c.mu.Unlock()
}

func (c *cluster) stop() {
	c.mu.Lock()
	var xs []*srv
	for _, x := range c.servers {
		xs = append(xs, x)
	}
	c.servers = map[string]*srv{}
	c.mu.Unlock()
	for _, x := range xs {
		x.cancel()
		<-x.done
	}
	c.cancel()
	c.wg.Wait()
}

func (c *cluster) waitOnline(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := c.coord.Status()
		all := len(st.Map.Regions) > 0
		for _, r := range st.Map.Regions {
			all = all && r.Online
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("regions not online after %v: %+v", d, st.Map.Regions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testConfig(p wire.Persistence) wire.Config {
	return wire.Config{Persistence: p, Heartbeat: 50 * time.Millisecond, SessionTimeout: 300 * time.Millisecond,
		WALSyncInterval: 20 * time.Millisecond, MemstoreFlushBytes: 64 << 10}
}

func openClient(t testing.TB, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := client.Open(ctx, client.Config{Coordinator: addr, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func put(t *testing.T, cl *client.Client, kv map[string]string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range kv {
		if err := tx.Write("t", k, map[string][]byte{"f": []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := tx.Commit(ctx)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return ts
}

func get(t *testing.T, cl *client.Client, key string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := tx.Read(ctx, "t", key, nil)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return string(m["f"]), ok
}

// eventually retries f until it returns true.
func eventually(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBasicTransactions(t *testing.T) {
	for _, p := range []wire.Persistence{wire.Async, wire.Sync} {
		t.Run(string(p), func(t *testing.T) {
			c := startCluster(t, 2, testConfig(p))
			cl := openClient(t, c.addr)
			defer cl.Close(context.Background())
			put(t, cl, map[string]string{"user1": "a", "user5": "b", "user9": "c"})
			eventually(t, 5*time.Second, "the write to be visible", func() bool {
				v, ok := get(t, cl, "user5")
				return ok && v == "b"
			})
			if _, ok := get(t, cl, "user7"); ok {
				t.Error("missing key found")
			}
			// first committer wins
			ctx := context.Background()
			a, _ := cl.Begin(ctx)
			b, _ := cl.Begin(ctx)
			a.Write("t", "user1", map[string][]byte{"f": []byte("x")})
			b.Write("t", "user1", map[string][]byte{"f": []byte("y")})
			if _, err := a.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Commit(ctx); err != client.ErrAborted {
				t.Fatalf("second committer: %v, want ErrAborted", err)
			}
			eventually(t, 5*time.Second, "x", func() bool { v, _ := get(t, cl, "user1"); return v == "x" })
			// read your own writes, delete
			tx, _ := cl.Begin(ctx)
			tx.Write("t", "user2", map[string][]byte{"f": []byte("own")})
			if m, ok, err := tx.Read(ctx, "t", "user2", nil); err != nil || !ok || string(m["f"]) != "own" {
				t.Fatalf("own write: %v %v %v", m, ok, err)
			}
			tx.Delete("t", "user9")
			if _, ok, _ := tx.Read(ctx, "t", "user9", nil); ok {
				t.Error("own delete not seen")
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			eventually(t, 5*time.Second, "delete", func() bool { _, ok := get(t, cl, "user9"); return !ok })
			st := c.coord.Status()
			if st.Commits < 3 || st.Aborts != 1 {
				t.Errorf("commits %d aborts %d", st.Commits, st.Aborts)
			}
		})
	}
}

func (c *cluster) crashServer(name string) {
	c.mu.Lock()
	x := c.servers[name]
	delete(c.servers, name)
	c.mu.Unlock()
	x.s.Crash()
	if err := <-x.done; err != server.ErrCrashed {
		c.t.Errorf("server %s: Run returned %v after Crash", name, err)
	}
}

// load runs writers that each commit transactions of 3 writes to random
// keys (table t, field f), recording every outcome in h, until stop is
// closed.
func load(t *testing.T, cl *client.Client, h *txkvtest.History, writers int, stop <-chan struct{}) *sync.WaitGroup {
	pinSnapshot(t, cl)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				tx, err := cl.Begin(ctx)
				if err != nil {
					cancel()
					continue
				}
				keys := map[string]string{}
				for j := 0; j < 3; j++ {
					k := fmt.Sprintf("user%d", 10+(w*7919+i*104729+j*31)%90)
					keys[k] = fmt.Sprintf("w%d-%d", w, i)
					tx.Write("t", k, map[string][]byte{"f": []byte(keys[k])})
				}
				ts, err := tx.Commit(ctx)
				cancel()
				switch {
				case err == nil:
					h.Acked(ts, keys)
				case errors.Is(err, client.ErrAborted):
					h.Aborted()
				default:
					h.Unknown()
				}
			}
		}()
	}
	return &wg
}

// pinSnapshot keeps a transaction open on cl until the test ends, so that
// version garbage collection keeps every version the lost-commit check
// reads (each acknowledged commit at its own timestamp).
func pinSnapshot(t *testing.T, cl *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pin, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pin.Abort)
}

// verify runs the lost-commit check: every acknowledged commit of h read
// at its commit timestamp.
func verify(t *testing.T, h *txkvtest.History, cl *client.Client) txkvtest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := h.Verify(ctx, cl, 20*time.Second, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.Commits == 0 {
		t.Error("no acknowledged commit to check")
	}
	return res
}

// requireCheck requires the lost-commit check to pass, or, in a negative
// control (a replay path switched off), to fail.
func requireCheck(t *testing.T, res txkvtest.Result, negative bool) {
	t.Helper()
	switch {
	case !negative && !res.OK():
		t.Errorf("acknowledged commits lost: %v", res)
	case negative && res.OK():
		t.Errorf("negative control: with the replay path switched off the lost-commit check still passed (%v)", res)
	case negative:
		t.Logf("negative control: the check failed as it must (%d commits lost)", res.LostCommits)
	}
}

// crashableUnderLoad starts 3 servers whose WALs are synced only at
// heartbeats and whose memstores are not flushed (a crash loses up to a
// heartbeat of writes), opens a client
// and runs 8 writers on it for half a second; the caller crashes things,
// closes stop, waits for wg and verifies h.
func crashableUnderLoad(t *testing.T, sw coord.TestSwitches) (c *cluster, cl *client.Client, h *txkvtest.History, stop chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	cfg := testConfig(wire.Async)
	cfg.Heartbeat = 100 * time.Millisecond
	cfg.SessionTimeout = 400 * time.Millisecond
	cfg.WALSyncInterval = time.Minute
	// no memstore flush either: what a crash drops from the WAL buffer is
	// then in no region file, and only the transactional replay brings
	// it back (the negative controls rely on it)
	cfg.MemstoreFlushBytes = 1 << 30
	c = startClusterWith(t, 3, cfg, sw)
	cl = openClient(t, c.addr)
	t.Cleanup(func() { cl.Close(context.Background()) })
	h = txkvtest.NewHistory("t", "f")
	stop = make(chan struct{})
	wg = load(t, cl, h, 8, stop)
	time.Sleep(500 * time.Millisecond)
	return c, cl, h, stop, wg
}

// crashServerPending crashes a server once it holds at least 3 write-sets
// it has not persisted (one might be a flush whose answer the crash
// swallows, which the client then sends to the new host), atomically with its heartbeat's WAL sync, so that the crash
// certainly loses them from its WAL and the recovery must replay them from
// the recovery log (the negative controls rely on it).
func (c *cluster) crashServerPending(t *testing.T, name string) {
	t.Helper()
	c.mu.Lock()
	x := c.servers[name]
	c.mu.Unlock()
	var dropped int
	eventually(t, 10*time.Second, name+" to hold unpersisted write-sets", func() bool {
		dropped = x.s.CrashPending(3)
		return dropped > 0
	})
	c.mu.Lock()
	delete(c.servers, name)
	c.mu.Unlock()
	if err := <-x.done; err != server.ErrCrashed {
		c.t.Errorf("server %s: Run returned %v after Crash", name, err)
	}
	t.Logf("%s crashed with %d WAL records not persisted", name, dropped)
}

// TestServerCrashRecovery: a server crashes under load, losing the WAL
// records it had not synced; its regions are reassigned, recovered from
// its WAL and by the transactional replay, and every acknowledged commit
// is there at its commit timestamp. Negative control: with the
// region-open hook's replay switched off the check must fail.
func TestServerCrashRecovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sw       coord.TestSwitches
		negative bool
	}{
		{"replay", coord.TestSwitches{}, false},
		{"negative-control/no-server-replay", coord.TestSwitches{NoServerReplay: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cl, h, stop, wg := crashableUnderLoad(t, tc.sw)
			c.crashServerPending(t, "s1")
			crashed := time.Now()
			eventually(t, 30*time.Second, "the server's recovery", func() bool {
				for _, r := range c.coord.Status().Recoveries {
					if r.Kind == "server" {
						return true
					}
				}
				return false
			})
			c.waitOnline(30 * time.Second)
			t.Logf("regions back online %v after the crash", time.Since(crashed).Round(time.Millisecond))
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			requireCheck(t, verify(t, h, cl), tc.negative)
			var rec wire.Recovery
			for _, r := range c.coord.Status().Recoveries {
				rec = r
			}
			t.Logf("recovery: %+v", rec)
			if rec.Regions == 0 {
				t.Error("no region recovered")
			}
			if rec.Replayed == 0 {
				t.Error("nothing replayed: the test did not exercise the transactional replay")
			}
			if tc.negative {
				return
			}
			// the restarted server registers anew and the cluster stays healthy
			c.startServer("s1")
			eventually(t, 5*time.Second, "s1 to register again", func() bool {
				for _, s := range c.coord.Status().Servers {
					if s.Name == "s1" && s.Live {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestClientCrashReplay: a client commits write-sets that span regions,
// flushes some of them completely, some only in part and some not at
// all (out of order: later write-sets complete while earlier ones do
// not, so T_F(c) stops at the first gap), and crashes; the recovery
// manager replays its write-sets committed after T_F(c), and every
// acknowledged commit is there at its commit timestamp. Negative control:
// with the client replay switched off the check must fail.
func TestClientCrashReplay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sw       coord.TestSwitches
		negative bool
	}{
		{"replay", coord.TestSwitches{}, false},
		{"negative-control/no-client-replay", coord.TestSwitches{NoClientReplay: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startClusterWith(t, 2, testConfig(wire.Async), tc.sw)
			ctx := context.Background()
			// write-set i (value v<i>): the first 5 flushed in full (T_F
			// advances past them), then by i%3: 0 in full, 1 only its low
			// key, 2 not at all
			filter := func(_ uint64, w wire.Write) bool {
				i, _ := strconv.Atoi(strings.TrimPrefix(string(w.Fields[0].Value), "v"))
				return i < 5 || i%3 == 0 || (i%3 == 1 && w.Key < "user50")
			}
			crashy, err := client.Open(ctx, client.Config{Coordinator: c.addr, Name: "crashy", FlushFilter: filter})
			if err != nil {
				t.Fatal(err)
			}
			h := txkvtest.NewHistory("t", "f")
			const n = 30
			for i := 0; i < n; i++ {
				kv := map[string]string{fmt.Sprintf("user%d", 10+i): fmt.Sprintf("v%d", i), fmt.Sprintf("user%d", 60+i): fmt.Sprintf("v%d", i)}
				h.Acked(put(t, crashy, kv), kv)
			}
			// the complete flushes have been sent; T_F stops at the first gap
			time.Sleep(3 * c.cfg.Heartbeat)
			tf := crashy.TF()
			if tf < h.MinTS() {
				t.Errorf("T_F(c) %d did not advance past the write-sets flushed in full (first commit at %d)", tf, h.MinTS())
			}
			info := crashy.Crash()
			crashed := time.Now()
			t.Logf("crashed: %+v (local T_F %d)", info, tf)
			if info.Flushes == 0 || info.Unflushed == 0 {
				t.Errorf("want complete and incomplete flushes at the crash: %+v", info)
			}
			cl := openClient(t, c.addr)
			defer cl.Close(ctx)
			var rec wire.Recovery
			eventually(t, 30*time.Second, "the client's recovery", func() bool {
				for _, r := range c.coord.Status().Recoveries {
					if r.Kind == "client" && r.Name == "crashy" {
						rec = r
						return true
					}
				}
				return false
			})
			t.Logf("client recovered %v after the crash: %d write-sets replayed after T_F %d", time.Since(crashed).Round(time.Millisecond), rec.Replayed, rec.From)
			if rec.Replayed == 0 || rec.Replayed > n-5 {
				t.Errorf("replayed %d write-sets, want 1..%d (not those before T_F)", rec.Replayed, n-5)
			}
			requireCheck(t, verify(t, h, cl), tc.negative)
			if st := c.coord.Status(); st.Visible < st.Now {
				t.Errorf("visibility stuck at %d (oracle at %d)", st.Visible, st.Now)
			}
		})
	}
}

func TestReplaySetRestrictedToRegion(t *testing.T) {
	regs := wire.DefaultSplits(4) // ["",user30) [user30,user51) [user51,user71) [user71,∞)
	w := func(k string) wire.Write { return wire.Write{Table: "t", Key: k} }
	recs := []wire.TxnRecord{
		{TS: 11, Writes: []wire.Write{w("user12"), w("user35"), w("user80")}},
		{TS: 12, Writes: []wire.Write{w("user40")}},
		{TS: 13, Writes: []wire.Write{w("user10"), w("user99")}},
		{TS: 14, Writes: []wire.Write{w("user30"), w("user50"), w("user51")}},
	}
	got := coord.ReplaySet(recs, regs[1])
	if len(got) != 3 || got[0].TS != 11 || got[1].TS != 12 || got[2].TS != 14 {
		t.Fatalf("replay set: %+v", got)
	}
	if len(got[0].Writes) != 1 || got[0].Writes[0].Key != "user35" {
		t.Errorf("ts 11: %+v", got[0].Writes)
	}
	if len(got[2].Writes) != 2 || got[2].Writes[0].Key != "user30" || got[2].Writes[1].Key != "user50" {
		t.Errorf("ts 14: %+v", got[2].Writes)
	}
	if len(coord.ReplaySet(recs[1:2], regs[0])) != 0 {
		t.Error("a write-set without writes in the region must be skipped")
	}
}

// TestOracleSurvivesRestart: a restarted coordinator never issues a
// timestamp it may have issued before.
func TestOracleSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	var last uint64
	for round := 0; round < 2; round++ {
		co, err := coord.New(coord.Config{Listener: listen(t), Dir: dir, Storage: filepath.Join(dir, "storage"),
			Servers: 1, Regions: 1, Cluster: testConfig(wire.Async), NoSync: true, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if now := co.Status().Now; round > 0 && now <= last {
			t.Fatalf("round %d: oracle at %d, previous run reached %d", round, now, last)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- co.Run(ctx) }()
		// commit something so the oracle moves (in the first round: a
		// restarted coordinator with write-sets in its log waits for its
		// regions before it accepts transactions, and this one has no
		// servers)
		if round == 0 {
			cl := openClientStart(t, co)
			put(t, cl, map[string]string{"user5": "x"})
			cl.Abandon()
		}
		last = co.Status().Now
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// openClientStart opens a client on a coordinator without servers: a
// commit needs only the coordinator (the flush waits in the background).
func openClientStart(t *testing.T, co *coord.Coordinator) *client.Client {
	t.Helper()
	return openClient(t, co.Addr())
}

// TestCloseDuringCommits: Close while other goroutines commit. Every commit
// either succeeds (and its write-set is flushed before Close returns) or is
// refused with ErrClosed; the race detector sees no Add racing Close's Wait.
func TestCloseDuringCommits(t *testing.T) {
	// Nothing here is about failure detection: a session timeout that a
	// loaded machine's scheduling does not reach (with 300 ms, servers held
	// up by the load were declared dead and their regions recovered while
	// the test waited for its commits), and deadlines, not durations.
	cfg := testConfig(wire.Async)
	cfg.Heartbeat, cfg.SessionTimeout = 200*time.Millisecond, 5*time.Second
	c := startCluster(t, 2, cfg)
	cl := openClient(t, c.addr)
	var wg sync.WaitGroup
	var committed, refused atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				tx, err := cl.Begin(ctx)
				if err != nil {
					if errors.Is(err, client.ErrClosed) {
						return
					}
					continue
				}
				_ = tx.Write("t", fmt.Sprintf("user%d-%d", w, i), map[string][]byte{"f": []byte("v")})
				_, err = tx.Commit(ctx)
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, client.ErrClosed):
					refused.Add(1)
					return
				}
			}
		}()
	}
	eventually(t, time.Minute, "some commits", func() bool { return committed.Load() >= 50 })
	if err := cl.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	if committed.Load() < 50 {
		t.Errorf("%d commits before Close, want at least 50", committed.Load())
	}
	t.Logf("%d committed, %d refused after Close", committed.Load(), refused.Load())
}
