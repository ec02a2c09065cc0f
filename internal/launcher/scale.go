package launcher

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/fault/kind"
)

// Scaling milestones a launcher reports while it adds or removes nodes
// (ScaleOptions.Progress). They become events of the same kind in
// events.jsonl, at the time the launcher observed them.
const (
	// ScaleNodeStarted: a new node's process runs (node: its name).
	ScaleNodeStarted = "node-started"
	// ScaleNodeJoined: the database counts the node as a member that serves
	// (Cassandra: every node's gossip shows it NORMAL; etcd: the member is
	// started and no longer a learner; Redis Cluster: every node knows it).
	ScaleNodeJoined = "node-joined"
	// ScaleStreamingStart: the data movement of the action began, as the
	// database reports it (Cassandra: the node's log says it executes its
	// stream plan); the time before it is starting the node and joining.
	ScaleStreamingStart = "streaming-start"
	// ScaleStreamingDone: the data movement of the action ended, as the
	// database reports it (Cassandra: the node's log says its streams
	// completed, or it left; Redis Cluster: the last slot moved; etcd: the
	// member caught up with the leader's applied index).
	ScaleStreamingDone = "streaming-done"
	// ScaleSlotsMoved: Redis Cluster moved a batch of hash slots (detail:
	// how many, from where to where, with how many keys).
	ScaleSlotsMoved = "slots-moved"
	// ScaleNodeLeft: a removed node is out of the cluster and stopped.
	ScaleNodeLeft = "node-left"
)

// ScaleEvent is one scaling milestone.
type ScaleEvent struct {
	Kind   string    // one of the Scale* constants
	Node   string    // the node it is about
	Detail string    // what the database said
	At     time.Time // when it was observed (wall clock)
}

// Streaming throttles for ScaleOptions.StreamMbit (the grammar is the
// add-node and remove-node parameter's, in internal/fault/kind).
const (
	StreamKeep        = kind.StreamKeep        // leave the database's setting as it is
	StreamUnthrottled = kind.StreamUnthrottled // no limit
)

// ScaleOptions says how to add or remove nodes.
type ScaleOptions struct {
	// Count is how many nodes to add (at least 1).
	Count int
	// StreamMbit limits the data streaming of the action on every node that
	// sends (Cassandra's stream_throughput_outbound) in megabits per
	// second; StreamKeep leaves the setting alone, StreamUnthrottled lifts
	// it. Launchers that cannot throttle refuse anything but StreamKeep.
	StreamMbit int
	// NoBootstrap adds nodes that take over their share of the ring without
	// receiving its data first (Cassandra's auto_bootstrap=false).
	NoBootstrap bool
	// Progress, when set, is called with every milestone as the launcher
	// observes it (from the goroutine that called AddNodes or RemoveNode).
	Progress func(ScaleEvent)
}

// Validate checks the options.
func (o ScaleOptions) Validate() error {
	if o.Count < 1 || o.Count > 8 {
		return fmt.Errorf("count %d: allowed 1..8 nodes at a time", o.Count)
	}
	if o.StreamMbit < StreamKeep {
		return fmt.Errorf("streaming throttle %d Mbit/s: must not be negative", o.StreamMbit)
	}
	return nil
}

// Report calls Progress (if set) with a milestone observed now.
func (o ScaleOptions) Report(kind, node, detail string) {
	if o.Progress != nil {
		o.Progress(ScaleEvent{Kind: kind, Node: node, Detail: detail, At: time.Now()})
	}
}

// ParseStreaming reads a streaming throttle as written in a scenario:
// "" (keep the database's setting), "unthrottled" (or "off", "0"), or a
// rate in megabits per second: "5mbit", "40mbit", "5" ("mbit/s" and
// "mbps" are accepted too). See kind.ParseStreaming.
func ParseStreaming(s string) (int, error) { return kind.ParseStreaming(s) }

// StreamingString renders a StreamMbit value the way ParseStreaming reads it.
func StreamingString(mbit int) string {
	switch {
	case mbit == StreamKeep:
		return ""
	case mbit == StreamUnthrottled:
		return "unthrottled"
	}
	return strconv.Itoa(mbit) + "mbit"
}

// Scaler is the optional ability to grow a running cluster (the elasticity
// benchmarks' scale-out), found by type assertion on a Launcher. AddNodes
// starts opts.Count new nodes that join the cluster the way the database
// adds capacity (Cassandra: bootstrap, streaming token ranges from the
// others; Redis Cluster: a new master that hash slots migrate to; etcd: a
// new member), appends them to c.Nodes and returns their names once they
// serve, reporting milestones through opts.Progress. On error the nodes
// that never joined are stopped and left out of c.
type Scaler interface {
	AddNodes(ctx context.Context, env *Env, c *Cluster, opts ScaleOptions) ([]string, error)
}

// Shrinker is the optional ability to take a node out of a running
// cluster for good (scale-in): RemoveNode moves the node's data or duties
// to the others the way the database does it (Cassandra: decommission;
// Redis Cluster: migrate its slots away, then forget it; etcd: member
// remove), stops its process and deletes it from c.Nodes.
type Shrinker interface {
	RemoveNode(ctx context.Context, env *Env, c *Cluster, name string, opts ScaleOptions) error
}

// ScaleOptionChecker is implemented by scaling launchers that support only
// some ScaleOptions (no streaming throttle, no join without data), so that
// a schedule asking for more is refused before anything starts.
type ScaleOptionChecker interface {
	CheckScaleOptions(opts ScaleOptions) error
}
