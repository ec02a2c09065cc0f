package client

import (
	"context"
	"fmt"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// CrashInfo is what a client instance left behind when Crash stopped it.
type CrashInfo struct {
	ID        uint64 // the registration id the recovery manager knows it by
	Name      string // its name in the coordinator's log
	TF        uint64 // its local T_F(c) when it stopped (the coordinator may know an older one)
	Commits   int64  // transactions it committed
	Flushes   int64  // write-sets it flushed completely
	Unflushed int64  // committed write-sets not completely flushed: Commits - Flushes
}

// Crash stops the client as a crash would (Abandon: no more heartbeats,
// pending flushes abandoned, no unregistration) and reports what it left:
// the recovery manager will declare it failed after the session timeout
// and replay its write-sets committed after the T_F(c) it last received.
func (c *Client) Crash() CrashInfo {
	info := CrashInfo{ID: c.ID(), Name: c.cfg.Name, TF: c.TF()}
	c.Abandon()
	info.Commits, _, info.Flushes = c.Stats()
	info.Unflushed = max(info.Commits-info.Flushes, 0)
	return info
}

// Name returns the client's name in the coordinator's log.
func (c *Client) Name() string { return c.cfg.Name }

// ClusterStatus asks the coordinator for its view of the cluster (servers,
// clients, thresholds, finished recoveries).
func (c *Client) ClusterStatus(ctx context.Context) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	if err := c.coord.Call(ctx, "Coord.ClusterStatus", &wire.ClientArgs{}, &st); err != nil {
		return st, fmt.Errorf("txkv coordinator %s: %w", c.cfg.Coordinator, err)
	}
	if err := st.Err(); err != nil {
		return st, fmt.Errorf("txkv coordinator %s: %w", c.cfg.Coordinator, err)
	}
	return st, nil
}
