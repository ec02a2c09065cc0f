package coord

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Coordinator restart.
//
// A restarted coordinator rebuilds its state from its own stable storage:
// the timestamp reservation (the oracle), the metadata file (membership,
// region map, see meta.go) and the recovery log, which holds every
// write-set not yet known to be persisted by every server (it is truncated
// only below T*_P). From the log it rebuilds the last commit timestamp of
// every key it holds (first-committer-wins for transactions whose snapshot
// is not older than the log; older ones abort) and the outcome of every
// logged transaction, so that a client retrying a commit whose answer it
// did not get learns that it committed.
//
// It does not know which logged write-sets were flushed before it
// stopped. Once every region is online on a server whose T_P it learned
// since the restart (heartbeat, or asked with Server.Info), it replays the logged write-sets committed after
// the lowest of those T_P (a write-set at or below T_P(s) was flushed and
// persisted wherever it went, Algorithm 3) to the regions' hosts — a flush
// is idempotent, the commit timestamp is the cell version — and only then
// hands out snapshots and accepts commits (until then Begin and Commit
// answer Unavailable, which clients wait on). T*_F stays below the oldest
// logged write-set until the replay is done. Servers keep their ids
// (membership is in the metadata) and renew their leases with their next
// heartbeat; one that does not heartbeat within the session timeout after
// the restart is declared failed with T_P 0, so its regions are recovered
// with a replay of the whole log. Clients are unknown after a restart and
// register again; their earlier commits are covered by the replay.

// ErrCrashed is returned by Run after Crash.
var ErrCrashed = errors.New("crashed on request")

// loadLog rebuilds what the log tells after a restart: the keys' last
// commit timestamps, the logged transactions' outcomes, the conflict and
// T*_F floors. Called from New.
func (c *Coordinator) loadLog() error {
	var n int
	var minTS, maxClient uint64
	err := c.rlog.Scan(nil, func(b []byte) error {
		rec, err := wire.DecodeTxnRecord(b)
		if err != nil {
			return err
		}
		if n == 0 || rec.TS < minTS {
			minTS = rec.TS
		}
		n++
		maxClient = max(maxClient, rec.ClientID)
		for _, w := range rec.Writes {
			k := w.Table + "\x00" + w.Key
			c.lastCommit[k] = max(c.lastCommit[k], rec.TS)
		}
		m := c.logged[rec.ClientID]
		if m == nil {
			m = map[uint64]uint64{}
			c.logged[rec.ClientID] = m
		}
		m[rec.TxnID] = rec.TS
		return nil
	})
	if err != nil {
		return err
	}
	c.nextID = max(c.nextID, maxClient+1)
	c.loggedN = n
	if n > 0 {
		// every commit above minTS-1 is in the log
		c.conflictFloor = minTS - 1
		c.floorF = minTS - 1
		c.recovering = true
	} else {
		// nothing logged: every commit up to the oracle is persisted
		// everywhere, but its keys are unknown
		c.conflictFloor = c.now
		c.floorF = c.now
	}
	return nil
}

// resumeLocked restarts what the metadata says was under way: regions
// being opened are offered to their host again (opening is idempotent on
// the server), unassigned regions are assigned. mu held, from Run.
func (c *Coordinator) resumeLocked() {
	now := time.Now()
	for _, s := range c.servers {
		s.lastHeard = now
	}
	for _, rg := range c.regions {
		s := c.servers[rg.host]
		if rg.host == 0 || !rg.opening || s == nil {
			continue
		}
		args := &wire.OpenRegionArgs{Region: rg.info, RecoverWALs: append([]string(nil), rg.pendingWALs...)}
		c.wg.Add(1)
		go func(addr string, epoch uint64, id wire.RegionID) {
			defer c.wg.Done()
			c.openRegion(addr, epoch, id, args)
		}(s.addr, rg.epoch, rg.info.ID)
	}
	c.assignLocked()
	c.saveMetaLocked()
}

// restartReplay replays the logged write-sets after the lowest T_P of the
// regions' hosts once every region is online on a host that reported its
// T_P, then lets transactions in.
func (c *Coordinator) restartReplay(started time.Time) {
	var from uint64
	for {
		c.mu.Lock()
		ready := true
		from = ^uint64(0)
		for _, rg := range c.regions {
			s := c.servers[rg.host]
			ready = ready && rg.online && s != nil && s.live && s.reported
			if s != nil {
				tp, _ := c.g.ServerTP(s.id)
				from = min(from, tp)
			}
		}
		var ask []*serverState
		for _, sv := range c.servers {
			if sv.live && !sv.reported {
				ask = append(ask, sv)
			}
		}
		c.mu.Unlock()
		if ready {
			break
		}
		c.askTP(ask)
		if !sleepCtx(c.ctx, 20*time.Millisecond) {
			return
		}
	}
	online := time.Now()
	var recs []wire.TxnRecord
	for {
		var err error
		recs, err = c.fetch(c.ctx, from, nil)
		if err == nil {
			break
		}
		c.lg.Printf("restart recovery: reading the log: %v (retrying)", err)
		if !sleepCtx(c.ctx, time.Second) {
			return
		}
	}
	// replayed writes are synced by the servers before they answer; run
	// several at once so that their WAL syncs are grouped
	var next atomic.Int64
	if c.cfg.TestOnly.NoRestartReplay {
		next.Store(int64(len(recs)))
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(recs) || c.ctx.Err() != nil {
					return
				}
				for c.ctx.Err() == nil {
					ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
					err := c.router.Flush(ctx, recs[i].TS, recs[i].Writes, client.FlushOptions{Replay: true})
					cancel()
					if err == nil {
						break
					}
					c.lg.Printf("restart recovery: replaying ts %d: %v (retrying)", recs[i].TS, err)
				}
			}
		})
	}
	wg.Wait()
	if c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recovering = false
	done := time.Now()
	c.recoveries = append(c.recoveries, wire.Recovery{Kind: "coordinator", Name: "coordinator", Detected: started, Done: done,
		Replayed: len(recs), Regions: len(c.regions), From: from})
	c.lg.Printf("restart recovery done: %d write-sets committed after T_P %d replayed in %v (regions online and T_P reported %v after the start; %d write-sets in the log at the start); serving transactions",
		len(recs), from, done.Sub(online).Round(time.Millisecond), online.Sub(started).Round(time.Millisecond), c.loggedN)
}

// askTP asks servers that have not heartbeated since the restart for
// their T_P (the value their next heartbeat would report), so that the
// replay need not wait for their heartbeats. It does not renew them: their
// lease and liveness still come from heartbeats.
func (c *Coordinator) askTP(servers []*serverState) {
	var wg sync.WaitGroup
	for _, sv := range servers {
		c.mu.Lock()
		addr, id := sv.addr, sv.id
		c.mu.Unlock()
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(c.ctx, 500*time.Millisecond)
			defer cancel()
			var rep wire.ServerInfoReply
			if err := c.router.Conn(addr).Call(ctx, "Server.Info", &wire.ServerArgs{ServerID: id}, &rep); err != nil || rep.Code != wire.OK || rep.ID != id {
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if sv.live && !sv.reported { // a heartbeat's value is at least as new
				c.g.ServerHeartbeat(id, rep.TP)
				sv.reported = true
			}
		})
	}
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Crash makes Run stop as a kill -9 would, for tests without processes: it
// stops serving at once, drops recovery log records not yet written and
// writes nothing more. Run returns ErrCrashed. Start a new Coordinator on
// the same Dir to restart.
func (c *Coordinator) Crash() {
	c.mute.Set() // first: a handler that sees crashed must not answer
	c.mu.Lock()
	c.crashed = true
	c.mu.Unlock()
	c.crashOnce.Do(func() { close(c.crash) })
}
