package coord

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// The coordinator's RPC handlers: client and server registration,
// heartbeats, begin and commit, flush reports, region lookups and status.

type coordRPC struct{ c *Coordinator }

// RegisterClient registers a client (Algorithm 2, line 1) with T_F = T*_F.
func (h *coordRPC) RegisterClient(a *wire.RegisterClientArgs, r *wire.RegisterClientReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.allocIDLocked()
	tf := c.tstarFLocked()
	vis := c.vis.Visible(c.now)
	oldest := vis
	if a.Oldest > 0 {
		oldest = min(oldest, a.Oldest)
	}
	c.clients[id] = &clientState{id: id, name: a.Name, lastHeard: time.Now(), outcomes: map[uint64]outcome{}, oldest: oldest}
	c.g.AddClient(id, tf)
	r.ClientID, r.TF, r.Now, r.Visible, r.Config, r.Map = id, tf, c.now, vis, c.cfg.Cluster, c.regionMapLocked()
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
		c.vis.FlushedClient(a.ClientID)
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
	cs.oldest = a.Oldest
	c.g.ClientHeartbeat(a.ClientID, a.TF)
	r.TStarF, r.Now, r.Visible = c.tstarFLocked(), c.now, c.vis.Visible(c.now)
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
	r.StartTS = c.vis.Visible(c.now)
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
	} else if gone, ok := c.gone[a.ClientID]; ok {
		// the client was declared failed and removed after its replay:
		// what it had committed was replayed; anything else was never
		// decided and never will be
		o, seen = gone[a.TxnID]
		if !seen {
			c.mu.Unlock()
			r.Status = wire.Errorf(wire.Dead, "client %d was declared failed before transaction %d was decided: not committed", a.ClientID, a.TxnID)
			return nil
		}
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
		if !o.failed {
			cs.outcomes[a.TxnID] = o
		}
	}
	c.mu.Unlock()
	switch {
	case o.failed:
		r.Status = wire.Errorf(wire.Internal, "the coordinator's stable storage failed and it stops; ask again after its restart")
		return nil
	case o.aborted:
		r.Status = wire.Errorf(wire.Aborted, "write-write conflict with a transaction committed after start timestamp %d", a.StartTS)
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := c.rlog.WaitSynced(ctx, o.seq); err != nil {
		switch {
		case c.ctx.Err() != nil:
			// shutting down: the log's close syncs the record or it is
			// lost; the client asks again and a restarted coordinator
			// answers from its log
			r.Status = wire.Errorf(wire.Unavailable, "the coordinator is stopping")
		case errors.Is(err, context.DeadlineExceeded):
			// not durable yet: decided, the same question is answered
			// from the outcome kept for the client
			r.Status = wire.Errorf(wire.Unavailable, "the recovery log sync is slow: %v", err)
		default:
			// the record may or may not be durable: only a restarted
			// coordinator can tell, from its log
			c.mu.Lock()
			c.failStopLocked(fmt.Errorf("recovery log sync: %w", err))
			c.mu.Unlock()
			r.Status = wire.Errorf(wire.Internal, "the recovery log failed and the coordinator stops; ask again after its restart: %v", err)
		}
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
			c.failStopLocked(err)
			return outcome{failed: true}
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
		c.failStopLocked(fmt.Errorf("recovery log append: %w", err))
		return outcome{failed: true}
	}
	c.vis.Add(ts, cs.id)
	c.commits++
	return outcome{ts: ts, seq: seq}
}

// Flushed records write-sets a client has fully flushed (snapshot visibility).
func (h *coordRPC) Flushed(a *wire.FlushedArgs, r *wire.StatusReply) error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ts := range a.TS {
		c.vis.Flushed(ts)
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
	r.TStarF, r.Now, r.LowWater = c.tstarFLocked(), c.now, c.lowWaterLocked()
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
	st := wire.ClusterStatus{Now: c.now, Visible: c.vis.Visible(c.now), TStarF: c.tstarFLocked(), TStarP: c.tstarP,
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
	st.LowWater, st.ConflictKeys = c.lowWater, len(c.lastCommit)
	st.LogSegments = len(c.rlog.Segments())
	return st
}
