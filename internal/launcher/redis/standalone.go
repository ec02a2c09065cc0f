package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/launcher"
)

// StandaloneLauncher starts plain Redis (kind "redis"): one primary n1
// (Spec.Nodes must be 1) and Spec.Replicas replicas n2.. started with
// --replicaof n1. There is no automatic failover: a killed primary stays
// down until StartNode, and without redis.appendonly=yes it comes back
// empty (and its replicas then resynchronise to empty). The zero value is
// ready to use.
type StandaloneLauncher struct{}

var _ launcher.Launcher = StandaloneLauncher{}

// Kind implements launcher.Launcher.
func (StandaloneLauncher) Kind() string { return KindStandalone }

// Up starts the primary and its replicas and waits until every replica is
// in sync. On error every started node is stopped again.
func (l StandaloneLauncher) Up(ctx context.Context, env *launcher.Env, spec launcher.Spec) (*launcher.Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if spec.Nodes != 1 {
		return nil, fmt.Errorf("redis: standalone Redis has one primary, so nodes must be 1 (got %d); use replicas for copies, or target redis-cluster for several masters", spec.Nodes)
	}
	if spec.Replicas > 64 {
		return nil, fmt.Errorf("redis: replicas must be at most 64 on one machine, got %d", spec.Replicas)
	}
	for _, k := range []string{OptNodeTimeout, OptFullCoverage} {
		if _, ok := spec.Options[k]; ok {
			return nil, fmt.Errorf("redis: option %s applies to redis-cluster only", k)
		}
		if _, ok := spec.Options[strings.TrimPrefix(k, "redis.")]; ok {
			return nil, fmt.Errorf("redis: option %s applies to redis-cluster only", k)
		}
	}
	total := 1 + spec.Replicas
	var (
		c     *launcher.Cluster
		plans []nodePlan
		cfg   config
		err   error
	)
	if len(spec.Hosts) > 0 {
		if cfg, err = parseValues(spec.Options); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		var cancel context.CancelFunc
		ctx, cancel = launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
		defer cancel()
		if c, plans, err = planOnHosts(ctx, env, spec, KindStandalone, cfg, total); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
	} else {
		if cfg, err = parseOptions(spec.Options); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		if err := checkVersion(ctx, cfg.binary); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		var cancel context.CancelFunc
		ctx, cancel = launcher.WithDefaultTimeout(ctx, defaultUpTimeout)
		defer cancel()
		dir, temp, err := launcher.ClusterDir(spec, "redis", launcher.NodeDataDirs(total, "data"))
		if err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		if plans, err = planNodes(env, dir, total, false); err != nil {
			if temp {
				_ = removeTemp(dir)
			}
			return nil, fmt.Errorf("redis: %w", err)
		}
		for i := 1; i < total; i++ {
			plans[i].replicaOf = plans[0].addr()
		}
		c = newCluster(KindStandalone, spec, dir, temp, cfg, plans)
	}
	ok := false
	defer func() {
		if !ok {
			stopAll(c)
		}
	}()
	if err := startPlanned(ctx, env, c, plans, 0, cfg); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	// the primary's address is final now (a port clash may have moved it)
	for i := 1; i < total; i++ {
		plans[i].replicaOf = c.Nodes[0].Addr
		c.Nodes[i].Argv = plans[i].argv(cfg)
		if err := startPlanned(ctx, env, c, plans, i, cfg); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
	}
	if err := l.WaitHealthy(ctx, c); err != nil {
		return nil, err
	}
	if err := l.Refresh(ctx, c); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// StartNode starts a stopped node again with its recorded command line (same
// port and data directory; a replica reconnects to the primary).
func (StandaloneLauncher) StartNode(ctx context.Context, env *launcher.Env, c *launcher.Cluster, name string) error {
	n, err := checkStart(c, KindStandalone, name)
	if err != nil {
		return err
	}
	return startNode(ctx, env, c, n)
}

// Refresh sets each node's Role from the ROLE command. A node whose
// process is gone is down with pid 0; one that runs but does not answer
// within a second (paused) is down with no role and keeps its pid. It fails
// only when no running node answers.
func (StandaloneLauncher) Refresh(ctx context.Context, c *launcher.Cluster) error {
	refreshLiveness(ctx, c)
	answered, running := 0, 0
	var lastErr error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Down {
			continue
		}
		running++
		cl := adminClient(n.Addr)
		role, err := nodeRole(ctx, cl)
		_ = cl.Close()
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", n.Name, err)
			n.Down, n.Role = true, launcher.RoleUnknown
			continue
		}
		answered++
		n.Role = role
	}
	if running > 0 && answered == 0 {
		return fmt.Errorf("redis %s: no running node answered ROLE (last error: %v)", c.Name, lastErr)
	}
	return nil
}

// nodeRole asks a node for its role.
func nodeRole(ctx context.Context, cl *goredis.Client) (string, error) {
	v, err := cl.Do(ctx, "role").Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", fmt.Errorf("empty ROLE reply")
	}
	switch s, _ := v[0].(string); s {
	case "master":
		return launcher.RolePrimary, nil
	case "slave":
		return launcher.RoleReplica, nil
	default:
		return launcher.RoleUnknown, fmt.Errorf("unexpected role %q", s)
	}
}

// WaitHealthy waits until exactly one running node is primary, every other
// running node is a replica with master_link_status:up, and a probe write
// on the primary (key faultbench:probe:0, expiring after 10 s) is
// acknowledged by all of them through WAIT. Without a
// deadline on ctx it gives up after a minute; the error names the node and
// what it was still waiting for.
func (StandaloneLauncher) WaitHealthy(ctx context.Context, c *launcher.Cluster) error {
	ctx, cancel := launcher.WithDefaultTimeout(ctx, defaultHealthyTimeout)
	defer cancel()
	a := newAdmins(c)
	defer a.close()
	last := ""
	for {
		reason := standaloneUnhealthy(ctx, c, a)
		if reason == "" {
			return nil
		}
		// a check cut short by the deadline says less than the one before
		if ctx.Err() == nil || last == "" {
			last = reason
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis %s not healthy: %s: %w", c.Name, last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

func standaloneUnhealthy(ctx context.Context, c *launcher.Cluster, a *admins) string {
	var primaries, replicas, down []int
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !aliveOn(ctx, c, n) {
			down = append(down, i)
			continue
		}
		if c.ProcsOf(n).Stopped(ctx, n.PID) {
			return fmt.Sprintf("%s (pid %d) is paused", n.Name, n.PID)
		}
		role, err := nodeRole(ctx, a.get(i))
		if err != nil {
			a.failed(i, err)
			return fmt.Sprintf("%s (%s) not answering ROLE: %v", n.Name, n.Addr, err)
		}
		if role == launcher.RolePrimary {
			primaries = append(primaries, i)
		} else {
			replicas = append(replicas, i)
		}
	}
	names := func(idx []int) string {
		s := make([]string, len(idx))
		for k, i := range idx {
			s[k] = c.Nodes[i].Name
		}
		return strings.Join(s, ", ")
	}
	switch {
	case len(primaries)+len(replicas) == 0:
		return "no node is running"
	case len(primaries) == 0:
		return fmt.Sprintf("no running node is primary (down: %s)", names(down))
	case len(primaries) > 1:
		return fmt.Sprintf("several nodes are primary: %s", names(primaries))
	}
	for _, i := range replicas {
		n := &c.Nodes[i]
		repl, err := a.get(i).Info(ctx, "replication").Result()
		if err != nil {
			a.failed(i, err)
			return fmt.Sprintf("%s (%s) not answering INFO replication: %v", n.Name, n.Addr, err)
		}
		if st := infoField(repl, "master_link_status"); st != "up" {
			return fmt.Sprintf("replica %s: master_link_status:%s", n.Name, st)
		}
	}
	if len(replicas) > 0 {
		p := primaries[0]
		reason, err := probeReplication(ctx, a.get(p), c.Nodes[p].Name, probeKeyPrefix+"0", len(replicas))
		if err != nil {
			a.failed(p, err)
			return fmt.Sprintf("%s: probe write: %v", c.Nodes[p].Name, err)
		}
		return reason
	}
	return ""
}
