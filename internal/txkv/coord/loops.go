package coord

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/seglog"
)

// The background loops: the failure detector and housekeeping.

// detector declares clients and servers failed after missed heartbeats.
// Time in which the detector itself did not run (a tick more than
// pauseLimit late: the coordinator was not scheduled, or waited for its
// lock) is not counted against anyone: every client's and server's last
// heartbeat moves forward by the pause, as Cassandra's failure detector
// ignores a local pause. On a machine that stalls every process for
// seconds at once, the coordinator otherwise wakes up to heartbeats that
// are all older than the session timeout and declares every live server
// and client failed. Declaring a failure later is safe: a server stops
// serving when its own lease runs out, whatever the coordinator does.
func (c *Coordinator) detector() {
	every := min(max(c.cfg.Cluster.Heartbeat/4, 5*time.Millisecond), 100*time.Millisecond)
	limit := pauseLimit(c.cfg.Cluster.SessionTimeout)
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		now := time.Now()
		if p := localPause(now.Sub(last), every, limit); p > 0 {
			for _, cs := range c.clients {
				cs.lastHeard = creditPause(cs.lastHeard, now, p)
			}
			for _, s := range c.servers {
				s.lastHeard = creditPause(s.lastHeard, now, p)
			}
			c.lg.Printf("failure detector paused for %v (the coordinator did not run): not counted as missed heartbeats", p.Round(time.Millisecond))
		}
		last = now
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

// pauseLimit is how much later than its interval a detector tick may come
// before the delay counts as a local pause: a third of the session timeout
// (one heartbeat interval by default), at least 500 ms, so the scheduling
// jitter of a loaded machine is not credited.
func pauseLimit(session time.Duration) time.Duration {
	return max(session/3, 500*time.Millisecond)
}

// localPause returns how long the detector did not run when its tick came
// gap after the previous one with interval every: gap-every when that is
// more than limit, else 0.
func localPause(gap, every, limit time.Duration) time.Duration {
	if p := gap - every; p > limit {
		return p
	}
	return 0
}

// creditPause moves a last heartbeat time forward by pause, not past now.
func creditPause(lastHeard, now time.Time, pause time.Duration) time.Time {
	if t := lastHeard.Add(pause); t.Before(now) {
		return t
	}
	return now
}

// housekeeping truncates the recovery log below T*_P and forgets last
// commit timestamps below the low-water mark (gc.go).
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
		c.pruneConflictsLocked()
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
