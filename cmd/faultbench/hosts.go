package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

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
// node hosts (the first nodes of them when nodes > 0) as env.Remote and the
// spec's Hosts, for a kind whose entry says its nodes run on hosts
// (targets.Target.NodeHosts).
func (a *app) nodeHostsFor(kind, file string, acceptNew bool, nodes int, nodesWhat string, env *launcher.Env, spec *launcher.Spec) error {
	if t, err := a.targets.Get(kind); err != nil || !t.NodeHosts {
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
	if nodes > len(nh) {
		return usagef("%s %d: the inventory %s has only %d node hosts (one node per host)", nodesWhat, nodes, file, len(nh))
	}
	if nodes == 0 {
		nodes = len(nh)
	}
	spec.Nodes = nodes
	spec.Hosts = nil
	for _, h := range nh[:nodes] {
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
	for _, f := range []string{"net", "dir", "replicas"} {
		if set[f] {
			return usagef("--%s and --hosts: a cluster on inventory hosts has one node per host, in the hosts' own directories and network", f)
		}
	}
	nodes := 0
	if set["nodes"] {
		nodes = spec.Nodes
	}
	return a.nodeHostsFor(kind, file, acceptNew, nodes, "--nodes", env, spec)
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
	if err := a.nodeHostsFor(sc.Target.Kind, inventory, false, sc.Target.Nodes, "target.nodes", env, &spec); err != nil {
		return err
	}
	if sc.Target.Replicas != nil && *sc.Target.Replicas > 0 {
		return usagef("--nodes-from: replicas %d: a cluster on inventory hosts has one node per host and no replicas", *sc.Target.Replicas)
	}
	return a.runScenarioSpec(ctx, experiment.ScenarioSpec{
		Scenario: sc, File: file, OpenWorkload: workloads.Open, RunsDir: runs, StateDir: stateDir,
		Out: a.stdout, Err: a.stderr, Status: status, Quiet: quiet, MetricsAddr: metricsAddr, Version: version, Commit: commit,
		Targets: a.targets, NodeHosts: env.Remote, NodeHostNames: spec.Hosts,
	})
}
