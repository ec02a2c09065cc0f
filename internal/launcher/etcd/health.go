package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/faultbench/faultbench/internal/launcher"
)

const (
	// refreshTimeout bounds one Status call of Refresh (it runs under load).
	refreshTimeout = 2 * time.Second
	// probeTimeout bounds one Status call while waiting for health.
	probeTimeout = 500 * time.Millisecond
	// readTimeout bounds the linearizable health read.
	readTimeout = 2 * time.Second
	// defaultWait bounds WaitHealthy when ctx has no deadline.
	defaultWait = 30 * time.Second
	// healthKey is read (never written) to prove the cluster serves linearizable reads.
	healthKey = "/faultbench/health"
)

// memberError is a health problem of one member.
type memberError struct {
	member string
	exited bool // the member's process is gone
	err    error
}

func (e *memberError) Error() string { return "member " + e.member + ": " + e.err.Error() }
func (e *memberError) Unwrap() error { return e.err }

// newClient returns a quiet etcd client for the launcher's own probes. It
// does not connect until used; reconnects are retried at least once a second.
func newClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints,
		Logger:    zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", strings.Join(endpoints, ","), err)
	}
	return cli, nil
}

type statusResult struct {
	resp *clientv3.StatusResponse
	err  error
}

// statusAll asks every node in nodes for its status concurrently, each call
// bounded by timeout.
func statusAll(ctx context.Context, cli *clientv3.Client, nodes []*launcher.Node, timeout time.Duration) []statusResult {
	out := make([]statusResult, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := cli.Status(sctx, n.Addr)
			out[i] = statusResult{resp, err}
		})
	}
	wg.Wait()
	return out
}

func memberID(id uint64) string { return strconv.FormatUint(id, 16) }

// Refresh implements launcher.Launcher: it asks every running member for its
// status (each call bounded by a short timeout) and sets Role (leader or
// follower), ID (the member id in hex) and Down. A member whose process is
// gone gets PID 0 and Down; a member that does not answer (paused,
// partitioned, still starting) is Down with no role.
func (Launcher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	var up []*launcher.Node
	runs := c.RunsNodes(ctx)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !runs[i] {
			n.PID, n.Down, n.Role = 0, true, launcher.RoleUnknown
			continue
		}
		up = append(up, n)
	}
	if len(up) == 0 {
		return ctx.Err()
	}
	cli, err := newClient(c.Endpoints())
	if err != nil {
		return err
	}
	defer cli.Close()
	for i, r := range statusAll(ctx, cli, up, refreshTimeout) {
		n := up[i]
		if r.err != nil {
			n.Down, n.Role = true, launcher.RoleUnknown
			continue
		}
		n.Down = false
		n.ID = memberID(r.resp.Header.MemberId)
		if r.resp.Leader != 0 && r.resp.Leader == r.resp.Header.MemberId {
			n.Role = launcher.RoleLeader
		} else {
			n.Role = launcher.RoleFollower
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("refreshing etcd cluster %s: %w", c.Name, err)
	}
	return nil
}

// WaitHealthy implements launcher.Launcher: it waits until every member
// whose process runs answers Status without alarms, all of them name the
// same leader (itself one of them), and a linearizable read succeeds.
// Members whose process is gone are not waited for. Without a deadline on
// ctx it gives up after 30 s. The error names the member that was not
// healthy and what it was waiting for.
func (Launcher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	if err := waitHealthy(ctx, c, false); err != nil {
		return fmt.Errorf("etcd cluster %s not healthy: %w", c.Name, err)
	}
	return nil
}

// waitHealthy polls checkHealthy until it passes or ctx ends. With
// requireAll every member must run; a member process that exits is then an
// immediate error.
func waitHealthy(ctx context.Context, c *launcher.Cluster, requireAll bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}
	cli, err := newClient(c.Endpoints())
	if err != nil {
		return err
	}
	defer cli.Close()
	start := time.Now()
	for {
		last := checkHealthy(ctx, cli, c, requireAll)
		if last == nil {
			return nil
		}
		var me *memberError
		if requireAll && errors.As(last, &me) && me.exited {
			return last
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %v waiting for every running member to answer, agree on one leader and serve a linearizable read; last problem: %w",
				time.Since(start).Round(time.Millisecond), last)
		case <-t.C:
		}
	}
}

// checkHealthy checks the cluster once.
func checkHealthy(ctx context.Context, cli *clientv3.Client, c *launcher.Cluster, requireAll bool) error {
	var up []*launcher.Node
	runs := c.RunsNodes(ctx)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		switch {
		case runs[i]:
			up = append(up, n)
		case requireAll:
			return &memberError{member: n.Name, exited: true, err: fmt.Errorf("process (pid %d) exited", n.PID)}
		}
	}
	if len(up) == 0 {
		return errors.New("no member process is running")
	}
	for _, n := range up {
		if c.ProcsOf(n).Stopped(ctx, n.PID) {
			return &memberError{member: n.Name, err: fmt.Errorf("process (pid %d) is paused (SIGSTOP)", n.PID)}
		}
	}
	sts := statusAll(ctx, cli, up, probeTimeout)
	ids := map[uint64]string{}
	for i, r := range sts {
		n := up[i]
		if r.err != nil {
			return &memberError{member: n.Name, err: fmt.Errorf("no status from %s: %w", n.Addr, r.err)}
		}
		if len(r.resp.Errors) > 0 {
			return &memberError{member: n.Name, err: fmt.Errorf("reports errors: %s", strings.Join(r.resp.Errors, "; "))}
		}
		ids[r.resp.Header.MemberId] = n.Name
	}
	leader := sts[0].resp.Leader
	for i, r := range sts {
		switch {
		case r.resp.Leader == 0:
			return &memberError{member: up[i].Name, err: errors.New("sees no leader")}
		case r.resp.Leader != leader:
			return fmt.Errorf("members disagree on the leader: %s sees %s, %s sees %s",
				up[0].Name, memberID(leader), up[i].Name, memberID(r.resp.Leader))
		}
	}
	if _, ok := ids[leader]; !ok {
		return fmt.Errorf("leader %s is not one of the running members", memberID(leader))
	}
	gctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if _, err := cli.Get(gctx, healthKey); err != nil {
		return fmt.Errorf("linearizable read failed: %w", err)
	}
	return nil
}

// waitMember waits until the just started n serves clients and sees a leader
// (serve) or merely accepts connections (!serve), or its process exits.
func waitMember(ctx context.Context, c *launcher.Cluster, n *launcher.Node, serve bool) error {
	var cli *clientv3.Client
	if serve {
		var err error
		if cli, err = newClient([]string{n.Addr}); err != nil {
			return err
		}
		defer cli.Close()
	}
	var last error
	for {
		if !c.ProcsOf(n).Alive(ctx, n.PID) {
			return errors.New("process exited")
		}
		if serve {
			sctx, cancel := context.WithTimeout(ctx, probeTimeout)
			resp, err := cli.Status(sctx, n.Addr)
			cancel()
			switch {
			case err != nil:
				last = err
			case resp.Leader == 0:
				last = errors.New("member sees no leader")
			default:
				n.ID = memberID(resp.Header.MemberId)
				if resp.Leader == resp.Header.MemberId {
					n.Role = launcher.RoleLeader
				} else {
					n.Role = launcher.RoleFollower
				}
				return nil
			}
		} else {
			var d net.Dialer
			dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			conn, err := d.DialContext(dctx, "tcp", n.Addr)
			cancel()
			if err == nil {
				conn.Close()
				return nil
			}
			last = err
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-t.C:
		}
	}
}
