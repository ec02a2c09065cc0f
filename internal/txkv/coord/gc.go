package coord

import "time"

// Version garbage collection.
//
// Servers keep every version of every cell and the transaction manager
// the last commit timestamp of every key it saw: both would grow with the
// run. The low-water mark is a timestamp no transaction reads below: the
// minimum over live clients of the lower bound each reports of its
// snapshots (its oldest open transaction's, or the newest snapshot it has
// learnt of), and never above the snapshot Begin hands out now. Servers
// drop the versions no snapshot at or above it can see (store.Prune), and
// the transaction manager forgets last commit timestamps at or below it:
// a transaction whose snapshot is at or above the mark cannot conflict
// with them, and one below it (only a client declared failed can hold
// one) aborts, as after a restart (conflictFloor).
//
// A restarted coordinator publishes no new mark until its clients had
// time to register again with their open snapshots (two session
// timeouts), nor while it replays its log.

// lowWaterLocked returns the current mark (non-decreasing); mu held.
func (c *Coordinator) lowWaterLocked() uint64 {
	if c.recovering || (c.restarted && time.Since(c.started0) < 2*c.cfg.Cluster.SessionTimeout) {
		return c.lowWater
	}
	lw := c.vis.Visible(c.now)
	for _, cs := range c.clients {
		if !cs.dead {
			lw = min(lw, cs.oldest)
		}
	}
	c.lowWater = max(c.lowWater, lw)
	return c.lowWater
}

// pruneConflictsLocked forgets the last commit timestamps at or below the
// mark; mu held.
func (c *Coordinator) pruneConflictsLocked() {
	lw := c.lowWaterLocked()
	if lw <= c.prunedTo {
		return
	}
	for k, ts := range c.lastCommit {
		if ts <= lw {
			delete(c.lastCommit, k)
		}
	}
	c.prunedTo = lw
	c.conflictFloor = max(c.conflictFloor, lw)
}
