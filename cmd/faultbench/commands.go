package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/clusterctl"
	"github.com/faultbench/faultbench/internal/diskfs"
	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

func commands() []command {
	return append([]command{
		{name: "load", summary: "insert records (YCSB load phase)", run: func(a *app, ctx context.Context, args []string) error {
			return a.phase(ctx, runner.Load, args)
		}},
		{name: "run", summary: "run the operation mix and measure (YCSB run phase)", run: func(a *app, ctx context.Context, args []string) error {
			return a.phase(ctx, runner.Run, args)
		}},
		{name: "cluster", summary: "start, stop or inspect a local cluster: cluster up|down|status TARGET", run: (*app).cluster},
		{name: "scenario", summary: "run a scenario file: cluster, load, faults, checks, report", run: (*app).scenarioCmd},
		{name: "demo", summary: "the failover demo: kill -9 of an etcd leader under load, in about a minute and a half", run: (*app).demo},
		{name: "sweep", summary: "scalability sweeps: load steps (SB1), cluster sizes (SB2) or both (SB3), with the scaling curve", run: (*app).sweepCmd},
		{name: "upb", summary: "the Under Pressure Benchmark (UPB): T(K,F), D_T, D_F; upb summarize FILE.csv", run: (*app).upbCmd},
		{name: "reproduce", summary: "reproduce one of the five papers: its scenarios in order, its page's tables from the runs", run: (*app).reproduceCmd},
		{name: "fault", summary: "inject a fault into a cluster started by `cluster up`: fault ACTION NODE", run: (*app).faultCmd},
		{name: "report", summary: "render report.html and plots/*.png of a run directory", run: (*app).reportCmd},
		{name: "compare", summary: "compare run directories side by side (text, md, csv, html)", run: (*app).compareCmd},
		{name: "check", summary: "check a run's operation history: check RUN_DIR --checker isolation|linearizable|bank|set", run: (*app).checkCmd},
		{name: "k8s", summary: "write Kubernetes manifests: k8s manifest SCENARIO --clients N (an Indexed Job of workers)", run: (*app).k8sCmd},
		{name: "cleanup", summary: "end processes and remove files a crashed faultbench left behind", run: (*app).cleanup},
		{name: "node", summary: "run a database node (internal, used by launchers)", hidden: true, run: (*app).node},
		{name: distrib.WorkerCommand, summary: "serve a coordinator on stdin/stdout (internal, started over SSH by --clients, or locally by -p clients.process=true)", hidden: true, run: func(a *app, ctx context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s (internal: started over SSH by `faultbench run --clients`, or locally by `-p clients.process=true`; speaks JSON lines on stdin/stdout, docs/distributed.md)\n", distrib.WorkerCommand)
				return flag.ErrHelp
			}
			fs := a.newFlags(distrib.WorkerCommand, distrib.WorkerCommand+" [--connect HOST:PORT]", "  faultbench worker --connect coordinator:7070")
			connect := fs.String("connect", "", "dial the coordinator at `host:port` (`run --listen`) instead of serving stdin/stdout (SSH)")
			pos, err := parse(fs, args)
			if err != nil {
				return err
			}
			if len(pos) > 0 {
				return usagef("%s takes no arguments (it is started by the coordinator), got %q", distrib.WorkerCommand, pos[0])
			}
			if *connect == "" {
				return distrib.Work(ctx, os.Stdin, a.stdout, a.targets)
			}
			if _, _, err := net.SplitHostPort(*connect); err != nil {
				return usagef("--connect %q: want host:port", *connect)
			}
			dctx, cancel := context.WithTimeout(ctx, distrib.ConnectTimeout)
			c, err := distrib.Dial(dctx, *connect)
			cancel()
			if err != nil {
				return err
			}
			defer c.Close()
			return distrib.Work(ctx, c, c, a.targets)
		}},
		{name: netns.ExecCommand, summary: "run a program inside a network namespace (internal, used by --net)", hidden: true, run: func(a *app, _ context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s NAMESPACE -- PROGRAM [ARGS...] (internal: runs a node inside its network namespace, docs/faults.md)\n", netns.ExecCommand)
				return flag.ErrHelp
			}
			return netns.Exec(args)
		}},
		{name: diskfs.ServeCommand, summary: "serve one node's disk-fault file system (internal, used by --disk-faults)", hidden: true, run: func(a *app, ctx context.Context, args []string) error {
			fs := flag.NewFlagSet("faultbench "+diskfs.ServeCommand+" serve", flag.ContinueOnError)
			fs.SetOutput(a.stderr)
			data := fs.String("data", "", "the node's data directory: the mount point (required)")
			dieWithParent := fs.Bool("die-with-parent", false, "unmount and exit when the starting process dies")
			if len(args) == 0 || args[0] != "serve" {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s serve --data DIR [--die-with-parent] (internal: the file system of disk faults, docs/faults.md)\n", diskfs.ServeCommand)
				if isHelp(args) {
					return flag.ErrHelp
				}
				return usagef("%s: want the subcommand serve", diskfs.ServeCommand)
			}
			if err := fs.Parse(args[1:]); err != nil {
				return usagef("%v", err)
			}
			if *data == "" || fs.NArg() > 0 {
				return usagef("%s serve: want --data DIR and nothing else", diskfs.ServeCommand)
			}
			return diskfs.Serve(ctx, *data, diskfs.ServeOptions{DieWithParent: *dieWithParent})
		}},
		{name: netns.RelayCommand, summary: "delay relay inside a node's network namespace (internal, used by fault delay)", hidden: true, run: func(a *app, ctx context.Context, args []string) error {
			if isHelp(args) {
				fmt.Fprintf(a.stdout, "Usage: faultbench %s --token T --ip IP --port P --delay D --jitter J (internal: the relay of `fault delay`, docs/faults.md)\n", netns.RelayCommand)
				return flag.ErrHelp
			}
			return netns.RunRelay(ctx, args)
		}},
	}, hostCommands()...)
}

// selfBinary is the faultbench executable to install on client hosts:
// $FAULTBENCH_SELF when set (tests), else this executable.
func selfBinary() (string, error) {
	if p := os.Getenv("FAULTBENCH_SELF"); p != "" {
		return p, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the faultbench binary to install on the client hosts: %w", err)
	}
	return p, nil
}

const phaseExamples = `  faultbench load etcd -P workloads/workloada -p recordcount=100000 -threads 16
  faultbench run etcd -P workloads/workloada -p operationcount=0 -p maxexecutiontime=60 -threads 32 -target 5000 -s
  faultbench run redis -p redis.mode=cluster -p redis.addr=127.0.0.1:7000 -P workloads/workloadb -p maxexecutiontime=30
  faultbench run etcd -P workloads/workloada -p maxexecutiontime=30 -p measurement.window=100ms -p warmup=5s
  faultbench run etcd --endpoints http://10.0.0.5:2379,http://10.0.0.6:2379 -P workloads/workloadb   # an existing cluster
  faultbench load etcd -P workloads/workloada --endpoints http://10.0.0.5:2379 --clients hosts.yaml -threads 12   # from every client host over SSH`

// phase implements `load` and `run`.
func (a *app) phase(ctx context.Context, phase runner.Phase, args []string) error {
	name := string(phase)
	fs := a.newFlags(name, name+" TARGET [-P file]... [-p key=value]... [flags]\n\nTargets: "+strings.Join(a.targets.Kinds(), ", ")+
		"\nProperties: YCSB's (docs/workloads.md) plus the driver's (docs/targets-*.md).\n"+
		"As in YCSB, -t runs the transaction (run) phase and -load the load phase,\nwhichever command was given.", phaseExamples)
	var files, overrides listFlag
	fs.Var(&files, "P", "property `file` (Java properties; repeatable, later files win)")
	fs.Var(&overrides, "p", "property override `key=value` (repeatable, wins over files)")
	threads := fs.Int("threads", 0, fmt.Sprintf("worker threads (sets threadcount; default 1; at most %d)", experiment.MaxThreads))
	tgt := fs.Float64("target", 0, "target `ops/s` in total (open loop; sets target); 0 = closed loop")
	status := fs.Bool("s", false, "plain status lines every status.interval (default 10 s) instead of the progress bar")
	runs := fs.String("runs", "runs", "parent `dir`ectory of run directories")
	runName := fs.String("name", "", "run name in the run directory's name (default "+name+"-TARGET)")
	quiet := fs.Bool("q", false, "quiet: no progress, no summary")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at `host:port`/metrics while running, e.g. 127.0.0.1:9464")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where `cluster up` records clusters")
	doTx := fs.Bool("t", false, "YCSB's -t: run the transaction phase (the same as `faultbench run`)")
	doLoad := fs.Bool("load", false, "YCSB's -load: run the load phase (the same as `faultbench load`)")
	endpoints := fs.String("endpoints", "", "an existing cluster's `addresses`, comma-separated (sets the target's address property, e.g. etcd.endpoints); faultbench only measures it (no faults)")
	clientsFile := fs.String("clients", "", "run the phase from the client hosts of this inventory `file` over SSH (docs/distributed.md); threads, target and the insert key range are split among them")
	listen := fs.String("listen", "", "instead of --clients: wait for --workers workers to connect at `host:port` (`faultbench worker --connect`, e.g. a Kubernetes Job: faultbench k8s manifest)")
	nWorkers := fs.Int("workers", 0, "--listen: how many workers to wait for")
	acceptNew := fs.Bool("accept-new-host-keys", false, "--clients: add the SSH host keys of hosts not yet in known_hosts (a changed key is refused anyway)")
	recordHistory := fs.Bool("history", false, "run: record every operation in RUN_DIR/history.jsonl (sets history=true; docs/checks.md)")
	var checks listFlag
	fs.Var(&checks, "check", "run: a history `checker` to judge RUN_DIR/history.jsonl with when the run ends, its verdict in summary.json (repeatable: "+strings.Join(histcheck.Names(), ", ")+"); implies --history")
	failOn := fs.Bool("fail-on-anomaly", false, fmt.Sprintf("run: exit %d when a --check checker found anomalies (valid=false; for CI), 0 otherwise", exitAnomaly))
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var checkNames []string
	for _, c := range checks {
		for _, n := range strings.Split(c, ",") {
			if n = strings.TrimSpace(n); !histcheck.IsChecker(n) {
				return usagef("--check %q: allowed %s", n, strings.Join(histcheck.Names(), ", "))
			}
			checkNames = append(checkNames, n)
		}
	}
	if (*recordHistory || len(checkNames) > 0 || *failOn) && phase != runner.Run {
		return usagef("--history, --check and --fail-on-anomaly are for the run phase")
	}
	if *failOn && len(checkNames) == 0 {
		return usagef("--fail-on-anomaly needs a --check checker")
	}
	if *recordHistory || len(checkNames) > 0 {
		overrides = append(overrides, experiment.KeyHistory+"=true")
	}
	if len(pos) != 1 {
		return usagef("%s needs exactly one TARGET (one of %s), got %d arguments", name, strings.Join(a.targets.Kinds(), ", "), len(pos))
	}
	t, err := a.targets.Get(pos[0])
	if err != nil {
		return usagef("%v", err)
	}
	if set["threads"] && (*threads < 1 || *threads > experiment.MaxThreads) {
		return usagef("-threads %d: allowed 1..%d", *threads, experiment.MaxThreads)
	}
	if set["target"] && (*tgt < 0 || math.IsNaN(*tgt) || math.IsInf(*tgt, 0)) {
		return usagef("-target %v: allowed 0 (closed loop) or a positive number of ops/s", *tgt)
	}
	if *doTx && *doLoad {
		return usagef("-t and -load both given: choose one phase")
	}
	if set["name"] && !clusterctl.ValidName(*runName) {
		return usagef("-name %q: allowed letters, digits, '-' and '_'", *runName)
	}
	pa := experiment.PhaseArgs{Phase: phase, Files: files, Overrides: overrides, Notes: a.stderr}
	if set["threads"] {
		pa.Threads = threads
	}
	if set["target"] {
		pa.Rate = tgt
	}
	if *doTx {
		pa.ForcePhase = runner.Run
	} else if *doLoad {
		pa.ForcePhase = runner.Load
	}
	if set["endpoints"] {
		pa.Endpoints = endpoints
	}
	p, phase, err := experiment.PhaseProperties(t, pa)
	if err != nil {
		return err
	}
	bin, _ := selfBinary() // needed by client processes and hosts only, which say so when it is missing
	a.warnLeftovers(*stateDir)
	return distrib.RunPhase(ctx, distrib.Spec{
		Spec: experiment.Spec{
			Target: pos[0], Phase: phase, Props: p, RunsDir: *runs, Name: *runName,
			Status: *status, Quiet: *quiet, Out: a.stdout, Err: a.stderr, StateDir: *stateDir,
			Version: version, Commit: commit, MetricsAddr: *metricsAddr, Targets: a.targets,
			Checks: checkNames, FailOnAnomaly: *failOn,
		},
		ClientsFile: *clientsFile, AcceptNewHostKeys: *acceptNew, Listen: *listen, Workers: *nWorkers, Binary: bin,
	})
}

func (a *app) warnLeftovers(stateDir string) {
	env, err := launcher.NewEnv()
	if err != nil {
		return
	}
	for _, c := range newManager(stateDir, env, a).Leftovers() {
		fmt.Fprintf(a.stderr, "warning: cluster %s was left by a faultbench that died (pid %d): %d processes still run, data in %s; `faultbench cleanup` removes it\n",
			c.Name, c.OwnerPID, len(c.RunningNodes()), c.Dir)
	}
}

const clusterExamples = `  faultbench cluster up etcd --nodes 3
  faultbench cluster up redis-cluster --nodes 3 --replicas 1 -o redis.cluster-node-timeout=1000
  faultbench cluster up txkv --servers 3                  # coordinator + 3 region servers
  faultbench cluster up etcd --nodes 5 --net              # each member in its own network namespace (root)
  faultbench cluster up etcd --disk-faults                # each member's data on a FUSE layer: power-loss, disk-delay ...
  faultbench cluster up redis --clock-faults              # the server under libfaketime: clock-offset, clock-bump ...
  faultbench cluster up cassandra --nodes 3 --rf 3
  faultbench cluster up etcd --hosts hosts.yaml         # a member on each node host of the inventory, over SSH
  faultbench cluster status etcd
  faultbench cluster down etcd`

// cluster implements `cluster up|down|status`.
func (a *app) cluster(ctx context.Context, args []string) error {
	fs := a.newFlags("cluster", "cluster up|down|status TARGET [flags], cluster attach --hosts FILE\n\nup starts a local cluster that keeps running after this command (nodes are\nrecorded in a state file); down stops it and removes its data; status shows\nits nodes, roles, pids and addresses; attach records the existing cluster an\ninventory describes (its cluster:) for faults, starting nothing.\nTargets that faultbench can start: "+strings.Join(a.targets.Launchable(), ", "), clusterExamples)
	reg := a.targets
	nodes := fs.Int("nodes", 0, "nodes ("+nodesHelp(reg)+"); default per target")
	aliases := map[string]nodesAlias{}
	for _, k := range reg.Kinds() {
		t, _ := reg.Get(k)
		if a := t.Size.NodesAlias; a != "" {
			aliases[a] = nodesAlias{owner: t, n: fs.Int(a, 0, fmt.Sprintf("%s only: the same as --nodes (%s)", k, t.Size.NodesAre))}
		}
	}
	optFlags := map[string]optionFlag{}
	for _, k := range reg.Kinds() {
		t, _ := reg.Get(k)
		for _, of := range t.OptionFlags {
			optFlags[of.Flag] = optionFlag{owner: t, option: of.Option, v: fs.String(of.Flag, "", fmt.Sprintf("%s only: %s (the same as -o %s=V)", k, of.Usage, of.Option))}
		}
	}
	replicas := fs.Int("replicas", -1, "replicas per master ("+strings.Join(withReplicas(reg), ", ")+"); default per target")
	dir := fs.String("dir", "", "directory for node data and logs (default: a new temp dir)")
	name := fs.String("name", "", "cluster name in the state file (default: the target)")
	keep := fs.Bool("keep-data", false, "down: keep data directories")
	hostsFile := fs.String("hosts", "", "up: one node per `node`-role host of this inventory file, over SSH (etcd; docs/distributed.md)")
	acceptNew := fs.Bool("accept-new-host-keys", false, "--hosts: add the SSH host keys of hosts not yet in known_hosts (a changed key is refused anyway)")
	netNS := fs.Bool("net", false, "up: every node in a network namespace of its own (198.18.0.0/15, needs root), for network faults (docs/faults.md)")
	diskFaults := fs.Bool("disk-faults", false, "up: every node's data directory on a FUSE layer of its own, for power-loss and disk faults (docs/faults.md; the same as -o disk=fuse)")
	clockFaults := fs.Bool("clock-faults", false, "up: every node under libfaketime with a clock of its own, for clock faults; C and JVM kinds only (docs/faults.md; the same as -o clock=faketime)")
	var opts listFlag
	fs.Var(&opts, "o", "launcher option `key=value` (repeatable), see docs/targets-*.md")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where clusters are recorded")
	timeout := fs.Duration("timeout", 0, "deadline for the cluster to become healthy (default per target: 2m, cassandra 5m)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if len(pos) == 1 && pos[0] == "status" && !set["name"] {
		return a.clusterStatusAll(ctx, *stateDir)
	}
	if len(pos) == 1 && pos[0] == "attach" {
		return a.clusterAttach(ctx, *hostsFile, *acceptNew, *stateDir)
	}
	if len(pos) != 2 {
		return usagef("cluster needs an action (up, down, status) and a TARGET")
	}
	action, kind := pos[0], pos[1]
	if action != "up" && action != "down" && action != "status" {
		return usagef("unknown cluster action %q (up, down, status)", action)
	}
	cname := *name
	if cname == "" {
		cname = kind
	}
	if !clusterctl.ValidName(cname) {
		what := "--name"
		if *name == "" {
			what = "TARGET"
		}
		return usagef("%s %q: %s", what, cname, clusterctl.NameRule)
	}
	if set["timeout"] && *timeout <= 0 {
		return usagef("--timeout %v: must be positive (e.g. 90s)", *timeout)
	}
	var t *targets.Target
	o := map[string]string{}
	if action == "up" {
		if t, err = reg.Get(kind); err != nil {
			return usagef("%v", err)
		}
		if t.Launcher == nil {
			return usagef("faultbench cannot start %s clusters (it can start %s); point the driver at yours with -p %s=HOST:PORT", kind, strings.Join(reg.Launchable(), ", "), t.EndpointKey)
		}
		if set["nodes"] && (*nodes < 1 || *nodes > maxNodes) {
			return usagef("--nodes %d: allowed 1..%d (%s: %s)", *nodes, maxNodes, kind, t.Size.NodesAre)
		}
		n, err := clusterNodes(t, *nodes, aliases, set)
		if err != nil {
			return err
		}
		*nodes = n
		if set["replicas"] {
			if !t.Size.HasReplicas {
				return usagef("--replicas is not for %s (it has no replicas per node; it is for %s)", kind, strings.Join(withReplicas(reg), ", "))
			}
			if *replicas < 0 || *replicas > maxNodes {
				return usagef("--replicas %d: allowed 0..%d replicas per %s", *replicas, maxNodes, strings.TrimSuffix(t.Size.NodesAre, "s"))
			}
		} else {
			*replicas = -1
		}
		for _, kv := range opts {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return usagef("-o %q: expected key=value", kv)
			}
			if err := t.CheckOptionKey(k); err != nil {
				return usagef("-o %s: %v", kv, err)
			}
			o[k] = v
		}
		if err := applyOptionFlags(t, optFlags, o); err != nil {
			return err
		}
		if err := t.CheckOptionValues(o); err != nil {
			return usagef("-o: %v", err)
		}
		if !set["timeout"] {
			*timeout = t.StartTimeout()
		}
	} else {
		if !set["timeout"] {
			*timeout = 2 * time.Minute
		}
		for name, of := range optFlags {
			if set[name] {
				return usagef("--%s is for `cluster up %s`, not `cluster %s`", name, of.owner.Kind, action)
			}
		}
		for _, f := range []string{"nodes", "replicas", "dir", "o", "keep-data", "net", "disk-faults", "clock-faults", "hosts", "accept-new-host-keys"} {
			if set[f] && !(f == "keep-data" && action == "down") {
				return usagef("--%s is for `cluster up`, not `cluster %s`", f, action)
			}
		}
	}
	env, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	m := newManager(*stateDir, env, a)
	switch action {
	case "up":
		if *netNS {
			o[clusterctl.OptNet] = clusterctl.NetNamespaces
		}
		if *diskFaults {
			o[clusterctl.OptDisk] = clusterctl.DiskFuse
		}
		if *clockFaults {
			o[launcher.OptClock] = launcher.ClockFaketime
		}
		spec := launcher.Spec{Name: cname, Nodes: *nodes, Replicas: *replicas, Dir: *dir, Detached: true, KeepData: *keep, Options: o}
		if err := a.upOnHosts(kind, *hostsFile, *acceptNew, set, env, &spec); err != nil {
			return err
		}
		uctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		c, err := m.Up(uctx, kind, spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s cluster %q is up with %d nodes: %s\n", kind, c.Name, len(c.Nodes), strings.Join(c.Endpoints(), ","))
		_, err = m.Status(ctx, c.Name, a.stdout)
		return err
	case "down":
		if *timeout <= 0 {
			*timeout = 2 * time.Minute
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *timeout)
		defer cancel()
		if err := m.Down(dctx, cname); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "cluster %q is down\n", cname)
		return nil
	default:
		_, err := m.Status(ctx, cname, a.stdout)
		return err
	}
}

// maxNodes bounds --nodes and --replicas: every node is a process on this
// machine.
const maxNodes = 64

// clusterStatusAll implements `cluster status` without a target: every
// recorded cluster that runs.
func (a *app) clusterStatusAll(ctx context.Context, stateDir string) error {
	env, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	m := newManager(stateDir, env, a)
	names := m.Running()
	if len(names) == 0 {
		fmt.Fprintf(a.stdout, "no cluster is running (state dir %s); start one with `faultbench cluster up etcd`\n", stateDir)
		return nil
	}
	var errs []error
	for i, n := range names {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		if _, err := m.Status(ctx, n, a.stdout); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// optionFlag is a `cluster up` flag that sets a launcher option of one
// target kind (targets.OptionFlag).
type optionFlag struct {
	owner  *targets.Target
	option string
	v      *string
}

// applyOptionFlags moves the option flags given on the command line into
// the launcher options o: a flag of another kind is refused, and a flag
// and an -o of the same option must agree.
func applyOptionFlags(t *targets.Target, flags map[string]optionFlag, o map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		f := flags[name]
		if *f.v == "" {
			continue
		}
		if f.owner != t {
			return usagef("--%s is for %s; %s has no such option", name, f.owner.Kind, t.Kind)
		}
		if old, ok := o[f.option]; ok && old != *f.v {
			return usagef("--%s %s and -o %s=%s disagree; give one", name, *f.v, f.option, old)
		}
		o[f.option] = *f.v
	}
	return nil
}

// clusterNodes reconciles --nodes with the target's alias for it (txkv's
// --servers, its region servers): an alias of another target is refused,
// and both given must agree.
func clusterNodes(t *targets.Target, nodes int, aliases map[string]nodesAlias, set map[string]bool) (int, error) {
	for _, a := range slices.Sorted(maps.Keys(aliases)) {
		v, owner := *aliases[a].n, aliases[a].owner
		switch {
		case !set[a]:
			continue
		case owner != t:
			return 0, usagef("--%s is for %s (its %s); use --nodes for %s", a, owner.Kind, owner.Size.NodesAre, t.Kind)
		case v < 1 || v > maxNodes:
			return 0, usagef("--%s %d: allowed 1..%d (%s)", a, v, maxNodes, owner.Size.NodesAre)
		case nodes != 0 && nodes != v:
			return 0, usagef("--nodes %d and --%s %d disagree; for %s both count %s, give one", nodes, a, v, t.Kind, t.Size.NodesAre)
		}
		nodes = v
	}
	return nodes, nil
}

// nodesAlias is a target's second name for --nodes (txkv's --servers).
type nodesAlias struct {
	owner *targets.Target
	n     *int
}

// nodesHelp says what --nodes counts for each target.
func nodesHelp(reg *targets.Registry) string {
	var parts []string
	for _, k := range reg.Launchable() {
		t, _ := reg.Get(k)
		parts = append(parts, k+": "+t.Size.NodesAre)
	}
	return strings.Join(parts, "; ")
}

// withReplicas lists the launchable targets that have replicas.
func withReplicas(reg *targets.Registry) []string {
	var out []string
	for _, k := range reg.Launchable() {
		if t, _ := reg.Get(k); t.Size.HasReplicas {
			out = append(out, k)
		}
	}
	return out
}

// cleanup implements `cleanup`.
func (a *app) cleanup(ctx context.Context, args []string) error {
	fs := a.newFlags("cleanup", "cleanup [--all] [--hosts FILE]\n\nStops the processes and removes the data of clusters whose faultbench\nprocess died (crash, kill -9). With --all, also clusters started by\n`cluster up`. With --hosts, instead, on every host of the inventory: stops\nthe nodes faultbench started there and removes their directories.", "  faultbench cleanup\n  faultbench cleanup --all\n  faultbench cleanup --hosts hosts.yaml")
	all := fs.Bool("all", false, "also stop clusters started by `cluster up`")
	hostsFile := fs.String("hosts", "", "instead: on every host of this inventory `file`, stop the nodes faultbench started and remove their directories (over SSH)")
	acceptNew := fs.Bool("accept-new-host-keys", false, "--hosts: add the SSH host keys of hosts not yet in known_hosts")
	stateDir := fs.String("state-dir", launcher.DefaultStateDir(), "where clusters are recorded")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("cleanup takes no arguments")
	}
	env, err := launcher.NewEnv()
	if err != nil {
		return err
	}
	if *hostsFile == "" && *acceptNew {
		return usagef("--accept-new-host-keys is for --hosts only")
	}
	if *hostsFile != "" {
		if *all {
			return usagef("--all and --hosts: give one (--hosts cleans the inventory's hosts, --all this machine's clusters)")
		}
		return a.cleanupHosts(context.WithoutCancel(ctx), *hostsFile, *acceptNew, *stateDir)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return newManager(*stateDir, env, a).Cleanup(cctx, *all, a.stdout)
}

// node implements the hidden `node NAME ...` that launchers spawn; each
// target registers the node commands it runs from the binary.
func (a *app) node(ctx context.Context, args []string) error {
	_, names := a.targets.NodeCommand("")
	if len(args) == 0 {
		return usagef("node needs a kind (%s)", strings.Join(names, ", "))
	}
	switch args[0] {
	case "--help", "-h", "-help":
		fmt.Fprintf(a.stdout, "Usage: faultbench node %s FLAGS (internal: launchers run database nodes with it)\n", strings.Join(names, "|"))
		return flag.ErrHelp
	}
	run, _ := a.targets.NodeCommand(args[0])
	if run == nil {
		return usagef("unknown node kind %q", args[0])
	}
	return run(ctx, args[1:])
}

// isHelp reports whether args ask a hidden command for help.
func isHelp(args []string) bool {
	return len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help")
}
