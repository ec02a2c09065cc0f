// Package coord is the txkv coordinator process: the transaction manager
// (a timestamp oracle, snapshot isolation with first-committer-wins on
// write-write conflicts, a recovery log in append-only segment files with
// group commit and fsync before a commit is acknowledged, truncated below
// T*_P), the recovery manager of seed 002 (registration and heartbeats of
// clients and servers, T_F(c), T_P(s), T*_F, T*_P; replay of a failed
// client's write-sets committed after T_F(c); replay, per region, of the
// write-sets committed after T_P(s) of a failed server, restricted to the
// region and passing T_P(s) so that the new host inherits it) and the
// region master (key ranges to servers, round-robin reassignment of a
// failed server's regions, the region-open hook).
//
// Membership and the region map (what the paper keeps in ZooKeeper) are
// kept in a metadata file next to the recovery log; a restarted
// coordinator rebuilds its state from that file, the log and the servers'
// heartbeats, and replays the logged write-sets before it serves
// transactions again (restart.go).
//
// Snapshot visibility: with deferred updates a committed write-set reaches
// the servers only after the commit, so a snapshot may only include
// transactions whose write-sets have been flushed. Clients report flushed
// write-sets (batched); Begin hands out the largest timestamp below which
// every committed write-set has been flushed.
package coord

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/seglog"
	"github.com/faultbench/faultbench/internal/txkv/track"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Config configures a coordinator.
type Config struct {
	// Listener is where the coordinator serves (127.0.0.1:port).
	Listener net.Listener
	// Dir is the coordinator's own stable storage: the recovery log, the
	// timestamp reservation and the metadata (membership, region map). A
	// coordinator started on a Dir that holds them is a restart.
	Dir string
	// Storage is the shared storage directory (server WALs, region files).
	Storage string
	// Servers is how many servers must register before regions are assigned.
	Servers int
	// Regions is the number of regions (key ranges).
	Regions int
	// Cluster is handed to servers and clients.
	Cluster wire.Config
	// LogSegmentBytes is the recovery log's segment size (truncation
	// granularity); default 8 MiB.
	LogSegmentBytes int64
	// NoSync skips fsync of the recovery log (unit tests only).
	NoSync bool
	// Logger receives operational messages; nil logs to stderr.
	Logger *log.Logger
}

// Validate checks c.
func (c *Config) Validate() error {
	switch {
	case c.Listener == nil:
		return errors.New("coordinator: a listener is required")
	case c.Dir == "" || c.Storage == "":
		return errors.New("coordinator: dir and storage are required")
	case c.Servers < 1 || c.Servers > 64:
		return fmt.Errorf("coordinator: servers must be 1..64, got %d", c.Servers)
	case c.Regions < 1 || c.Regions > 1024:
		return fmt.Errorf("coordinator: regions must be 1..1024, got %d", c.Regions)
	}
	if err := c.Cluster.Validate(); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	return nil
}

type outcome struct {
	ts      uint64
	seq     uint64
	aborted bool
}

type clientState struct {
	id        uint64
	name      string
	lastHeard time.Time
	dead      bool
	outcomes  map[uint64]outcome
}

type serverState struct {
	id        uint64
	name      string
	addr      string
	walDir    string
	lastHeard time.Time
	live      bool
	reported  bool // its T_P in the tracker is one it reported (or was given), not a restart's 0
	pending   int
	failedAt  time.Time
	failedTP  uint64
	replayed  int
	regions   int // regions it hosted when it failed
}

type regionState struct {
	info    wire.Region
	host    uint64 // server id, 0 = unassigned
	online  bool
	opening bool
	epoch   uint64
	// recovery state after host failures
	pendingWALs []string
	needReplay  bool
	replayFrom  uint64
	failedHosts []uint64
}

// Coordinator is a running coordinator.
type Coordinator struct {
	cfg    Config
	lg     *log.Logger
	rlog   *seglog.Log
	router *client.Router
	rpc    *rpc.Server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	now        uint64 // the timestamp oracle
	lastCommit map[string]uint64
	vis        visibility
	g          *track.Global
	clients    map[uint64]*clientState
	servers    map[uint64]*serverState
	byName     map[string]uint64
	nextID     uint64
	regions    []*regionState
	mapVersion uint64
	started    bool
	rr         int
	recoveries []wire.Recovery
	commits    uint64
	aborts     uint64
	tstarP     uint64
	reserved   uint64 // the oracle may issue timestamps below this without a write
	idsBelow   uint64 // ids below this may have been handed out (persisted in the metadata)

	// restart state (restart.go)
	logged        map[uint64]map[uint64]uint64 // client -> txn -> commit ts, from the log at the start
	loggedN       int                          // write-sets in the log at the start
	conflictFloor uint64                       // commits with an older snapshot abort (their conflicts are unknown)
	floorF        uint64                       // T*_F while recovering
	recovering    bool                         // replaying the log after a restart: no Begin, no Commit
	restarted     bool                         // the metadata existed at the start
	started0      time.Time
	crashed       bool
	crash         chan struct{}
	crashOnce     sync.Once
}

// tsoBlock is how many timestamps one reservation covers.
const tsoBlock = 1 << 20

func (c *Coordinator) tsoPath() string { return filepath.Join(c.cfg.Dir, "tso") }

func readTSO(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("timestamp reservation: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("timestamp reservation %s: %w", path, err)
	}
	return v, nil
}

// reserveLocked durably reserves the next block of timestamps; mu held
// (or not yet shared).
func (c *Coordinator) reserveLocked() error {
	if c.crashed {
		return errors.New("timestamp reservation: crashed")
	}
	next := c.now + tsoBlock
	// the directory is synced too, so that the rename survives a machine crash
	if err := writeAtomic(c.tsoPath(), []byte(strconv.FormatUint(next, 10)+"\n"), !c.cfg.NoSync); err != nil {
		return fmt.Errorf("timestamp reservation: %w", err)
	}
	c.reserved = next
	return nil
}

// New opens the recovery log and returns a coordinator; call Run.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LogSegmentBytes == 0 {
		cfg.LogSegmentBytes = 8 << 20
	}
	lg := cfg.Logger
	if lg == nil {
		lg = log.New(os.Stderr, "txkv-coordinator: ", log.LstdFlags|log.Lmicroseconds)
	}
	if err := os.MkdirAll(cfg.Storage, 0o755); err != nil {
		return nil, fmt.Errorf("coordinator: storage: %w", err)
	}
	rl, err := seglog.Open(seglog.Options{Dir: filepath.Join(cfg.Dir, "log"), SegmentBytes: cfg.LogSegmentBytes, NoSync: cfg.NoSync})
	if err != nil {
		return nil, fmt.Errorf("coordinator: recovery log: %w", err)
	}
	c := &Coordinator{
		cfg: cfg, lg: lg, rlog: rl,
		lastCommit: map[string]uint64{},
		g:          track.NewGlobal(),
		clients:    map[uint64]*clientState{},
		servers:    map[uint64]*serverState{},
		byName:     map[string]uint64{},
		nextID:     1,
		mapVersion: 1,
		logged:     map[uint64]map[uint64]uint64{},
		crash:      make(chan struct{}),
		started0:   time.Now(),
	}
	// A restarted coordinator continues the oracle after every timestamp
	// it may have issued: the reservation file and the log's last one.
	c.reserved, err = readTSO(c.tsoPath())
	if err != nil {
		rl.Close()
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	c.now = c.reserved
	for _, s := range rl.Segments() {
		c.now = max(c.now, s.MaxKey)
	}
	if err := c.reserveLocked(); err != nil {
		rl.Close()
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	for _, r := range wire.DefaultSplits(cfg.Regions) {
		c.regions = append(c.regions, &regionState{info: r})
	}
	if err := c.loadLog(); err != nil {
		rl.Close()
		return nil, fmt.Errorf("coordinator: reading the recovery log: %w", err)
	}
	m, ok, err := loadMeta(c.metaPath())
	if err == nil && ok {
		c.restarted = true
		err = c.restoreMeta(m)
	}
	if err != nil {
		rl.Close()
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	c.idsBelow = max(c.idsBelow, c.nextID)
	c.router = client.NewRouter(locator{c}, wire.RegionMap{})
	c.rpc = rpc.NewServer()
	if err := c.rpc.RegisterName("Coord", &coordRPC{c}); err != nil {
		rl.Close()
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return c, nil
}

// Addr returns the address the coordinator serves on.
func (c *Coordinator) Addr() string { return c.cfg.Listener.Addr().String() }

// Run serves until ctx ends, then closes the listener and the log.
func (c *Coordinator) Run(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancel(ctx)
	defer c.cancel()
	c.lg.Printf("serving on %s: %d regions, waiting for %d servers; persistence %s, heartbeat %v, session timeout %v",
		c.Addr(), len(c.regions), c.cfg.Servers, c.cfg.Cluster.Persistence, c.cfg.Cluster.Heartbeat, c.cfg.Cluster.SessionTimeout)
	c.mu.Lock()
	if c.restarted {
		c.lg.Printf("restarted: %d servers and the region map from the metadata, %d write-sets in the recovery log, oracle at %d",
			len(c.servers), c.loggedN, c.now)
		c.resumeLocked()
	}
	if c.recovering {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.restartReplay(c.started0) }()
	}
	c.mu.Unlock()
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.detector() }()
	go func() { defer c.wg.Done(); c.housekeeping() }()
	serveDone := make(chan struct{})
	go func() { wire.Serve(c.cfg.Listener, c.rpc); close(serveDone) }()
	select {
	case <-c.ctx.Done():
	case <-c.crash:
		c.cfg.Listener.Close()
		<-serveDone
		c.cancel()
		c.rlog.Abandon()
		c.wg.Wait()
		c.router.Close()
		return ErrCrashed
	}
	c.cfg.Listener.Close()
	<-serveDone
	c.wg.Wait()
	c.router.Close()
	if err := c.rlog.Close(); err != nil {
		return fmt.Errorf("coordinator: closing the recovery log: %w", err)
	}
	c.lg.Printf("stopped")
	return nil
}

type locator struct{ c *Coordinator }

func (l locator) Locate(context.Context) (wire.RegionMap, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.c.regionMapLocked(), nil
}

// regionMapLocked builds the clients' region map; mu held.
func (c *Coordinator) regionMapLocked() wire.RegionMap {
	m := wire.RegionMap{Version: c.mapVersion, Regions: make([]wire.RegionInfo, len(c.regions))}
	for i, r := range c.regions {
		ri := wire.RegionInfo{Region: r.info}
		if s := c.servers[r.host]; s != nil && s.live {
			ri.Server, ri.Addr, ri.Online = s.name, s.addr, r.online
		}
		m.Regions[i] = ri
	}
	return m
}

// tstarFLocked returns T*_F; while the log is replayed after a restart it
// stays below the oldest logged write-set. mu held.
func (c *Coordinator) tstarFLocked() uint64 {
	if c.recovering {
		return min(c.floorF, c.g.TStarF(c.now))
	}
	return c.g.TStarF(c.now)
}

// ---- visibility ----

type tsHeap []uint64

func (h tsHeap) Len() int           { return len(h) }
func (h tsHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h tsHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *tsHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *tsHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// visibility tracks committed write-sets not yet reported flushed.
type visibility struct {
	pending map[uint64]uint64 // ts -> client
	h       tsHeap
}

func (v *visibility) add(ts, client uint64) {
	if v.pending == nil {
		v.pending = map[uint64]uint64{}
	}
	v.pending[ts] = client
	heap.Push(&v.h, ts)
}

func (v *visibility) flushed(ts uint64) { delete(v.pending, ts) }

func (v *visibility) flushedClient(client uint64) {
	for ts, c := range v.pending {
		if c == client {
			delete(v.pending, ts)
		}
	}
}

// visible returns the largest timestamp at or below now such that every
// committed write-set up to it has been flushed.
func (v *visibility) visible(now uint64) uint64 {
	for len(v.h) > 0 {
		if _, ok := v.pending[v.h[0]]; ok {
			return v.h[0] - 1
		}
		heap.Pop(&v.h)
	}
	return now
}

// ---- RPC handlers ----

type coordRPC struct{ c *Coordinator }

// RegisterClient registers a client (Algorithm 2, line 1) with T_F = T*_F.
func (h *coordRPC) RegisterClient(a *wire.RegisterClientArgs, r *wire.RegisterClientReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.allocIDLocked()
	tf := c.tstarFLocked()
	c.clients[id] = &clientState{id: id, name: a.Name, lastHeard: time.Now(), outcomes: map[uint64]outcome{}}
	c.g.AddClient(id, tf)
	r.ClientID, r.TF, r.Now, r.Config, r.Map = id, tf, c.now, c.cfg.Cluster, c.regionMapLocked()
	c.lg.Printf("client %s registered as %d (T_F %d)", a.Name, id, tf)
	return nil
}

// UnregisterClient removes a client that shut down cleanly (Algorithm 2, line 4).
func (h *coordRPC) UnregisterClient(a *wire.ClientArgs, r *wire.StatusReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.clients[a.ClientID]
	switch {
	case cs == nil:
		r.Status = wire.Errorf(wire.Unknown, "client %d is not registered", a.ClientID)
	case cs.dead:
		r.Status = wire.Errorf(wire.Dead, "client %d was declared failed", a.ClientID)
	default:
		delete(c.clients, a.ClientID)
		c.g.RemoveClient(a.ClientID)
		c.vis.flushedClient(a.ClientID)
		c.lg.Printf("client %s (%d) unregistered", cs.name, cs.id)
	}
	return nil
}

// client returns the live client id or a status; mu held.
func (c *Coordinator) clientLocked(id uint64) (*clientState, wire.Status) {
	cs := c.clients[id]
	if cs == nil {
		return nil, wire.Errorf(wire.Unknown, "client %d is not registered", id)
	}
	if cs.dead {
		return nil, wire.Errorf(wire.Dead, "client %d was declared failed", id)
	}
	return cs, wire.Status{}
}

// ClientHeartbeat records T_F(c) (Algorithm 2, line 7) and returns T*_F and the oracle.
func (h *coordRPC) ClientHeartbeat(a *wire.ClientHeartbeatArgs, r *wire.HeartbeatReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, st := c.clientLocked(a.ClientID)
	if cs == nil {
		r.Status = st
		return nil
	}
	cs.lastHeard = time.Now()
	c.g.ClientHeartbeat(a.ClientID, a.TF)
	r.TStarF, r.Now = c.tstarFLocked(), c.now
	return nil
}

// Begin hands out a snapshot timestamp: every write-set committed at or below it is flushed.
func (h *coordRPC) Begin(a *wire.ClientArgs, r *wire.BeginReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, st := c.clientLocked(a.ClientID)
	if cs == nil {
		r.Status = st
		return nil
	}
	if c.recovering {
		r.Status = wire.Errorf(wire.Unavailable, "the coordinator is replaying its log after a restart")
		return nil
	}
	r.StartTS = c.vis.visible(c.now)
	return nil
}

// Commit decides a commit (first committer wins), logs it and waits for the log sync.
func (h *coordRPC) Commit(a *wire.CommitArgs, r *wire.CommitReply) error {
	c := h.c
	c.mu.Lock()
	if ts, ok := c.logged[a.ClientID][a.TxnID]; ok {
		// decided before a restart (found in the log, durable)
		c.mu.Unlock()
		r.CommitTS = ts
		return nil
	}
	var o outcome
	seen := false
	if cs := c.clients[a.ClientID]; cs != nil {
		// a retry learns the decision, even from a client declared failed
		// meanwhile (the recovery manager replays it if it committed)
		o, seen = cs.outcomes[a.TxnID]
	}
	if !seen {
		cs, st := c.clientLocked(a.ClientID)
		if cs == nil {
			c.mu.Unlock()
			r.Status = st
			return nil
		}
		if c.recovering {
			c.mu.Unlock()
			r.Status = wire.Errorf(wire.Unavailable, "the coordinator is replaying its log after a restart")
			return nil
		}
		for id := range cs.outcomes {
			if id < a.ResolvedBelow {
				delete(cs.outcomes, id)
			}
		}
		o = c.commitLocked(cs, a)
		cs.outcomes[a.TxnID] = o
	}
	c.mu.Unlock()
	if o.aborted {
		r.Status = wire.Errorf(wire.Aborted, "write-write conflict with a transaction committed after start timestamp %d", a.StartTS)
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := c.rlog.WaitSynced(ctx, o.seq); err != nil {
		if c.ctx.Err() != nil {
			// shutting down: the log's close syncs the record or it is
			// lost; the client asks again and a restarted coordinator
			// answers from its log
			r.Status = wire.Errorf(wire.Unavailable, "the coordinator is stopping")
			return nil
		}
		r.Status = wire.Errorf(wire.Internal, "recovery log: %v", err)
		return nil
	}
	r.CommitTS = o.ts
	return nil
}

// commitLocked decides a commit: first committer wins; mu held.
func (c *Coordinator) commitLocked(cs *clientState, a *wire.CommitArgs) outcome {
	if a.StartTS < c.conflictFloor {
		// the snapshot predates what the log tells after a restart: a
		// conflicting commit cannot be ruled out
		c.aborts++
		return outcome{aborted: true}
	}
	keys := make([]string, len(a.Writes))
	for i, w := range a.Writes {
		keys[i] = w.Table + "\x00" + w.Key
		if c.lastCommit[keys[i]] > a.StartTS {
			c.aborts++
			return outcome{aborted: true}
		}
	}
	if c.now+1 >= c.reserved {
		if err := c.reserveLocked(); err != nil {
			c.lg.Printf("%v", err)
			return outcome{aborted: true}
		}
	}
	c.now++
	ts := c.now
	for _, k := range keys {
		c.lastCommit[k] = ts
	}
	rec := wire.AppendTxnRecord(nil, &wire.TxnRecord{TS: ts, ClientID: cs.id, TxnID: a.TxnID, Writes: a.Writes})
	seq, err := c.rlog.Append(rec, ts)
	if err != nil {
		// the log is broken: nothing can commit any more
		c.lg.Printf("recovery log append failed: %v", err)
		return outcome{aborted: true}
	}
	c.vis.add(ts, cs.id)
	c.commits++
	return outcome{ts: ts, seq: seq}
}

// Flushed records write-sets a client has fully flushed (snapshot visibility).
func (h *coordRPC) Flushed(a *wire.FlushedArgs, r *wire.StatusReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ts := range a.TS {
		c.vis.flushed(ts)
	}
	return nil
}

// Locate returns the region map.
func (h *coordRPC) Locate(_ *wire.ClientArgs, r *wire.LocateReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Map = c.regionMapLocked()
	return nil
}

// RegisterServer registers a region server (Algorithm 4, line 1); a server registering again under its name replaces a failed instance.
func (h *coordRPC) RegisterServer(a *wire.RegisterServerArgs, r *wire.RegisterServerReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byName[a.Name]; ok {
		if s := c.servers[old]; s != nil && s.live {
			c.lg.Printf("server %s registers again: its previous instance %d has failed", a.Name, old)
			c.serverFailedLocked(s, "registered again")
		}
	}
	id := c.allocIDLocked()
	s := &serverState{id: id, name: a.Name, addr: a.Addr, lastHeard: time.Now(), live: true, reported: true,
		walDir: filepath.Join(c.cfg.Storage, "wal", a.Name+"-"+strconv.FormatUint(id, 10))}
	c.servers[id] = s
	c.byName[a.Name] = id
	tp := c.tstarFLocked()
	c.g.AddServer(id, min(c.tstarP, tp))
	r.ServerID, r.TP, r.Config, r.WALDir = id, tp, c.cfg.Cluster, s.walDir
	c.lg.Printf("server %s registered as %d at %s (T_P %d)", a.Name, id, a.Addr, tp)
	c.assignLocked()
	c.saveMetaLocked()
	return nil
}

// serverLocked returns the live server or a status; mu held.
func (c *Coordinator) serverLocked(id uint64) (*serverState, wire.Status) {
	s := c.servers[id]
	if s == nil {
		return nil, wire.Errorf(wire.Unknown, "server %d is not registered", id)
	}
	if !s.live {
		return nil, wire.Errorf(wire.Dead, "server %s (%d) was declared failed", s.name, id)
	}
	return s, wire.Status{}
}

// ServerHeartbeat records T_P(s) (Algorithm 4, line 7), renews the server and returns T*_F.
func (h *coordRPC) ServerHeartbeat(a *wire.ServerHeartbeatArgs, r *wire.HeartbeatReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	s, st := c.serverLocked(a.ServerID)
	if s == nil {
		r.Status = st
		return nil
	}
	s.lastHeard = time.Now()
	s.reported = true
	s.pending = a.Pending
	c.g.ServerHeartbeat(a.ServerID, a.TP)
	r.TStarF, r.Now = c.tstarFLocked(), c.now
	return nil
}

// UnregisterServer moves the regions of a server that shut down cleanly.
func (h *coordRPC) UnregisterServer(a *wire.ServerArgs, r *wire.StatusReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	s, st := c.serverLocked(a.ServerID)
	if s == nil {
		r.Status = st
		return nil
	}
	// A clean shutdown synced the WAL and flushed the memstores: the new
	// hosts replay its WAL, no transactional replay is needed.
	s.live = false
	if c.byName[s.name] == s.id {
		delete(c.byName, s.name)
	}
	n := 0
	for _, rg := range c.regions {
		if rg.host != s.id {
			continue
		}
		rg.host, rg.online, rg.opening = 0, false, false
		rg.pendingWALs = append(rg.pendingWALs, s.walDir)
		rg.failedHosts = append(rg.failedHosts, s.id)
		n++
	}
	s.failedAt, s.regions = time.Now(), n
	c.mapVersion++
	c.lg.Printf("server %s (%d) unregistered; moving its %d regions", s.name, s.id, n)
	c.assignLocked()
	c.serverDoneLocked(s)
	c.saveMetaLocked()
	return nil
}

// RecoverRegion is the region-open hook: it returns once the region was recovered and is online.
func (h *coordRPC) RecoverRegion(a *wire.RecoverRegionArgs, r *wire.StatusReply) error {
	r.Status = h.c.recoverRegion(a.ServerID, a.Region)
	return nil
}

// ClusterStatus reports the coordinator's view.
func (h *coordRPC) ClusterStatus(_ *wire.ClientArgs, r *wire.ClusterStatus) error {
	*r = h.c.Status()
	return nil
}

// Status returns the coordinator's view.
func (c *Coordinator) Status() wire.ClusterStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := wire.ClusterStatus{Now: c.now, Visible: c.vis.visible(c.now), TStarF: c.tstarFLocked(), TStarP: c.tstarP,
		Map: c.regionMapLocked(), Commits: c.commits, Aborts: c.aborts, ExpectedSrvs: c.cfg.Servers}
	for _, s := range c.servers {
		ss := wire.ServerStatus{Name: s.name, ID: s.id, Addr: s.addr, Live: s.live}
		ss.TP, _ = c.g.ServerTP(s.id)
		for _, rg := range c.regions {
			if rg.host == s.id {
				ss.Regions = append(ss.Regions, rg.info.ID)
			}
		}
		st.Servers = append(st.Servers, ss)
	}
	sort.Slice(st.Servers, func(i, j int) bool { return st.Servers[i].ID < st.Servers[j].ID })
	for _, cs := range c.clients {
		tf, _ := c.g.ClientTF(cs.id)
		st.Clients = append(st.Clients, wire.ClientStatus{Name: cs.name, ID: cs.id, TF: tf, Dead: cs.dead})
	}
	sort.Slice(st.Clients, func(i, j int) bool { return st.Clients[i].ID < st.Clients[j].ID })
	st.Recoveries = append(st.Recoveries, c.recoveries...)
	st.Recovering = c.recovering
	st.LogSegments = len(c.rlog.Segments())
	return st
}

// ---- region master ----

// assignLocked assigns every unassigned region to a live server, round
// robin; mu held. Before the expected servers registered it does nothing.
func (c *Coordinator) assignLocked() {
	var live []*serverState
	for _, s := range c.servers {
		if s.live {
			live = append(live, s)
		}
	}
	if !c.started {
		if len(live) < c.cfg.Servers {
			return
		}
		c.started = true
	}
	if len(live) == 0 {
		return
	}
	sort.Slice(live, func(i, j int) bool { return live[i].id < live[j].id })
	for _, rg := range c.regions {
		if rg.host != 0 {
			continue
		}
		s := live[c.rr%len(live)]
		c.rr++
		rg.host, rg.online, rg.opening = s.id, false, true
		rg.epoch++
		args := &wire.OpenRegionArgs{Region: rg.info, RecoverWALs: append([]string(nil), rg.pendingWALs...)}
		c.lg.Printf("region %v -> server %s (%d); recover from %d WALs, replay %v after %d", rg.info, s.name, s.id, len(args.RecoverWALs), rg.needReplay, rg.replayFrom)
		c.wg.Add(1)
		go func(addr string, epoch uint64, id wire.RegionID) {
			defer c.wg.Done()
			c.openRegion(addr, epoch, id, args)
		}(s.addr, rg.epoch, rg.info.ID)
	}
	c.mapVersion++
}

// openRegion asks a server to open a region, retrying until it accepted or
// the assignment changed.
func (c *Coordinator) openRegion(addr string, epoch uint64, id wire.RegionID, args *wire.OpenRegionArgs) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		current := c.regions[id].epoch == epoch && c.regions[id].opening
		c.mu.Unlock()
		if !current || c.ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		var rep wire.StatusReply
		err := c.router.Conn(addr).Call(ctx, "Server.OpenRegion", args, &rep)
		cancel()
		if err == nil && rep.Code == wire.OK {
			return
		}
		if err == nil {
			c.lg.Printf("open region %d on %s: %v", id, addr, rep.Err())
		}
		t := time.NewTimer(min(50*time.Millisecond<<min(attempt, 4), time.Second))
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// serverFailedLocked handles the failure of server s (Algorithm 4, line
// 10): its regions are reassigned; each will be recovered from the failed
// servers' WALs and then by the transactional replay after T_P(s). mu held.
func (c *Coordinator) serverFailedLocked(s *serverState, why string) {
	s.live = false
	s.failedAt = time.Now()
	if c.byName[s.name] == s.id {
		delete(c.byName, s.name)
	}
	tp, _ := c.g.ServerTP(s.id)
	s.failedTP = tp
	n := 0
	for _, rg := range c.regions {
		if rg.host != s.id {
			continue
		}
		rg.pendingWALs = append(rg.pendingWALs, s.walDir)
		rg.failedHosts = append(rg.failedHosts, s.id)
		if rg.needReplay {
			rg.replayFrom = min(rg.replayFrom, tp)
		} else {
			rg.needReplay, rg.replayFrom = true, tp
		}
		rg.host, rg.online, rg.opening = 0, false, false
		n++
	}
	s.regions = n
	c.mapVersion++
	c.lg.Printf("server %s (%d) failed (%s): T_P %d, %d regions to recover", s.name, s.id, why, tp, n)
	c.assignLocked()
	c.serverDoneLocked(s)
	c.saveMetaLocked()
}

// serverDoneLocked finishes a failed server once no region still needs its
// WAL: it leaves T*_P, its WAL directory is removed. mu held.
func (c *Coordinator) serverDoneLocked(s *serverState) {
	if s.live {
		return
	}
	for _, rg := range c.regions {
		for _, h := range rg.failedHosts {
			if h == s.id {
				return
			}
		}
	}
	if _, ok := c.g.ServerTP(s.id); !ok {
		return // done already
	}
	c.g.RemoveServer(s.id)
	if err := os.RemoveAll(s.walDir); err != nil {
		c.lg.Printf("removing WAL %s: %v", s.walDir, err)
	}
	if s.regions > 0 {
		c.recoveries = append(c.recoveries, wire.Recovery{Kind: "server", Name: s.name, Detected: s.failedAt, Done: time.Now(),
			Replayed: s.replayed, Regions: s.regions, From: s.failedTP})
		c.lg.Printf("server %s (%d) recovered: %d regions, %d write-sets replayed, %v after detection",
			s.name, s.id, s.regions, s.replayed, time.Since(s.failedAt).Round(time.Millisecond))
	}
	delete(c.servers, s.id)
}

// recoverRegion is the region-open hook (Algorithm 4, lines 11-16 for one
// region): it replays the write-sets committed after the failed hosts'
// T_P, restricted to the region, to the server opening it, then marks the
// region online.
func (c *Coordinator) recoverRegion(serverID uint64, id wire.RegionID) wire.Status {
	c.mu.Lock()
	s, st := c.serverLocked(serverID)
	if s == nil {
		c.mu.Unlock()
		return st
	}
	if int(id) >= len(c.regions) {
		c.mu.Unlock()
		return wire.Errorf(wire.BadRequest, "no region %d", id)
	}
	rg := c.regions[id]
	if rg.host == serverID && rg.online {
		// recovered already; the answer was lost (e.g. a coordinator restart)
		c.mu.Unlock()
		return wire.Status{}
	}
	if rg.host != serverID || !rg.opening {
		c.mu.Unlock()
		return wire.Errorf(wire.NotServing, "region %d is not being opened by server %d", id, serverID)
	}
	epoch, need, from, info := rg.epoch, rg.needReplay, rg.replayFrom, rg.info
	addr := s.addr
	c.mu.Unlock()

	replayed := 0
	if need {
		start := time.Now()
		recs, err := c.fetch(c.ctx, from, nil)
		if err != nil {
			return wire.Errorf(wire.Internal, "fetching the log after %d: %v", from, err)
		}
		only := wire.RegionInfo{Region: info, Addr: addr}
		for _, p := range ReplaySet(recs, info) {
			ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			err := c.router.Flush(ctx, p.TS, p.Writes, client.FlushOptions{Replay: true, InheritTP: from, Only: &only})
			cancel()
			if err != nil {
				return wire.Errorf(wire.Unavailable, "replaying ts %d to region %d: %v", p.TS, id, err)
			}
			replayed++
		}
		c.lg.Printf("region %d: replayed %d write-sets committed after %d (of %d in the log) to %s in %v",
			id, replayed, from, len(recs), s.name, time.Since(start).Round(time.Millisecond))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rg.epoch != epoch || rg.host != serverID {
		return wire.Errorf(wire.NotServing, "region %d was reassigned during its recovery", id)
	}
	hosts := rg.failedHosts
	rg.online, rg.opening = true, false
	rg.needReplay, rg.replayFrom, rg.pendingWALs, rg.failedHosts = false, 0, nil, nil
	c.mapVersion++
	for _, h := range hosts {
		if fs := c.servers[h]; fs != nil {
			fs.replayed += replayed
		}
	}
	for _, h := range hosts {
		if fs := c.servers[h]; fs != nil {
			c.serverDoneLocked(fs)
		}
	}
	c.saveMetaLocked()
	return wire.Status{}
}

// ReplaySet restricts the logged write-sets to region r (Algorithm 4,
// lines 17-21): for each write-set, the updates that fall into r, with
// the original commit timestamp; write-sets with none are skipped.
func ReplaySet(recs []wire.TxnRecord, r wire.Region) []wire.TxnRecord {
	var out []wire.TxnRecord
	for _, rec := range recs {
		var ws []wire.Write
		for _, w := range rec.Writes {
			if r.Contains(w.Key) {
				ws = append(ws, w)
			}
		}
		if len(ws) > 0 {
			out = append(out, wire.TxnRecord{TS: rec.TS, ClientID: rec.ClientID, TxnID: rec.TxnID, Writes: ws})
		}
	}
	return out
}

// fetch returns the durable log records with timestamp above from that
// keep accepts (nil: all), in commit order (the log is written in
// timestamp order under the lock).
func (c *Coordinator) fetch(ctx context.Context, from uint64, keep func(*wire.TxnRecord) bool) ([]wire.TxnRecord, error) {
	if err := c.rlog.Barrier(ctx); err != nil {
		return nil, err
	}
	var out []wire.TxnRecord
	err := c.rlog.Scan(func(s seglog.Segment) bool { return s.MaxKey > from }, func(b []byte) error {
		if wire.TSOf(b) <= from {
			return nil
		}
		rec, err := wire.DecodeTxnRecord(b)
		if err != nil {
			return err
		}
		if keep == nil || keep(&rec) {
			out = append(out, rec)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out, err
}

// ---- client failure ----

// clientFailed replays a failed client's write-sets committed after
// T_F(c) (Algorithm 2, lines 10-13), then removes the client.
func (c *Coordinator) clientFailed(cs *clientState, tf uint64) {
	detected := time.Now()
	var recs []wire.TxnRecord
	var err error
	for attempt := 0; ; attempt++ {
		recs, err = c.fetch(c.ctx, tf, func(r *wire.TxnRecord) bool { return r.ClientID == cs.id })
		if err == nil || c.ctx.Err() != nil {
			break
		}
		c.lg.Printf("client %d recovery: fetching the log: %v", cs.id, err)
		time.Sleep(time.Second)
	}
	for _, rec := range recs {
		for c.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			err := c.router.Flush(ctx, rec.TS, rec.Writes, client.FlushOptions{Replay: true})
			cancel()
			if err == nil {
				break
			}
			c.lg.Printf("client %d recovery: replaying ts %d: %v (retrying)", cs.id, rec.TS, err)
		}
	}
	if c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vis.flushedClient(cs.id)
	c.g.RemoveClient(cs.id)
	delete(c.clients, cs.id)
	c.recoveries = append(c.recoveries, wire.Recovery{Kind: "client", Name: cs.name, Detected: detected, Done: time.Now(), Replayed: len(recs), From: tf})
	c.lg.Printf("client %s (%d) recovered: replayed %d write-sets committed after T_F %d in %v",
		cs.name, cs.id, len(recs), tf, time.Since(detected).Round(time.Millisecond))
}

// ---- background loops ----

// detector declares clients and servers failed after missed heartbeats.
func (c *Coordinator) detector() {
	every := min(max(c.cfg.Cluster.Heartbeat/4, 5*time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		c.mu.Lock()
		for _, cs := range c.clients {
			if !cs.dead && now.Sub(cs.lastHeard) > c.cfg.Cluster.SessionTimeout {
				cs.dead = true
				tf, _ := c.g.ClientTF(cs.id)
				c.lg.Printf("client %s (%d) failed: no heartbeat for %v; replaying after T_F %d",
					cs.name, cs.id, now.Sub(cs.lastHeard).Round(time.Millisecond), tf)
				c.wg.Add(1)
				go func() { defer c.wg.Done(); c.clientFailed(cs, tf) }()
			}
		}
		for _, s := range c.servers {
			if s.live && now.Sub(s.lastHeard) > c.cfg.Cluster.SessionTimeout {
				c.serverFailedLocked(s, fmt.Sprintf("no heartbeat for %v", now.Sub(s.lastHeard).Round(time.Millisecond)))
			}
		}
		c.mu.Unlock()
	}
}

// housekeeping truncates the recovery log below T*_P.
func (c *Coordinator) housekeeping() {
	t := time.NewTicker(max(c.cfg.Cluster.Heartbeat, 200*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		if p, ok := c.g.TStarP(); ok {
			c.tstarP = max(c.tstarP, p)
		}
		tstarP := c.tstarP
		c.mu.Unlock()
		if tstarP == 0 {
			continue
		}
		if _, err := c.rlog.RemoveSealed(func(s seglog.Segment) bool { return s.MaxKey < tstarP }); err != nil {
			c.lg.Printf("truncating the recovery log: %v", err)
		}
	}
}
