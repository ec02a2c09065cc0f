package etcd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/faultbench/faultbench/internal/launcher"
)

var (
	_ launcher.Scaler   = Launcher{}
	_ launcher.Shrinker = Launcher{}
)

// scaleTimeout bounds a scaling step when the caller's context has none.
const scaleTimeout = 5 * time.Minute

// Scaling an etcd cluster (docs/targets-etcd.md, "Scaling") is raft
// membership change: AddNodes announces each new member with MemberAdd and
// then starts it with --initial-cluster-state existing (one at a time, as
// etcd wants: an announced member that has not started counts against the
// quorum); the leader sends it a snapshot and the log. RemoveNode removes
// the member with MemberRemove and stops its process. etcd has no
// streaming throttle and no join without data, so those options are
// refused.

// CheckScaleOptions implements launcher.ScaleOptionChecker: etcd has no
// streaming throttle and no join without data.
func (Launcher) CheckScaleOptions(opts launcher.ScaleOptions) error { return checkScaleOpts(opts) }

// checkScaleOpts refuses what etcd cannot do.
func checkScaleOpts(opts launcher.ScaleOptions) error {
	if opts.StreamMbit != launcher.StreamKeep {
		return fmt.Errorf("etcd has no streaming throttle (the leader sends a new member its snapshot as fast as it goes); leave streaming out")
	}
	if opts.NoBootstrap {
		return fmt.Errorf("etcd has no join without data (bootstrap: false): every member replicates the whole log")
	}
	return nil
}

// errRemoteScale refuses adding and removing members of a cluster whose
// members run on inventory hosts.
var errRemoteScale = errors.New("etcd: adding or removing members of a cluster on inventory hosts (--hosts) is not supported yet")

// clusterToken reads --initial-cluster-token from a member's recorded argv.
func clusterToken(c *launcher.Cluster) (string, error) {
	for _, n := range c.Nodes {
		for i, a := range n.Argv {
			if a == "--initial-cluster-token" && i+1 < len(n.Argv) {
				return n.Argv[i+1], nil
			}
		}
	}
	return "", fmt.Errorf("etcd cluster %s: no member's command line has --initial-cluster-token", c.Name)
}

// nextName returns n(M+1+k), M the highest member number in nodes.
func nextName(nodes []launcher.Node, k int) string {
	high := len(nodes)
	for _, n := range nodes {
		if v, err := strconv.Atoi(strings.TrimPrefix(n.Name, "n")); err == nil && v > high {
			high = v
		}
	}
	return "n" + strconv.Itoa(high+1+k)
}

// AddNodes adds opts.Count members one after the other (MemberAdd, start
// with --initial-cluster-state existing, wait until it serves), reporting
// node-started, node-joined (the member serves and sees the leader) and
// streaming-done (its applied index reached the leader's as read when it
// joined: the snapshot and log it had to catch up on have arrived).
func (l Launcher) AddNodes(ctx context.Context, env *launcher.Env, c *launcher.Cluster, opts launcher.ScaleOptions) ([]string, error) {
	if c.Inventory != "" {
		return nil, errRemoteScale
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	if err := checkScaleOpts(opts); err != nil {
		return nil, err
	}
	if c.Kind != Kind {
		return nil, fmt.Errorf("cluster %s is of kind %q, not %q", c.Name, c.Kind, Kind)
	}
	o, err := parseOptions(c.Options)
	if err != nil {
		return nil, fmt.Errorf("etcd: the cluster's recorded options: %w", err)
	}
	token, err := clusterToken(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, scaleTimeout)
	defer cancel()
	var names []string
	for k := 0; k < opts.Count; k++ {
		name, err := l.addOne(ctx, env, c, o, token, opts)
		if err != nil {
			return names, err
		}
		names = append(names, name)
	}
	return names, nil
}

// addOne adds one member; on error it stops the member and, if it was
// announced, removes it from the membership again.
func (Launcher) addOne(ctx context.Context, env *launcher.Env, c *launcher.Cluster, o options, token string, opts launcher.ScaleOptions) (string, error) {
	i := len(c.Nodes)
	name := nextName(c.Nodes, 0)
	host := env.Addrs.Host(i)
	cp, err := env.Addrs.Port(host)
	if err != nil {
		return "", fmt.Errorf("etcd: a port for %s: %w", name, err)
	}
	pp, err := env.Addrs.Port(host)
	for tries := 0; err == nil && pp == cp && tries < 20; tries++ {
		pp, err = env.Addrs.Port(host)
	}
	if err != nil || pp == cp {
		return "", fmt.Errorf("etcd: a second port for %s: %v", name, err)
	}
	p := memberPlan{name: name, host: host, clientPort: cp, peerPort: pp,
		dataDir: filepath.Join(c.Dir, name, "data"), logFn: filepath.Join(c.Dir, name, "node.log")}
	var endpoints []string
	for _, n := range c.Nodes {
		if launcher.RunsNode(&n) {
			endpoints = append(endpoints, n.Addr)
		}
	}
	if len(endpoints) == 0 {
		return "", fmt.Errorf("etcd cluster %s has no running member to join", c.Name)
	}
	cli, err := newClient(endpoints)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	var resp *clientv3.MemberAddResponse
	for {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err = cli.MemberAdd(actx, []string{p.peerURL()})
		acancel()
		if err == nil {
			break
		}
		// etcd's leader refuses a new voter until every member has been
		// connected to it for a few seconds ("unhealthy cluster")
		if ctx.Err() != nil || !strings.Contains(err.Error(), "unhealthy") {
			return "", fmt.Errorf("etcd: announcing member %s (%s): %w", name, p.peerURL(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	newID := resp.Member.ID
	var ic []string
	for _, m := range resp.Members {
		mname := m.Name
		if m.ID == newID {
			mname = name
		}
		for _, u := range m.PeerURLs {
			ic = append(ic, mname+"="+u)
		}
	}
	initialCluster := strings.Join(ic, ",")
	c.Nodes = append(c.Nodes, launcher.Node{
		Name: name, Addr: hostPort(host, cp), PeerAddr: hostPort(host, pp), DataDir: p.dataDir, LogFile: p.logFn,
		Argv: env.NodeArgv(i, nodeArgv(env.Self, p, initialCluster, token, "existing", o, 0)),
		ID:   memberID(newID), Down: true,
	})
	n := &c.Nodes[i]
	undo := func(cause error) (string, error) {
		if n.PID > 0 {
			_ = launcher.Terminate(context.WithoutCancel(ctx), n.PID, stopGrace)
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, rerr := cli.MemberRemove(rctx, newID)
		rcancel()
		c.Nodes = c.Nodes[:i]
		if rerr != nil {
			return "", fmt.Errorf("etcd: adding %s: %w (and removing the announced member again failed: %v)", name, cause, rerr)
		}
		return "", fmt.Errorf("etcd: adding %s: %w", name, cause)
	}
	pid, err := env.SpawnNode(ctx, c, n)
	if err != nil {
		return undo(err)
	}
	n.PID, n.Down = pid, false
	opts.Report(launcher.ScaleNodeStarted, name, fmt.Sprintf("pid %d, member %s announced with MemberAdd", pid, memberID(newID)))
	wctx, wcancel := context.WithTimeout(ctx, o.startTimeout)
	err = waitMember(wctx, c, n, true)
	wcancel()
	if err != nil {
		return undo(fmt.Errorf("%w\n%s", err, launcher.LogTail(n.LogFile, 12)))
	}
	opts.Report(launcher.ScaleNodeJoined, name, "member serves and sees the leader")
	if err := waitCaughtUp(ctx, cli, c, n); err != nil {
		return undo(err)
	}
	opts.Report(launcher.ScaleStreamingDone, name, "applied index reached the leader's (snapshot and log received)")
	return name, nil
}

// waitCaughtUp waits until n's raft applied index reaches the leader's as
// read once n served.
func waitCaughtUp(ctx context.Context, cli *clientv3.Client, c *launcher.Cluster, n *launcher.Node) error {
	var target uint64
	for _, m := range c.Nodes {
		if m.Name == n.Name || !launcher.RunsNode(&m) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		st, err := cli.Status(sctx, m.Addr)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			target = st.RaftAppliedIndex
			break
		}
	}
	for {
		sctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		st, err := cli.Status(sctx, n.Addr)
		cancel()
		if err == nil && st.RaftAppliedIndex >= target {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to catch up with the leader's applied index %d: %w", n.Name, target, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// RemoveNode removes member name from the raft configuration (MemberRemove,
// through the other members), then stops its process and deletes it from
// c.Nodes. Milestones: streaming-done when the configuration change is
// committed (nothing moves: every member holds all data), node-left once
// the process is gone.
func (Launcher) RemoveNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string, opts launcher.ScaleOptions) error {
	if c.Inventory != "" {
		return errRemoteScale
	}
	if err := checkScaleOpts(opts); err != nil {
		return err
	}
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	ctx, cancel := launcher.WithDefaultTimeout(ctx, scaleTimeout)
	defer cancel()
	var others []string
	for _, m := range c.Nodes {
		if m.Name != name && launcher.RunsNode(&m) {
			others = append(others, m.Addr)
		}
	}
	if len(others) == 0 {
		return fmt.Errorf("etcd: %s is the only running member; removing it would end the cluster", name)
	}
	cli, err := newClient(others)
	if err != nil {
		return err
	}
	defer cli.Close()
	id, err := strconv.ParseUint(n.ID, 16, 64)
	if err != nil || n.ID == "" {
		// the id comes from Refresh; ask the cluster by name
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		ml, lerr := cli.MemberList(lctx)
		lcancel()
		if lerr != nil {
			return fmt.Errorf("etcd: listing members to find %s: %w", name, lerr)
		}
		id = 0
		for _, m := range ml.Members {
			if m.Name == name {
				id = m.ID
			}
		}
		if id == 0 {
			return fmt.Errorf("etcd: no member named %s in the cluster", name)
		}
	}
	for {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = cli.MemberRemove(rctx, id)
		rcancel()
		if err == nil {
			break
		}
		// a member that just joined may not be "started" for the leader yet
		if ctx.Err() != nil || !strings.Contains(err.Error(), "unhealthy") {
			return fmt.Errorf("etcd: removing member %s (%s): %w", name, memberID(id), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	opts.Report(launcher.ScaleStreamingDone, name, "member removed from the raft configuration (no data moves)")
	if n.PID > 0 && launcher.Alive(n.PID) {
		// a removed member stops serving by itself; its process may linger
		if err := launcher.Terminate(ctx, n.PID, stopGrace); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("etcd: stopping removed member %s: %w", name, err)
		}
	}
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			c.Nodes = append(c.Nodes[:i], c.Nodes[i+1:]...)
			break
		}
	}
	opts.Report(launcher.ScaleNodeLeft, name, "removed and stopped")
	return nil
}
