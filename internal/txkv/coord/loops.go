package coord

import (
	"fmt"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/seglog"
)

// The background loops: the failure detector and housekeeping.

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
