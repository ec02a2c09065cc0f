// Package server is the txkv region server process: it hosts regions
// assigned by the coordinator's region master, keeps each in a
// multi-version in-memory store, appends every received write-set to its
// write-ahead log in the shared storage directory — synced asynchronously
// (the paper's mode) or before every acknowledgement (the comparison mode)
// — and flushes memstores to immutable region files. It tracks T_P(s) and
// sends it with its heartbeats (Algorithm 3), inherits T_P from write-sets
// the recovery client replays for a failed server, and, when it takes over
// a region, loads its files, replays the failed servers' WAL entries for
// it and then waits in the region-open hook for the recovery manager's
// transactional replay before serving it.
//
// A server only serves while it holds a lease: the send time of its last
// acknowledged heartbeat plus the session timeout, which ends before the
// recovery manager can declare it failed. A server told it was declared
// failed stops.
package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/rpc"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/seglog"
	"github.com/faultbench/faultbench/internal/txkv/store"
	"github.com/faultbench/faultbench/internal/txkv/track"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Config configures a region server.
type Config struct {
	// Name is the server's name (s1, s2 ...); a restarted server keeps it.
	Name string
	// Listener is where the server serves (127.0.0.1:port).
	Listener net.Listener
	// Coordinator is the coordinator's address.
	Coordinator string
	// Storage is the shared storage directory.
	Storage string
	// WALSegmentBytes is the WAL segment size; default 16 MiB. When more
	// than two sealed segments exist, every memstore is flushed so that they
	// can be removed (this bounds what a recovery replays).
	WALSegmentBytes int64
	// NoSync skips fsync (unit tests only).
	NoSync bool
	// Logger receives operational messages; nil logs to stderr.
	Logger *log.Logger
	// StorageFault injects I/O errors (tests only): into the WAL
	// (seglog.Options.Fault) and, called with written false, before every
	// region file is made visible.
	StorageFault func(written bool) error
}

// Validate checks c.
func (c *Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("server: a name is required")
	case c.Listener == nil:
		return errors.New("server: a listener is required")
	case c.Coordinator == "":
		return errors.New("server: the coordinator address is required")
	case c.Storage == "":
		return errors.New("server: the storage directory is required")
	}
	return nil
}

// Region states on a server.
const (
	stOpening    = "opening"    // loading files and the failed servers' WAL entries
	stRecovering = "recovering" // in the region-open hook: only replayed writes
	stOnline     = "online"
	stClosing    = "closing"
)

type hosted struct {
	st         *store.Region
	state      string
	flushedSeq uint64 // WAL sequence number covered by region files
	flushing   atomic.Bool
}

// ErrDeclaredFailed is returned by Run when the recovery manager declared
// this server failed (it must not serve any more).
var ErrDeclaredFailed = errors.New("declared failed by the recovery manager")

// ErrCrashed is returned by Run after Crash.
var ErrCrashed = errors.New("crashed on request")

// Server is a running region server.
type Server struct {
	cfg   Config
	lg    *log.Logger
	coord *wire.Conn
	rpc   *rpc.Server

	id      uint64
	cluster wire.Config
	walDir  string
	wal     *seglog.Log
	tr      *track.Server

	ready atomic.Bool  // registered, WAL open: the fields above are set
	lease atomic.Int64 // unix nanoseconds until which the server may serve
	// lowWater is the coordinator's version garbage-collection mark
	lowWater atomic.Uint64
	hbMu     sync.Mutex
	hbKick   chan struct{}
	fatal    chan error
	crash    chan struct{}
	// mute silences the server at a Crash: no reply leaves it afterwards
	mute wire.Mute

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	regions map[wire.RegionID]*hosted

	splitMu sync.Mutex
	splits  map[string]*walSplit
}

// walSplit is a failed server's WAL split by region, read once and shared
// by the regions this server opens from it (HBase's log splitting).
type walSplit struct {
	once sync.Once
	recs map[wire.RegionID][][]byte
	n    int
	err  error
	refs int
}

// New returns a server; Run registers it and serves.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.WALSegmentBytes == 0 {
		cfg.WALSegmentBytes = 16 << 20
	}
	lg := cfg.Logger
	if lg == nil {
		lg = log.New(os.Stderr, "txkv-server "+cfg.Name+": ", log.LstdFlags|log.Lmicroseconds)
	}
	s := &Server{cfg: cfg, lg: lg, coord: wire.NewConn(cfg.Coordinator), regions: map[wire.RegionID]*hosted{}, splits: map[string]*walSplit{},
		hbKick: make(chan struct{}, 1), fatal: make(chan error, 1), crash: make(chan struct{})}
	s.rpc = rpc.NewServer()
	if err := s.rpc.RegisterName("Server", &serverRPC{s}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// Crash makes Run stop as a crash would, for tests of recovery without
// processes: it stops serving and heartbeating at once, drops the WAL
// records not yet synced and does not unregister. Run returns ErrCrashed.
func (s *Server) Crash() {
	s.mute.Set()
	close(s.crash)
}

// CrashPending crashes the server as Crash does, but only if its WAL holds
// at least atLeast (>= 1) records it has not persisted yet, and atomically
// with its heartbeat's WAL sync, so that the crash certainly loses them
// (tests of the transactional replay). It returns how many records the
// crash dropped; 0 means it did not crash.
func (s *Server) CrashPending(atLeast int) int {
	return s.whilePending(atLeast, func() {
		s.mute.Set()
		s.wal.Abandon()
		close(s.crash)
	})
}

// StopPending starts a clean stop (as cancelling Run's context does), but
// only if the WAL holds at least atLeast (>= 1) records not persisted yet,
// and atomically with the heartbeat's WAL sync; before runs first (tests
// inject the storage fault there). It reports whether it stopped.
func (s *Server) StopPending(atLeast int, before func()) bool {
	return s.whilePending(atLeast, func() {
		before()
		s.cancel()
	}) > 0
}

// whilePending runs f, under the heartbeat's lock, if the WAL holds at
// least atLeast records not persisted, and returns how many; else 0.
func (s *Server) whilePending(atLeast int, f func()) int {
	s.hbMu.Lock()
	defer s.hbMu.Unlock()
	if !s.ready.Load() || s.tr.Pending() == 0 {
		return 0
	}
	n := int(s.wal.Appended() - s.wal.Synced())
	if n < max(atLeast, 1) {
		return 0
	}
	f()
	return n
}

// Addr returns the address the server serves on.
func (s *Server) Addr() string { return s.cfg.Listener.Addr().String() }

// Run registers with the coordinator and serves until ctx ends (then it
// shuts down cleanly: flushes its regions, heartbeats and unregisters) or
// the recovery manager declares it failed (ErrDeclaredFailed).
func (s *Server) Run(ctx context.Context) error {
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer s.cancel()
	serveDone := make(chan struct{})
	go func() { wire.Serve(s.cfg.Listener, s.rpc, &s.mute); close(serveDone) }()
	defer func() { s.cfg.Listener.Close(); <-serveDone }()

	if err := s.register(); err != nil {
		return err
	}
	syncEvery := time.Duration(0)
	if s.cluster.Persistence == wire.Async {
		syncEvery = s.cluster.WALSyncInterval
	}
	var err error
	s.wal, err = seglog.Open(seglog.Options{Dir: s.walDir, SegmentBytes: s.cfg.WALSegmentBytes, SyncInterval: syncEvery, NoSync: s.cfg.NoSync, Fault: s.cfg.StorageFault})
	if err != nil {
		return fmt.Errorf("server %s: WAL: %w", s.cfg.Name, err)
	}
	s.ready.Store(true)
	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.heartbeats() }()
	go func() { defer s.wg.Done(); s.flusher() }()
	go func() { defer s.wg.Done(); s.compactor() }()

	var runErr error
	select {
	case <-s.ctx.Done():
		runErr = s.shutdown()
	case runErr = <-s.fatal:
		s.lg.Printf("stopping: %v", runErr)
	case <-s.crash:
		// drop the WAL buffer first, as a crash does: a heartbeat under
		// way must not sync it while the goroutines wind down
		s.lease.Store(0)
		s.wal.Abandon()
		s.cfg.Listener.Close()
		<-serveDone
		s.cancel()
		s.wg.Wait()
		s.coord.Close()
		return ErrCrashed
	}
	s.cancel()
	s.wg.Wait()
	if err := s.wal.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("server %s: closing the WAL: %w", s.cfg.Name, err)
	}
	s.coord.Close()
	return runErr
}

func (s *Server) register() error {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		start := time.Now()
		var rep wire.RegisterServerReply
		err := s.coord.Call(ctx, "Coord.RegisterServer", &wire.RegisterServerArgs{Name: s.cfg.Name, Addr: s.Addr()}, &rep)
		cancel()
		if err == nil {
			err = rep.Err()
		}
		if err == nil {
			s.id, s.cluster, s.walDir = rep.ServerID, rep.Config, rep.WALDir
			s.tr = track.NewServer(rep.TP)
			s.lease.Store(start.Add(s.cluster.SessionTimeout).UnixNano())
			s.lg.Printf("registered as %d at %s: persistence %s, heartbeat %v, WAL %s", s.id, s.Addr(), s.cluster.Persistence, s.cluster.Heartbeat, s.walDir)
			return nil
		}
		if s.ctx.Err() != nil {
			return fmt.Errorf("server %s: registering with %s: %w", s.cfg.Name, s.cfg.Coordinator, err)
		}
		if attempt%20 == 0 {
			s.lg.Printf("registering with %s: %v (retrying)", s.cfg.Coordinator, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leased reports whether the server may serve now.
func (s *Server) leased() bool {
	return s.ready.Load() && time.Now().UnixNano() < s.lease.Load()
}

// fence guards every write of the server to the shared storage (region
// files, WAL truncation): a server whose lease ended may have been
// declared failed, its regions may be opening elsewhere, and a paused
// server that resumes (a zombie) must not touch what they read. The
// check cannot be atomic with the write it guards; what makes a late
// write harmless is the order in which a new host reads (WAL first, then
// region files, see loadRegion) and the coordinator moving a failed
// server's WAL directory aside before anyone reads it.
func (s *Server) fence() error {
	if !s.leased() {
		return store.ErrFenced
	}
	if f := s.cfg.StorageFault; f != nil {
		return f(false)
	}
	return nil
}

// heartbeats runs Algorithm 3's heartbeat every interval or when kicked.
func (s *Server) heartbeats() {
	t := time.NewTicker(s.cluster.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.hbKick:
		}
		if err := s.heartbeat(s.ctx); err != nil {
			select {
			case s.fatal <- err:
			default:
			}
			return
		}
	}
}

// heartbeat persists the PQ, advances T_P and reports it. It returns an
// error only when the server was declared failed.
func (s *Server) heartbeat(ctx context.Context) error {
	s.hbMu.Lock()
	defer s.hbMu.Unlock()
	sent := time.Now()
	tp, err := s.tr.Heartbeat(func() error {
		sctx, cancel := context.WithTimeout(ctx, s.cluster.SessionTimeout)
		defer cancel()
		return s.wal.Sync(sctx)
	})
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			// the WAL failed: nothing received from now on can be
			// persisted; stop (fail-stop) without unregistering, so that
			// the recovery manager replays what this server received
			return fmt.Errorf("server %s: the WAL failed: %w", s.cfg.Name, err)
		}
		s.lg.Printf("heartbeat: persisting the WAL: %v", err)
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, max(s.cluster.Heartbeat, 500*time.Millisecond))
	defer cancel()
	var rep wire.HeartbeatReply
	err = s.coord.Call(hctx, "Coord.ServerHeartbeat", &wire.ServerHeartbeatArgs{ServerID: s.id, TP: tp, Pending: s.tr.Pending()}, &rep)
	if err != nil {
		return nil // no lease renewal
	}
	switch rep.Code {
	case wire.OK:
		s.lease.Store(sent.Add(s.cluster.SessionTimeout * 19 / 20).UnixNano())
		s.tr.SetTStarF(rep.TStarF)
		if rep.LowWater > s.lowWater.Load() {
			s.lowWater.Store(rep.LowWater)
		}
	case wire.Dead, wire.Unknown:
		s.lease.Store(0)
		return fmt.Errorf("server %s (%d): %w: %s", s.cfg.Name, s.id, ErrDeclaredFailed, rep.Msg)
	}
	return nil
}

func (s *Server) kickHeartbeat() {
	select {
	case s.hbKick <- struct{}{}:
	default:
	}
}

// shutdown is the clean shutdown: stop serving, persist, flush,
// unregister. An unregistered server's regions move without a
// transactional replay, so it unregisters only once its WAL is synced:
// if the sync fails it returns the error without unregistering, and the
// recovery manager declares it failed and replays what it received after
// T_P(s).
func (s *Server) shutdown() error {
	s.mu.Lock()
	for _, h := range s.regions {
		h.state = stClosing
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.wal.Sync(ctx); err != nil {
		s.lg.Printf("shutdown: syncing the WAL: %v; not unregistering (the recovery manager replays what was not persisted)", err)
		return fmt.Errorf("server %s: shutdown: syncing the WAL: %w", s.cfg.Name, err)
	}
	if s.fence() == nil {
		s.flushAll(true)
	}
	_ = s.heartbeat(ctx)
	var rep wire.StatusReply
	if err := s.coord.Call(ctx, "Coord.UnregisterServer", &wire.ServerArgs{ServerID: s.id}, &rep); err != nil {
		s.lg.Printf("unregister: %v", err)
	} else {
		s.lg.Printf("unregistered")
	}
	return nil
}

// flusher flushes memstores that grew past the limit, or all of them when
// sealed WAL segments pile up, and removes WAL segments every region has
// flushed past.
func (s *Server) flusher() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var pruned uint64
	var prunedAt time.Time
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if lw := s.lowWater.Load(); lw > pruned && time.Since(prunedAt) >= max(5*s.cluster.Heartbeat, time.Second) {
			s.prune(lw)
			pruned, prunedAt = lw, time.Now()
		}
		if s.fence() != nil {
			continue // no lease: write nothing to the shared storage
		}
		sealed := 0
		for _, seg := range s.wal.Segments() {
			if seg.Sealed {
				sealed++
			}
		}
		s.flushAll(sealed > 2)
		s.truncateWAL()
	}
}

// compactFiles is how many region files a region has before the
// compactor merges them.
const compactFiles = 4

// compactor merges the region files of online regions that have
// compactFiles or more into one, dropping versions below the
// coordinator's low-water mark (store.Compact: crash-safe, fenced by the
// lease), so that region files, and the time a region takes to open after
// a failure, stay bounded by the live data instead of growing with the
// run's length. It runs beside the flusher, so a long compaction does not
// hold memstore flushes back.
func (s *Server) compactor() {
	t := time.NewTicker(max(5*s.cluster.Heartbeat, time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		lw := s.lowWater.Load()
		if lw == 0 || s.fence() != nil {
			continue
		}
		s.mu.RLock()
		var todo []*hosted
		for _, h := range s.regions {
			if h.state == stOnline && h.st.Files() >= compactFiles {
				todo = append(todo, h)
			}
		}
		s.mu.RUnlock()
		for _, h := range todo {
			if s.ctx.Err() != nil {
				return
			}
			info := h.st.Info()
			start := time.Now()
			c, err := store.Compact(info, store.Dir(s.cfg.Storage, info.ID), s.cfg.Name, lw, s.fence)
			if c.Path != "" {
				h.st.Compacted(c) // the merged file is in place, also when a removal failed
			}
			switch {
			case errors.Is(err, store.ErrFenced):
			case err != nil:
				s.lg.Printf("compacting region %d: %v", info.ID, err)
			case c.Files > 0:
				s.lg.Printf("region %d: compacted %d files (%d bytes) into %d bytes below %d in %v",
					info.ID, c.Files, c.InBytes, c.OutBytes, lw, time.Since(start).Round(time.Millisecond))
			}
		}
	}
}

// prune drops the versions of online regions that no snapshot at or
// above the low-water mark lw can see (version garbage collection; the
// region files keep them until they are rewritten).
func (s *Server) prune(lw uint64) {
	s.mu.RLock()
	var todo []*store.Region
	for _, h := range s.regions {
		if h.state == stOnline {
			todo = append(todo, h.st)
		}
	}
	s.mu.RUnlock()
	for _, r := range todo {
		r.Prune(lw)
	}
}

// flushAll flushes the memstores of online regions that are over the
// limit (all when force).
func (s *Server) flushAll(force bool) {
	s.mu.RLock()
	var todo []*hosted
	for _, h := range s.regions {
		if h.state == stOnline || h.state == stClosing {
			if force || h.st.MemBytes() >= s.cluster.MemstoreFlushBytes {
				todo = append(todo, h)
			}
		}
	}
	s.mu.RUnlock()
	for _, h := range todo {
		s.flushRegion(h)
	}
}

func (s *Server) flushRegion(h *hosted) {
	if !h.flushing.CompareAndSwap(false, true) {
		return
	}
	defer h.flushing.Store(false)
	// swap under the write lock so that every WAL record up to seq has
	// reached the swapped memstore
	s.mu.Lock()
	seq := s.wal.Appended()
	m := h.st.SwapMem()
	s.mu.Unlock()
	if _, err := h.st.WriteMem(store.Dir(s.cfg.Storage, h.st.Info().ID), s.cfg.Name, m, s.fence); err != nil {
		if !errors.Is(err, store.ErrFenced) {
			s.lg.Printf("flushing region %d: %v", h.st.Info().ID, err)
		}
		return
	}
	s.mu.Lock()
	h.flushedSeq = max(h.flushedSeq, seq)
	s.mu.Unlock()
}

// truncateWAL removes sealed WAL segments whose records every hosted
// region has flushed to region files.
func (s *Server) truncateWAL() {
	s.mu.RLock()
	low := ^uint64(0)
	for _, h := range s.regions {
		low = min(low, h.flushedSeq)
	}
	s.mu.RUnlock()
	if s.fence() != nil {
		return
	}
	if _, err := s.wal.RemoveSealed(func(seg seglog.Segment) bool { return seg.LastSeq <= low }); err != nil {
		s.lg.Printf("truncating the WAL: %v", err)
	}
}

// ---- WAL records: ts, region, writes ----

func walRecord(ts uint64, region wire.RegionID, ws []wire.Write) []byte {
	e := wire.Encoder{}
	e.U64(ts)
	e.Uvarint(uint64(region))
	e.Writes(ws)
	return e.B
}

func decodeWAL(b []byte) (uint64, wire.RegionID, []wire.Write, error) {
	d := wire.Decoder{B: b}
	ts := d.U64()
	r := wire.RegionID(d.Uvarint())
	ws := d.Writes()
	return ts, r, ws, d.Err
}

// ---- region opening ----

func (s *Server) openRegion(h *hosted, args *wire.OpenRegionArgs) {
	id := args.Region.ID
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if s.ctx.Err() != nil {
			return
		}
		err := s.loadRegion(h, args)
		if err == nil {
			break
		}
		s.lg.Printf("opening region %d: %v (retrying)", id, err)
		time.Sleep(time.Second)
		s.mu.Lock()
		h.st = store.New(args.Region)
		s.mu.Unlock()
	}
	loaded := time.Since(start)
	s.mu.Lock()
	h.state = stRecovering
	s.mu.Unlock()
	// the region-open hook: wait for the transactional recovery
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Minute)
		var rep wire.StatusReply
		err := s.coord.Call(ctx, "Coord.RecoverRegion", &wire.RecoverRegionArgs{ServerID: s.id, Region: id}, &rep)
		cancel()
		if err == nil && rep.Code == wire.OK {
			break
		}
		if err == nil && (rep.Code == wire.NotServing || rep.Code == wire.Dead || rep.Code == wire.Unknown) {
			s.lg.Printf("region %d: the recovery manager refused it (%v); dropping it", id, rep.Err())
			s.mu.Lock()
			if s.regions[id] == h {
				delete(s.regions, id)
			}
			s.mu.Unlock()
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		if err == nil {
			err = rep.Err()
		}
		s.lg.Printf("region %d: recovery hook: %v (retrying)", id, err)
		time.Sleep(min(100*time.Millisecond<<min(attempt, 4), 2*time.Second))
	}
	s.mu.Lock()
	h.state = stOnline
	s.mu.Unlock()
	s.lg.Printf("region %v online after %v (files and WAL %v, %d rows)", args.Region, time.Since(start).Round(time.Millisecond), loaded.Round(time.Millisecond), h.st.Rows())
}

// loadRegion replays the failed servers' WAL entries for the region,
// loads its files and flushes the WAL entries to a region file.
//
// The WAL is read before the region files: a server removes a WAL segment
// only after the records in it reached a region file, so a segment
// missing from the WAL read (a zombie's flusher removed it meanwhile) has
// its records in a region file written before the removal, which the
// later LoadDir sees. Read the other way round, a zombie could write that
// region file after LoadDir and remove the segment before the WAL read,
// and its records would be in neither.
func (s *Server) loadRegion(h *hosted, args *wire.OpenRegionArgs) error {
	id := args.Region.ID
	dir := store.Dir(s.cfg.Storage, id)
	n := 0
	for _, wd := range args.RecoverWALs {
		recs, err := s.splitWAL(wd, id)
		if err != nil {
			return fmt.Errorf("replaying WAL %s: %w", wd, err)
		}
		for _, rec := range recs {
			ts, _, ws, err := decodeWAL(rec)
			if err != nil {
				continue
			}
			for i := range ws {
				h.st.Apply(ts, &ws[i])
			}
			n++
		}
	}
	if _, err := h.st.LoadDir(dir); err != nil {
		return err
	}
	if n > 0 {
		if _, err := h.st.Flush(dir, s.cfg.Name, s.fence); err != nil {
			return err
		}
		s.lg.Printf("region %d: replayed %d WAL records from %d failed servers", id, n, len(args.RecoverWALs))
	}
	return nil
}

// splitWAL returns the records of region id in the WAL directory dir. The
// WAL is read once for all regions opened from it at about the same time.
func (s *Server) splitWAL(dir string, id wire.RegionID) ([][]byte, error) {
	s.splitMu.Lock()
	sp := s.splits[dir]
	if sp == nil {
		sp = &walSplit{}
		s.splits[dir] = sp
	}
	sp.refs++
	s.splitMu.Unlock()
	defer func() {
		s.splitMu.Lock()
		if sp.refs--; sp.refs == 0 && s.splits[dir] == sp {
			delete(s.splits, dir)
		}
		s.splitMu.Unlock()
	}()
	sp.once.Do(func() {
		start := time.Now()
		sp.recs = map[wire.RegionID][][]byte{}
		sp.err = seglog.ReadDir(dir, func(rec []byte) error {
			d := wire.Decoder{B: rec}
			d.U64()
			r := wire.RegionID(d.Uvarint())
			if d.Err == nil {
				sp.recs[r] = append(sp.recs[r], append([]byte(nil), rec...))
				sp.n++
			}
			return nil
		})
		s.lg.Printf("split WAL %s: %d records in %v", dir, sp.n, time.Since(start).Round(time.Millisecond))
	})
	return sp.recs[id], sp.err
}

// ---- RPC handlers ----

type serverRPC struct{ s *Server }

// OpenRegion starts opening a region the master assigned (asynchronously).
func (h *serverRPC) OpenRegion(a *wire.OpenRegionArgs, r *wire.StatusReply) error {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ready.Load() {
		r.Status = wire.Errorf(wire.Unavailable, "server %s is starting", s.cfg.Name)
		return nil
	}
	if old := s.regions[a.Region.ID]; old != nil && old.state != stClosing {
		return nil // opening or open already
	}
	hr := &hosted{st: store.New(a.Region), state: stOpening, flushedSeq: s.wal.Appended()}
	s.regions[a.Region.ID] = hr
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.openRegion(hr, a) }()
	return nil
}

// Apply applies (parts of) a committed write-set: WAL, memstore, PQ (Algorithm 3, lines 15-22).
func (h *serverRPC) Apply(a *wire.ApplyArgs, r *wire.ApplyReply) error {
	s := h.s
	if !s.leased() {
		r.Status = wire.Errorf(wire.NotServing, "server %s has no lease", s.cfg.Name)
		return nil
	}
	r.Codes = make([]wire.Code, len(a.Parts))
	var last uint64
	applied := false
	s.mu.RLock()
	for i, p := range a.Parts {
		hr := s.regions[p.Region]
		switch {
		case hr == nil:
			r.Codes[i] = wire.NotServing
			continue
		case hr.state == stOnline, hr.state == stRecovering && a.Replay:
		default:
			r.Codes[i] = wire.NotServing
			continue
		}
		info := hr.st.Info()
		ok := true
		for _, w := range p.Writes {
			if !info.Contains(w.Key) {
				ok = false
			}
		}
		if !ok {
			r.Codes[i] = wire.BadRequest
			continue
		}
		seq, err := s.wal.Append(walRecord(a.CommitTS, p.Region, p.Writes), a.CommitTS)
		if err != nil {
			r.Codes[i] = wire.Internal
			continue
		}
		last = seq
		for j := range p.Writes {
			hr.st.Apply(a.CommitTS, &p.Writes[j])
		}
		applied = true
	}
	s.mu.RUnlock()
	if !applied {
		return nil
	}
	s.tr.Received(a.CommitTS)
	if s.cluster.Persistence == wire.Sync || a.Replay {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := s.wal.WaitSynced(ctx, last)
		cancel()
		if err != nil {
			r.Status = wire.Errorf(wire.Internal, "syncing the WAL: %v", err)
			return nil
		}
	}
	if a.Replay && a.InheritTP > 0 && s.tr.Inherit(a.InheritTP) {
		s.kickHeartbeat()
	}
	return nil
}

// region returns the online region id; mu not held.
func (s *Server) onlineRegion(id wire.RegionID, key string) (*store.Region, wire.Status) {
	if !s.leased() {
		return nil, wire.Errorf(wire.NotServing, "server %s has no lease", s.cfg.Name)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	hr := s.regions[id]
	if hr == nil || hr.state != stOnline {
		return nil, wire.Errorf(wire.NotServing, "region %d is not online on %s", id, s.cfg.Name)
	}
	if !hr.st.Info().Contains(key) {
		return nil, wire.Errorf(wire.NotServing, "key %q is not in region %v", key, hr.st.Info())
	}
	return hr.st, wire.Status{}
}

// Read reads one row at a snapshot.
func (h *serverRPC) Read(a *wire.ReadArgs, r *wire.ReadReply) error {
	st, status := h.s.onlineRegion(a.Region, a.Key)
	if st == nil {
		r.Status = status
		return nil
	}
	r.Fields, r.Found = st.Read(a.Table, a.Key, a.Fields, a.TS)
	return nil
}

// Scan reads rows of one region at a snapshot.
func (h *serverRPC) Scan(a *wire.ScanArgs, r *wire.ScanReply) error {
	st, status := h.s.onlineRegion(a.Region, a.Key)
	if st == nil {
		r.Status = status
		return nil
	}
	r.Rows = st.Scan(a.Table, a.Key, a.Count, a.Fields, a.TS)
	return nil
}

// Info describes the server and its regions.
func (h *serverRPC) Info(_ *wire.ServerArgs, r *wire.ServerInfoReply) error {
	s := h.s
	r.Name = s.cfg.Name
	if !s.ready.Load() {
		return nil
	}
	r.ID, r.TP, r.Pending = s.id, s.tr.TP(), s.tr.Pending()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id, hr := range s.regions {
		r.Regions = append(r.Regions, wire.RegionState{ID: id, State: hr.state, Rows: hr.st.Rows(), Files: hr.st.Files()})
	}
	sort.Slice(r.Regions, func(i, j int) bool { return r.Regions[i].ID < r.Regions[j].ID })
	return nil
}
