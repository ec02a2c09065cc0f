package coord

import (
	"context"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Client failure: a client whose heartbeats stopped is declared failed and
// its committed but unflushed write-sets are replayed.

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
		if c.cfg.TestOnly.NoClientReplay {
			break
		}
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
	c.vis.FlushedClient(cs.id)
	c.g.RemoveClient(cs.id)
	delete(c.clients, cs.id)
	c.gone[cs.id] = cs.outcomes
	c.goneOrder = append(c.goneOrder, cs.id)
	if len(c.goneOrder) > goneClients {
		delete(c.gone, c.goneOrder[0])
		c.goneOrder = c.goneOrder[1:]
	}
	c.recoveries = append(c.recoveries, wire.Recovery{Kind: "client", Name: cs.name, Detected: detected, Done: time.Now(), Replayed: len(recs), From: tf})
	c.lg.Printf("client %s (%d) recovered: replayed %d write-sets committed after T_F %d in %v",
		cs.name, cs.id, len(recs), tf, time.Since(detected).Round(time.Millisecond))
}
