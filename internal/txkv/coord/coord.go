// Package coord is the txkv coordinator process: the transaction manager
// (a timestamp oracle, snapshot isolation with first-committer-wins on
// write-write conflicts, a recovery log in append-only segment files with
// group commit and fsync before a commit is acknowledged, truncated below
// T*_P), the recovery manager of Ahmad et al. (registration and heartbeats of
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
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
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
	// TestOnly switches recovery paths off. Tests only, never set by the
	// launcher: each negative control of the lost-commit tests turns one
	// off and requires the check to fail.
	TestOnly TestSwitches
}

// TestSwitches disable the coordinator's replay paths (test-only). A
// disabled path still does its bookkeeping (the recovery is recorded,
// replayed write-sets are counted), so only a check that reads the data
// can notice.
type TestSwitches struct {
	// NoClientReplay: a failed client's write-sets committed after T_F(c)
	// are fetched but not replayed.
	NoClientReplay bool
	// NoServerReplay: the region-open hook (recoverRegion) fetches the
	// write-sets committed after T_P(s) but does not flush them.
	NoServerReplay bool
	// NoRestartReplay: a restarted coordinator does not replay its log
	// before it serves transactions again.
	NoRestartReplay bool
	// LogFault injects I/O errors into the recovery log (seglog.Options.Fault).
	LogFault func(written bool) error
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
	failed  bool // the recovery log or the oracle failed: not logged, the coordinator stops
}

type clientState struct {
	id        uint64
	name      string
	lastHeard time.Time
	dead      bool
	outcomes  map[uint64]outcome
	oldest    uint64 // a lower bound of its snapshots (version garbage collection)
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
	vis        track.Visibility
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
	// mute is set before crashed: a handler that saw crashed (and so
	// persisted nothing) sends no reply, as after a kill -9
	mute      wire.Mute
	crash     chan struct{}
	crashOnce sync.Once
	failErr   error // why the coordinator stopped (fail-stop), nil after Crash

	// gone keeps the commit outcomes of clients removed after their
	// failure, so that a commit retried after the removal learns what was
	// decided (oldest first, at most goneClients)
	gone      map[uint64]map[uint64]outcome
	goneOrder []uint64

	// version garbage collection (gc.go)
	lowWater uint64 // the mark published to servers
	prunedTo uint64 // lastCommit holds no entry at or below it
}

// goneClients bounds how many removed clients' outcomes are kept.
const goneClients = 4096

// ErrStorage is wrapped by the error Run returns when the coordinator
// stopped because its stable storage failed (fail-stop).
var ErrStorage = errors.New("stable storage failed")

// failStopLocked stops the coordinator after an I/O error of its stable
// storage (recovery log, timestamp reservation, metadata): it writes
// nothing more, stops serving, and Run returns the error (the process
// exits non-zero; a restart recovers from what is durable). Continuing
// would answer commits whose durability is unknown. mu held.
func (c *Coordinator) failStopLocked(err error) {
	c.mute.Set()
	if c.failErr == nil && !c.crashed {
		c.failErr = fmt.Errorf("coordinator: %w: %w", ErrStorage, err)
		c.lg.Printf("stopping (fail-stop): %v", err)
	}
	c.crashed = true
	c.crashOnce.Do(func() { close(c.crash) })
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
	rl, err := seglog.Open(seglog.Options{Dir: filepath.Join(cfg.Dir, "log"), SegmentBytes: cfg.LogSegmentBytes, NoSync: cfg.NoSync, Fault: cfg.TestOnly.LogFault})
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
		gone:       map[uint64]map[uint64]outcome{},
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
	go func() { wire.Serve(c.cfg.Listener, c.rpc, &c.mute); close(serveDone) }()
	select {
	case <-c.ctx.Done():
	case <-c.crash:
		c.cfg.Listener.Close()
		<-serveDone
		c.cancel()
		c.rlog.Abandon()
		c.wg.Wait()
		c.router.Close()
		c.mu.Lock()
		err := c.failErr
		c.mu.Unlock()
		if err != nil {
			return err
		}
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
