package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/launcher/sshhost"
	"github.com/faultbench/faultbench/internal/remote"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/workloads"
)

// hostCommands are the hidden commands faultbench runs on node hosts over
// SSH (docs/distributed.md).
func hostCommands() []command {
	return []command{
		{name: sshhost.SpawnCommand, summary: "start a node detached on this host (internal, run over SSH by cluster up --hosts)", hidden: true, run: func(a *app, _ context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s --log FILE -- PROGRAM [ARGS...] (internal: starts a node on an inventory host, docs/distributed.md)\n", sshhost.SpawnCommand)
				return flag.ErrHelp
			}
			if err := sshhost.Spawn(args, a.stdout); err != nil {
				return usagef("%v", err)
			}
			return nil
		}},
		{name: sshhost.CheckCommand, summary: "check what a node needs on this host: programs on PATH, free ports (internal, run over SSH by cluster up --hosts)", hidden: true, run: func(a *app, _ context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s [--program NAME]... [--port ADDR:PORT]... (internal: run on every node host by cluster up --hosts, docs/distributed.md)\n", sshhost.CheckCommand)
				return flag.ErrHelp
			}
			if err := sshhost.CheckNeedsHere(args, a.stdout); err != nil {
				return usagef("%v", err)
			}
			return nil
		}},
		{name: sshhost.FindCommand, summary: "find processes by a pattern over their command lines (internal, run over SSH for an existing cluster's nodes)", hidden: true, run: func(a *app, _ context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s --pattern RE (internal: finds an existing cluster's node on its host, docs/distributed.md)\n", sshhost.FindCommand)
				return flag.ErrHelp
			}
			if err := sshhost.FindProcesses(args, a.stdout); err != nil {
				return usagef("%v", err)
			}
			return nil
		}},
		{name: sshhost.CleanupCommand, summary: "stop the nodes faultbench started on this host and remove their directories (internal, run over SSH by cleanup --hosts)", hidden: true, run: func(a *app, ctx context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s --dir DIR (internal: run on every host by `faultbench cleanup --hosts`, docs/distributed.md)\n", sshhost.CleanupCommand)
				return flag.ErrHelp
			}
			return sshhost.CleanNodes(ctx, args, a.stdout)
		}},
	}
}

// newManager is clusterctl.New whose state store reaches the inventory
// hosts of clusters started with --hosts (their recorded inventory).
func newManager(stateDir string, env *launcher.Env, a *app) *clusterctl.Manager {
	m := clusterctl.New(stateDir, env, a.targets)
	m.Store.OpenHosts = func(inventory string) (launcher.Hosts, error) {
		return openNodeHosts(inventory, false)
	}
	return m
}

// openNodeHosts reads the inventory at path and returns its hosts, reached
// over SSH (one pooled connection per host, opened on first use).
func openNodeHosts(path string, acceptNew bool) (*sshhost.NodeHosts, error) {
	inv, err := remote.Load(path)
	if err != nil {
		return nil, err
	}
	return sshhost.NewNodeHosts(inv, remote.NewPool(inv, acceptNew), func() (*remote.Binary, error) {
		p, err := selfBinary()
		if err != nil {
			return nil, err
		}
		return remote.NewBinary(p)
	})
}

// nodeHostsFor sets up `cluster up KIND --hosts FILE`: the inventory's
// node hosts as env.Remote and the spec's Hosts, one node per host, for a
// kind whose entry declares what its nodes need on a host
// (targets.Target.OnHosts). nodes and replicas are what the user asked (<0:
// not asked): unasked, a kind without replicas takes every node host, a
// kind with replicas its default number of nodes and as many replicas each
// as the hosts allow.
func (a *app) nodeHostsFor(kind, file string, acceptNew bool, nodes, replicas int, nodesWhat string, env *launcher.Env, spec *launcher.Spec) error {
	t, err := a.targets.Get(kind)
	if err != nil || t.OnHosts == nil {
		return usagef("--hosts: %s nodes cannot run on inventory hosts yet (supported: %s)", kind, strings.Join(a.targets.OnNodeHosts(), ", "))
	}
	hs, err := openNodeHosts(file, acceptNew)
	if err != nil {
		return usagef("--hosts: %v", err)
	}
	inv, _ := remote.Load(file)
	nh := inv.WithRole(remote.RoleNode)
	if len(nh) == 0 {
		return usagef("--hosts %s: no host has role node", file)
	}
	if !t.Size.HasReplicas {
		if replicas > 0 {
			return usagef("--hosts: %s has no replicas", kind)
		}
		replicas = 0
		if nodes <= 0 {
			nodes = len(nh)
		}
	} else {
		if nodes <= 0 {
			nodes = t.Size.Nodes
		}
		if replicas < 0 {
			replicas = len(nh)/nodes - 1
		}
	}
	total := nodes * (1 + replicas)
	if replicas < 0 || total > len(nh) {
		return usagef("%s %d: the inventory %s has only %d node hosts (%s needs %d, one node per host)", nodesWhat, nodes, file, len(nh), t.Size.Describe(nodes, max(replicas, 0)), max(total, nodes))
	}
	spec.Nodes, spec.Replicas = nodes, replicas
	spec.Hosts = nil
	for _, h := range nh[:total] {
		spec.Hosts = append(spec.Hosts, h.Name)
	}
	env.Remote = hs
	return nil
}

// cleanupHosts implements `cleanup --hosts FILE` (sshhost.CleanupHosts).
func (a *app) cleanupHosts(ctx context.Context, file string, acceptNew bool, stateDir string) error {
	inv, err := remote.Load(file)
	if err != nil {
		return usagef("--hosts: %v", err)
	}
	p, err := selfBinary()
	if err != nil {
		return err
	}
	return sshhost.CleanupHosts(ctx, inv, acceptNew, p, stateDir, a.stdout)
}

// upOnHosts applies `cluster up --hosts` to spec (nothing without --hosts).
func (a *app) upOnHosts(kind, file string, acceptNew bool, set map[string]bool, env *launcher.Env, spec *launcher.Spec) error {
	if file == "" {
		if acceptNew {
			return usagef("--accept-new-host-keys is for --hosts only")
		}
		return nil
	}
	for _, f := range []string{"net", "dir"} {
		if set[f] {
			return usagef("--%s and --hosts: a cluster on inventory hosts has one node per host, in the hosts' own directories and network", f)
		}
	}
	nodes, replicas := -1, -1
	if set["nodes"] {
		nodes = spec.Nodes
	}
	if set["replicas"] {
		replicas = spec.Replicas
	}
	return a.nodeHostsFor(kind, file, acceptNew, nodes, replicas, "--nodes", env, spec)
}

// scenarioOnHosts implements `scenario X --nodes-from FILE`: the scenario's
// cluster on the inventory's node hosts, one node per host.
func (a *app) scenarioOnHosts(ctx context.Context, sc *scenario.Scenario, file, inventory, runs, stateDir string, status, quiet bool, metricsAddr string) error {
	if len(sc.Target.Endpoints) > 0 {
		return usagef("--nodes-from and target.endpoints: the scenario's cluster is either started on the hosts or an existing one")
	}
	if _, ok := sc.Target.Options[clusterctl.OptNet]; ok {
		return usagef("--nodes-from and target.options.%s: a cluster on inventory hosts uses the hosts' own network (partition and heal act on the hosts' nftables)", clusterctl.OptNet)
	}
	env := &launcher.Env{}
	spec := launcher.Spec{Nodes: sc.Target.Nodes}
	replicas := -1
	if sc.Target.Replicas != nil {
		replicas = *sc.Target.Replicas
	}
	if err := a.nodeHostsFor(sc.Target.Kind, inventory, false, sc.Target.Nodes, replicas, "target.nodes", env, &spec); err != nil {
		return err
	}
	return a.runScenarioSpec(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: runs, StateDir: stateDir,
		Out: a.stdout, Err: a.stderr, Status: status, Quiet: quiet, MetricsAddr: metricsAddr, Version: version, Commit: commit,
		Targets: a.targets, NodeHosts: env.Remote, NodeHostNames: spec.Hosts,
	})
}

// clusterAttach implements `cluster attach --hosts FILE`: the existing
// cluster the inventory describes (its cluster:) is recorded in the state
// directory with each node's process as found now, so that `fault`,
// `cluster status` and scenarios act on it; nothing is installed or
// started (docs/distributed.md).
func (a *app) clusterAttach(ctx context.Context, file string, acceptNew bool, stateDir string) error {
	if file == "" {
		return usagef("cluster attach needs --hosts FILE: an inventory with a cluster: section")
	}
	inv, err := remote.Load(file)
	if err != nil {
		return usagef("--hosts: %v", err)
	}
	if inv.Cluster == nil {
		return usagef("--hosts %s: no cluster: section (an existing cluster: kind, nodes with host, endpoint and unit, pid_file or process)", file)
	}
	t, err := a.targets.Get(inv.Cluster.Kind)
	if err != nil {
		return usagef("%s: cluster.kind: %v", file, err)
	}
	if t.Launcher == nil {
		return usagef("%s: cluster.kind %s: faultbench has no health check or roles for it (kinds: %s)", file, t.Kind, strings.Join(a.targets.Launchable(), ", "))
	}
	hs, err := openNodeHosts(file, acceptNew)
	if err != nil {
		return usagef("--hosts: %v", err)
	}
	env, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	m := newManager(stateDir, env, a)
	if _, err := m.Load(inv.Cluster.Name); err == nil {
		return fmt.Errorf("a cluster %s is already recorded (cluster down %s, or cleanup --hosts %s, first)", inv.Cluster.Name, inv.Cluster.Name, file)
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, err := sshhost.ExistingCluster(actx, hs, inv.Cluster)
	if err != nil {
		return err
	}
	if err := m.Save(c); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "existing %s cluster %q attached from %s (faultbench starts nothing; cleanup --hosts %s leaves it running as found)\n", c.Kind, c.Name, file, file)
	_, err = m.Status(ctx, c.Name, a.stdout)
	return err
}
