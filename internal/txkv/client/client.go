// Package client is the txkv client library (the paper's extended HBase
// client): transactions with begin, read, write, commit and abort;
// deferred updates buffered at the client until commit; commit at the
// coordinator's transaction manager, which logs the write-set; then the
// flush of the write-set to the regions' servers with the commit
// timestamp as version (idempotent, retried until every server applied
// it). It tracks T_F(c) with the FQ and FQ' queues (Algorithm 1), sends
// heartbeats with it, reports flushed write-sets to the coordinator (which
// bases snapshot visibility on them), and unregisters cleanly on Close.
//
// In async persistence (the paper's mode) Commit returns once the
// coordinator has logged the write-set and the flush continues in the
// background; in sync persistence Commit returns once every server has
// applied and persisted it. A client the recovery manager declared failed
// registers again under a new id; the recovery manager replays what the
// failed incarnation committed and had not flushed. A restarted
// coordinator does not know the client any more: it registers again too,
// a commit whose answer was lost is asked again under the old id (the
// coordinator answers from its log), and Begin and Commit wait (within
// their contexts) while the coordinator is down or replays its log.
package client

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/track"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Errors returned by transactions.
var (
	// ErrAborted: the transaction lost a write-write conflict; it did not commit.
	ErrAborted = errors.New("transaction aborted: write-write conflict")
	// ErrNotCommitted: the coordinator refused the commit and it never
	// will commit: the client had been declared failed before the
	// transaction was decided (a commit decided before that is answered
	// with its outcome, also after the client was removed).
	ErrNotCommitted = errors.New("transaction not committed: the client was declared failed")
	// ErrUnknownOutcome: the commit's outcome is not known: the caller's
	// context ended before the coordinator answered (the client keeps
	// asking and flushes the write-set if it committed), or the
	// coordinator does not know the client's registration any more (after
	// a restart, a transaction that is not in its log).
	ErrUnknownOutcome = errors.New("commit outcome unknown")
	// ErrClosed: the client is closed.
	ErrClosed = errors.New("client closed")
	// ErrDone: the transaction was committed or aborted already.
	ErrDone = errors.New("transaction already ended")
)

// Config configures a client.
type Config struct {
	// Coordinator is the coordinator's address.
	Coordinator string
	// Name identifies the client in the coordinator's logs.
	Name string
	// MaxPendingFlushes bounds the write-sets being flushed in the
	// background (async persistence); Commit waits for a slot. Default 4096.
	MaxPendingFlushes int
	// Logger receives operational messages; nil discards them.
	Logger *log.Logger
	// SkipFlush is a test hook that simulates a client crash after commit
	// and before the flush: committed write-sets are never flushed.
	SkipFlush bool
	// FlushFilter is a test-only hook that simulates a client crashing in
	// the middle of its flushes: when set, only the writes for which it
	// returns true are flushed, and a write-set with a write filtered out
	// is never reported flushed (T_F stops below it; write-sets flushed in
	// full after it still count in FQ'). Nil flushes everything.
	FlushFilter func(ts uint64, w wire.Write) bool
}

// Validate checks c.
func (c *Config) Validate() error {
	if c.Coordinator == "" {
		return errors.New("txkv client: the coordinator address is required")
	}
	if c.MaxPendingFlushes < 0 {
		return errors.New("txkv client: MaxPendingFlushes must not be negative")
	}
	return nil
}

// incarnation is one registration of the client.
type incarnation struct {
	id      uint64
	tr      *track.Client
	dead    atomic.Bool
	mu      sync.Mutex
	open    map[uint64]bool // txn ids whose commit outcome is not known yet
	nextTxn uint64
}

func (in *incarnation) startTxn() (id, resolvedBelow uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.nextTxn++
	id = in.nextTxn
	in.open[id] = true
	resolvedBelow = id
	for o := range in.open {
		resolvedBelow = min(resolvedBelow, o)
	}
	return id, resolvedBelow
}

func (in *incarnation) endTxn(id uint64) {
	in.mu.Lock()
	delete(in.open, id)
	in.mu.Unlock()
}

// Client is a txkv client. Safe for concurrent use by many goroutines.
type Client struct {
	cfg    Config
	lg     *log.Logger
	coord  *wire.Conn
	router *Router

	cluster wire.Config
	inc     atomic.Pointer[incarnation]
	regMu   sync.Mutex

	flushSem chan struct{}
	flushWG  sync.WaitGroup
	// flushMu orders flushWG.Add (read-locked, in Commit) before Close's
	// flushWG.Wait: Close write-locks it to set closed, so no commit adds
	// to the group once Close may be waiting on it.
	flushMu sync.RWMutex
	notify  chan flushed

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	commits, aborts, flushes atomic.Int64

	// snapshots of open transactions and the newest snapshot learnt of:
	// what the client reports for version garbage collection
	snapMu   sync.Mutex
	open     map[uint64]int // start timestamp -> open transactions
	floor    uint64
	inflight map[*uint64]uint64 // Begin calls under way -> the floor when they were sent
}

// beginSent records a Begin under way: until its answer is in, its
// snapshot is only known to be at or above the present floor (its reply
// may arrive after a heartbeat reply that raised the floor).
func (c *Client) beginSent() *uint64 {
	tok := new(uint64)
	c.snapMu.Lock()
	c.inflight[tok] = c.floor
	c.snapMu.Unlock()
	return tok
}

// beginDone ends a Begin under way; with ok it opened a transaction at ts.
func (c *Client) beginDone(tok *uint64, ts uint64, ok bool) {
	c.snapMu.Lock()
	delete(c.inflight, tok)
	if ok {
		c.open[ts]++
		c.floor = max(c.floor, ts)
	}
	c.snapMu.Unlock()
}

// snapshotClosed records the end of a transaction reading at ts.
func (c *Client) snapshotClosed(ts uint64) {
	c.snapMu.Lock()
	if c.open[ts]--; c.open[ts] <= 0 {
		delete(c.open, ts)
	}
	c.snapMu.Unlock()
}

// learnVisible raises the floor: every later snapshot is at or above v.
func (c *Client) learnVisible(v uint64) {
	c.snapMu.Lock()
	c.floor = max(c.floor, v)
	c.snapMu.Unlock()
}

// oldest is a lower bound of every snapshot the client reads now or
// will read: the oldest open transaction's, else the floor (snapshots are
// handed out in non-decreasing order).
func (c *Client) oldest() uint64 {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	o := c.floor
	for ts := range c.open {
		o = min(o, ts)
	}
	for _, f := range c.inflight {
		o = min(o, f)
	}
	return o
}

type flushed struct {
	inc *incarnation
	ts  uint64
}

// Open registers a client with the coordinator and starts its heartbeats.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxPendingFlushes == 0 {
		cfg.MaxPendingFlushes = 4096
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s/%d", h, os.Getpid())
	}
	lg := cfg.Logger
	if lg == nil {
		lg = log.New(discard{}, "", 0)
	}
	c := &Client{cfg: cfg, lg: lg, coord: wire.NewConn(cfg.Coordinator),
		flushSem: make(chan struct{}, cfg.MaxPendingFlushes), notify: make(chan flushed, 4096), open: map[uint64]int{}, inflight: map[*uint64]uint64{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.router = NewRouter(coordLocator{c.coord}, wire.RegionMap{})
	if _, err := c.register(ctx, nil); err != nil {
		c.cancel()
		c.coord.Close()
		return nil, err
	}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.heartbeats() }()
	go func() { defer c.wg.Done(); c.notifier() }()
	return c, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

type coordLocator struct{ c *wire.Conn }

func (l coordLocator) Locate(ctx context.Context) (wire.RegionMap, error) {
	var rep wire.LocateReply
	if err := l.c.Call(ctx, "Coord.Locate", &wire.ClientArgs{}, &rep); err != nil {
		return wire.RegionMap{}, err
	}
	return rep.Map, rep.Err()
}

// register registers a new incarnation unless one other than old exists.
func (c *Client) register(ctx context.Context, old *incarnation) (*incarnation, error) {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if cur := c.inc.Load(); cur != nil && cur != old && !cur.dead.Load() {
		return cur, nil
	}
	var rep wire.RegisterClientReply
	if err := c.coord.Call(ctx, "Coord.RegisterClient", &wire.RegisterClientArgs{Name: c.cfg.Name, Oldest: c.oldest()}, &rep); err != nil {
		return nil, fmt.Errorf("txkv client: registering with %s: %w", c.cfg.Coordinator, err)
	}
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("txkv client: registering with %s: %w", c.cfg.Coordinator, err)
	}
	in := &incarnation{id: rep.ClientID, tr: track.NewClient(rep.TF, rep.Now), open: map[uint64]bool{}}
	c.learnVisible(rep.Visible)
	if c.cluster.Heartbeat == 0 {
		c.cluster = rep.Config // first registration, before any goroutine runs
	}
	if rep.Map.Version > c.router.Map().Version {
		c.router.mu.Lock()
		c.router.m = rep.Map
		c.router.mu.Unlock()
	}
	c.inc.Store(in)
	c.lg.Printf("registered as client %d (T_F %d)", in.id, rep.TF)
	return in, nil
}

// current returns the live incarnation, registering anew if it died.
func (c *Client) current(ctx context.Context) (*incarnation, error) {
	in := c.inc.Load()
	if in != nil && !in.dead.Load() {
		return in, nil
	}
	return c.register(ctx, in)
}

func (c *Client) declaredDead(in *incarnation) {
	if in.dead.CompareAndSwap(false, true) {
		c.lg.Printf("client %d was declared failed; registering again", in.id)
	}
}

// Config returns the cluster configuration the coordinator handed out.
func (c *Client) Config() wire.Config { return c.cluster }

// ID returns the current client id.
func (c *Client) ID() uint64 {
	if in := c.inc.Load(); in != nil {
		return in.id
	}
	return 0
}

// TF returns the current T_F(c).
func (c *Client) TF() uint64 {
	if in := c.inc.Load(); in != nil {
		return in.tr.TF()
	}
	return 0
}

// Stats returns commits, aborts and completed flushes so far.
func (c *Client) Stats() (commits, aborts, flushes int64) {
	return c.commits.Load(), c.aborts.Load(), c.flushes.Load()
}

// Router returns the client's router (region map and server connections).
func (c *Client) Router() *Router { return c.router }

// Coordinator returns the connection to the coordinator.
func (c *Client) Coordinator() *wire.Conn { return c.coord }

func (c *Client) heartbeats() {
	t := time.NewTicker(c.cluster.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.heartbeat(c.ctx)
	}
}

// heartbeat advances T_F and reports it (Algorithm 1, lines 9-17).
func (c *Client) heartbeat(ctx context.Context) {
	in := c.inc.Load()
	if in == nil || in.dead.Load() {
		if _, err := c.current(ctx); err != nil {
			c.lg.Printf("heartbeat: %v", err)
		}
		return
	}
	tf := in.tr.Heartbeat()
	hctx, cancel := context.WithTimeout(ctx, max(c.cluster.Heartbeat, 500*time.Millisecond))
	defer cancel()
	var rep wire.HeartbeatReply
	if err := c.coord.Call(hctx, "Coord.ClientHeartbeat", &wire.ClientHeartbeatArgs{ClientID: in.id, TF: tf, Oldest: c.oldest()}, &rep); err != nil {
		return
	}
	switch rep.Code {
	case wire.OK:
		in.tr.Observe(rep.Now)
		c.learnVisible(rep.Visible)
	case wire.Dead, wire.Unknown:
		c.declaredDead(in)
	}
}

// notifier reports flushed write-sets to the coordinator in batches.
func (c *Client) notifier() {
	for {
		var first flushed
		select {
		case first = <-c.notify:
		case <-c.ctx.Done():
			return
		}
		batch := map[*incarnation][]uint64{first.inc: {first.ts}}
	drain:
		for n := 1; n < 8192; n++ {
			select {
			case f := <-c.notify:
				batch[f.inc] = append(batch[f.inc], f.ts)
			default:
				break drain
			}
		}
		for in, tss := range batch {
			for attempt := 0; !in.dead.Load(); attempt++ {
				var rep wire.StatusReply
				ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
				err := c.coord.Call(ctx, "Coord.Flushed", &wire.FlushedArgs{ClientID: in.id, TS: tss}, &rep)
				cancel()
				if err == nil || c.ctx.Err() != nil {
					break
				}
				_ = sleep(c.ctx, backoff(attempt))
			}
		}
	}
}

// Close waits (until ctx ends) for pending flushes, sends a last heartbeat
// and unregisters. If flushes could not complete it does not unregister:
// the recovery manager then treats the client as failed and replays them.
func (c *Client) Close(ctx context.Context) error {
	c.flushMu.Lock()
	first := c.closed.CompareAndSwap(false, true)
	c.flushMu.Unlock()
	if !first {
		return nil
	}
	done := make(chan struct{})
	go func() { c.flushWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("txkv client: closing with flushes pending: %w", ctx.Err())
	}
	if err == nil {
		// let the notifier drain, then a last heartbeat and unregister
		for len(c.notify) > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		in := c.inc.Load()
		if in != nil && !in.dead.Load() {
			c.heartbeat(ctx)
			var rep wire.StatusReply
			if uerr := c.coord.Call(ctx, "Coord.UnregisterClient", &wire.ClientArgs{ClientID: in.id}, &rep); uerr != nil {
				err = fmt.Errorf("txkv client: unregister: %w", uerr)
			}
		}
	}
	c.cancel()
	c.wg.Wait()
	c.router.Close()
	c.coord.Close()
	return err
}

// Abandon stops the client without unregistering, as if it had crashed:
// heartbeats stop, pending flushes are abandoned. The recovery manager
// will declare it failed and replay its unflushed write-sets.
func (c *Client) Abandon() {
	c.closed.Store(true)
	c.cancel()
	c.wg.Wait()
	c.router.Close()
	c.coord.Close()
}

// ---- transactions ----

// Txn is one transaction. It is not safe for concurrent use. Until it is
// committed or aborted its snapshot holds back version garbage collection.
type Txn struct {
	c       *Client
	in      *incarnation
	startTS uint64
	writes  map[string]*wire.Write
	done    bool
}

// Begin starts a transaction reading the snapshot the coordinator hands out.
func (c *Client) Begin(ctx context.Context) (*Txn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	refused := 0
	for attempt := 0; ; attempt++ {
		in, err := c.current(ctx)
		if err != nil {
			// registering failed (the coordinator is down): wait for it
			if serr := sleep(ctx, backoff(attempt)+10*time.Millisecond); serr != nil {
				return nil, err
			}
			continue
		}
		var rep wire.BeginReply
		tok := c.beginSent()
		err = c.coord.Call(ctx, "Coord.Begin", &wire.ClientArgs{ClientID: in.id}, &rep)
		c.beginDone(tok, rep.StartTS, err == nil && rep.Code == wire.OK)
		switch {
		case err != nil, rep.Code == wire.Unavailable:
			// the coordinator is down or recovering after a restart: wait
			// for it as long as ctx allows
			if err == nil {
				err = rep.Err()
			}
			if serr := sleep(ctx, backoff(attempt)+10*time.Millisecond); serr != nil {
				return nil, fmt.Errorf("txkv begin: %w (last: %v)", serr, err)
			}
			continue
		case rep.Code == wire.OK:
			in.tr.Observe(rep.StartTS)
			return &Txn{c: c, in: in, startTS: rep.StartTS}, nil
		case rep.Code == wire.Dead, rep.Code == wire.Unknown:
			// declared failed, or unknown to a restarted coordinator
			c.declaredDead(in)
			if refused++; refused < 3 {
				continue
			}
		}
		return nil, fmt.Errorf("txkv begin: %w", rep.Err())
	}
}

// StartTS returns the transaction's snapshot timestamp.
func (t *Txn) StartTS() uint64 { return t.startTS }

func rowKey(table, key string) string { return table + "\x00" + key }

// Read returns the row's fields (all when fields is nil) as of the
// transaction's snapshot, with its own buffered writes applied; found is
// false if the row does not exist.
func (t *Txn) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, bool, error) {
	if t.done {
		return nil, false, ErrDone
	}
	w := t.writes[rowKey(table, key)]
	out := map[string][]byte{}
	found := false
	if w == nil || !w.Delete {
		fs, ok, err := t.c.read(ctx, table, key, fields, t.startTS)
		if err != nil {
			return nil, false, err
		}
		found = ok
		for _, f := range fs {
			out[f.Name] = f.Value
		}
	}
	if w != nil {
		for _, f := range w.Fields {
			if fields == nil || contains(fields, f.Name) {
				out[f.Name] = f.Value
			}
		}
		found = len(w.Fields) > 0 || (found && !w.Delete)
	}
	if !found {
		return nil, false, nil
	}
	return out, true, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Write buffers an update of the given fields (the values are copied).
func (t *Txn) Write(table, key string, values map[string][]byte) error {
	if t.done {
		return ErrDone
	}
	if t.writes == nil {
		t.writes = map[string]*wire.Write{}
	}
	rk := rowKey(table, key)
	w := t.writes[rk]
	if w == nil {
		w = &wire.Write{Table: table, Key: key}
		t.writes[rk] = w
	}
	for name, v := range values {
		val := append([]byte(nil), v...)
		replaced := false
		for i := range w.Fields {
			if w.Fields[i].Name == name {
				w.Fields[i].Value = val
				replaced = true
			}
		}
		if !replaced {
			w.Fields = append(w.Fields, wire.Field{Name: name, Value: val})
		}
	}
	SortFields(w.Fields)
	return nil
}

// Delete buffers the deletion of a row.
func (t *Txn) Delete(table, key string) error {
	if t.done {
		return ErrDone
	}
	if t.writes == nil {
		t.writes = map[string]*wire.Write{}
	}
	t.writes[rowKey(table, key)] = &wire.Write{Table: table, Key: key, Delete: true}
	return nil
}

// Abort discards the transaction.
func (t *Txn) Abort() {
	t.end()
	t.writes = nil
}

// end marks the transaction done and releases its snapshot (version
// garbage collection may pass it).
func (t *Txn) end() {
	if !t.done {
		t.done = true
		t.c.snapshotClosed(t.startTS)
	}
}

// Commit commits the transaction: read-only transactions end without a
// round trip; others are logged by the coordinator (ErrAborted if they
// lost a conflict) and their write-set is flushed to the servers — in the
// background in async persistence, before Commit returns in sync
// persistence. ErrUnknownOutcome means the coordinator's answer did not
// arrive before ctx ended; the client keeps asking and flushes the
// write-set if it committed.
func (t *Txn) Commit(ctx context.Context) (uint64, error) {
	if t.done {
		return 0, ErrDone
	}
	// the snapshot stays pinned until the commit is decided: the
	// transaction manager forgets last commit timestamps below the mark
	t.done = true
	defer t.c.snapshotClosed(t.startTS)
	if len(t.writes) == 0 {
		return 0, nil
	}
	c := t.c
	ws := make([]wire.Write, 0, len(t.writes))
	for _, w := range t.writes {
		ws = append(ws, *w)
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].Table != ws[j].Table {
			return ws[i].Table < ws[j].Table
		}
		return ws[i].Key < ws[j].Key
	})
	in := t.in
	if in.dead.Load() {
		return 0, ErrNotCommitted
	}
	select {
	case c.flushSem <- struct{}{}:
	case <-ctx.Done():
		return 0, fmt.Errorf("txkv commit: waiting for a flush slot: %w", ctx.Err())
	}
	c.flushMu.RLock()
	if c.closed.Load() {
		c.flushMu.RUnlock()
		<-c.flushSem
		return 0, ErrClosed
	}
	c.flushWG.Add(1)
	c.flushMu.RUnlock()
	id, below := in.startTxn()
	in.tr.CommitStarted(id)
	args := &wire.CommitArgs{ClientID: in.id, TxnID: id, StartTS: t.startTS, Writes: ws, ResolvedBelow: below}
	res := make(chan commitResult, 1)
	go func() {
		defer c.flushWG.Done()
		defer func() { <-c.flushSem }()
		c.commitAndFlush(in, args, res)
	}()
	select {
	case r := <-res:
		return r.ts, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %w", ErrUnknownOutcome, ctx.Err())
	}
}

type commitResult struct {
	ts  uint64
	err error
}

// commitAndFlush asks the coordinator to commit (retrying the same txn id
// on transport errors until it answers) and flushes a committed write-set.
// It reports on res once the caller may return: after the commit in async
// persistence, after the flush in sync persistence.
func (c *Client) commitAndFlush(in *incarnation, args *wire.CommitArgs, res chan<- commitResult) {
	var rep wire.CommitReply
	for attempt := 0; ; attempt++ {
		rep = wire.CommitReply{}
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		err := c.coord.Call(ctx, "Coord.Commit", args, &rep)
		cancel()
		if err == nil && (rep.Code == wire.Unavailable || rep.Code == wire.Internal) {
			// not known yet: the coordinator replays its log after a
			// restart, its log sync is slow, or its stable storage failed
			// and it stops (a restarted coordinator answers from its log);
			// the same txn id is asked again
			err = rep.Err()
		} else if err == nil {
			break
		}
		if c.ctx.Err() != nil {
			// The outcome stays unknown: the commit stays in flight for
			// T_F, so that the recovery manager replays it if it committed.
			res <- commitResult{err: fmt.Errorf("%w: %v", ErrUnknownOutcome, err)}
			return
		}
		// Even an incarnation declared failed meanwhile keeps asking: a
		// restarted coordinator answers a commit it logged with its outcome.
		_ = sleep(c.ctx, backoff(attempt)+10*time.Millisecond)
	}
	in.endTxn(args.TxnID)
	switch rep.Code {
	case wire.OK:
	case wire.Aborted:
		in.tr.CommitEnded(args.TxnID)
		c.aborts.Add(1)
		res <- commitResult{err: ErrAborted}
		return
	case wire.Dead:
		// the coordinator refused it: this registration was declared
		// failed before the transaction was decided
		in.tr.CommitEnded(args.TxnID)
		c.declaredDead(in)
		res <- commitResult{err: ErrNotCommitted}
		return
	case wire.Unknown:
		// the coordinator does not know this registration (it restarted
		// and the transaction is not in its log, or the client was
		// removed long ago): it was not committed unless it was logged
		// and the log truncated since, which only the data can tell
		in.tr.CommitEnded(args.TxnID)
		c.declaredDead(in)
		res <- commitResult{err: fmt.Errorf("%w: %v", ErrUnknownOutcome, rep.Err())}
		return
	default:
		in.tr.CommitEnded(args.TxnID)
		res <- commitResult{err: fmt.Errorf("%w: %v", ErrUnknownOutcome, rep.Err())}
		return
	}
	ts := rep.CommitTS
	in.tr.Committed(args.TxnID, ts)
	c.commits.Add(1)
	sync := c.cluster.Persistence == wire.Sync
	if !sync {
		res <- commitResult{ts: ts}
	}
	writes, partial := args.Writes, false
	if f := c.cfg.FlushFilter; f != nil {
		writes = nil
		for _, w := range args.Writes {
			if f(ts, w) {
				writes = append(writes, w)
			}
		}
		partial = len(writes) < len(args.Writes)
	}
	if c.cfg.SkipFlush || len(writes) == 0 {
		if sync {
			res <- commitResult{ts: ts}
		}
		return
	}
	// retry until flushed (no retry limit), unless this incarnation died
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		err := c.router.Flush(ctx, ts, writes, FlushOptions{})
		cancel()
		if err == nil {
			break
		}
		if c.ctx.Err() != nil || in.dead.Load() {
			if sync {
				res <- commitResult{ts: ts, err: fmt.Errorf("%w: committed at %d, flush abandoned: %v", ErrUnknownOutcome, ts, err)}
			}
			return
		}
		c.lg.Printf("flush of ts %d: %v (retrying)", ts, err)
	}
	if partial {
		if sync {
			res <- commitResult{ts: ts}
		}
		return
	}
	in.tr.Flushed(ts)
	c.flushes.Add(1)
	select {
	case c.notify <- flushed{in, ts}:
	case <-c.ctx.Done():
	}
	if sync {
		res <- commitResult{ts: ts}
	}
}

// read reads a row at ts from its region's server, following the region
// as it moves, until ctx ends.
func (c *Client) read(ctx context.Context, table, key string, fields []string, ts uint64) ([]wire.Field, bool, error) {
	var last error
	for attempt := 0; ; attempt++ {
		ri, ver, ok := c.router.route(key)
		if ok && ri.Online && ri.Addr != "" {
			var rep wire.ReadReply
			err := c.router.Conn(ri.Addr).Call(ctx, "Server.Read", &wire.ReadArgs{Region: ri.ID, Table: table, Key: key, Fields: fields, TS: ts}, &rep)
			if err == nil && rep.Code == wire.OK {
				return rep.Fields, rep.Found, nil
			}
			if err == nil {
				err = rep.Err()
			}
			last = err
		} else {
			last = fmt.Errorf("region of %q is not online", key)
		}
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("txkv read %s: %w (last: %v)", key, ctx.Err(), last)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return nil, false, fmt.Errorf("txkv read %s: %w (last: %v)", key, err, last)
		}
		_ = c.router.Refresh(ctx, ver)
	}
}

// ReadAt reads a row (all fields when fields is nil) at a snapshot the
// caller chooses, outside any transaction, following the region as it
// moves until ctx ends. It is for verification: the lost-commit check of
// the tests reads every acknowledged write-set at its commit timestamp.
// Unlike a snapshot Begin hands out, ts may lie above what has been
// flushed completely, so a read may miss a write-set still being flushed.
func (c *Client) ReadAt(ctx context.Context, table, key string, fields []string, ts uint64) (map[string][]byte, bool, error) {
	fs, ok, err := c.read(ctx, table, key, fields, ts)
	if err != nil || !ok {
		return nil, false, err
	}
	out := make(map[string][]byte, len(fs))
	for _, f := range fs {
		out[f.Name] = f.Value
	}
	return out, true, nil
}

// Scan reads up to count rows of table from key on, as of the
// transaction's snapshot, across regions (buffered writes are not applied).
func (t *Txn) Scan(ctx context.Context, table, key string, count int, fields []string) ([]wire.Row, error) {
	if t.done {
		return nil, ErrDone
	}
	var out []wire.Row
	c := t.c
	from := key
	for len(out) < count {
		var rows []wire.Row
		var next string
		var last error
		for attempt := 0; ; attempt++ {
			ri, ver, ok := c.router.route(from)
			if ok && ri.Online && ri.Addr != "" {
				var rep wire.ScanReply
				err := c.router.Conn(ri.Addr).Call(ctx, "Server.Scan", &wire.ScanArgs{Region: ri.ID, Table: table, Key: from, Count: count - len(out), Fields: fields, TS: t.startTS}, &rep)
				if err == nil && rep.Code == wire.OK {
					rows, next = rep.Rows, ri.End
					break
				}
				if err == nil {
					err = rep.Err()
				}
				last = err
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("txkv scan from %s: %w (last: %v)", from, ctx.Err(), last)
			}
			_ = sleep(ctx, backoff(attempt))
			_ = c.router.Refresh(ctx, ver)
		}
		out = append(out, rows...)
		if next == "" {
			break
		}
		from = next
	}
	return out, nil
}
