package coord

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/seglog"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// The region master: assigning regions to servers, opening them, and
// recovering a failed server's regions by replay.

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
	s.walDir = c.fenceWAL(s.walDir)
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

// walFenced is the suffix of a failed server's WAL directory once it was
// moved aside (HBase's "-splitting").
const walFenced = ".failed"

// fenceWAL moves a failed server's WAL directory aside before its regions
// are assigned, and returns the new path, which the new hosts read: if
// the server is not dead but paused or cut off (a zombie), its WAL
// truncation then removes nothing the new hosts read (the paths it knows
// are gone) and it cannot start a new segment there; records its writer
// still appends to an open segment land in the moved directory and are
// harmless (write-sets it had not synced are replayed from the recovery
// log after T_P(s) anyway). Done again after a coordinator restart, it
// finds the directory moved already.
func (c *Coordinator) fenceWAL(dir string) string {
	if strings.HasSuffix(dir, walFenced) {
		return dir
	}
	to := dir + walFenced
	if err := os.Rename(dir, to); err != nil && !errors.Is(err, os.ErrNotExist) {
		// the new hosts read the directory where it is; the read order
		// (WAL, then region files) still misses nothing
		c.lg.Printf("fencing WAL %s: %v", dir, err)
		return dir
	}
	return to
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
			if c.cfg.TestOnly.NoServerReplay {
				replayed++
				continue
			}
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
