package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInputFirstLine runs the CLI in-process on bad input across the commands:
// each must exit non-zero with a first line that names the flag, field or
// property, its value and what is allowed, before anything starts, and
// never print a Go trace. Nothing here starts a cluster: every case fails
// in validation (a case that got further would fail on the empty state
// directory with another message).
func TestBadInputFirstLine(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FAULTBENCH_STATE_DIR", filepath.Join(dir, "state"))
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wl := write("wl.properties", "recordcount=100\noperationcount=100\nreadproportion=1\n")
	garbage := write("garbage.bin", "\x00\x86\xff\x13binary\x00\n")
	const head = "name: t\ntarget: {kind: etcd, nodes: 3}\nworkload:\n  ycsb: workloada\n  properties: {recordcount: \"100\"}\n"
	sc := func(name, rest string) string { return write(name, head+rest) }
	good := sc("good.yaml", "load: {threads: 2, duration: 10s}\nschedule:\n  - {at: 2s, fault: kill, node: n3, as: victim}\n  - {at: 4s, fault: start, node: victim}\n")
	threads0 := sc("threads0.yaml", "load:\n  threads: 0\n")
	typo := sc("typo.yaml", "load:\n  thredas: 3\n")
	propTypo := write("proptypo.yaml", strings.Replace(head, `{recordcount: "100"}`, `{recordcount: "100", readproportoin: "1"}`, 1))
	n9 := sc("n9.yaml", "load: {duration: 10s}\nschedule:\n  - {at: 2s, fault: kill, node: n9}\n")
	late := sc("late.yaml", "load: {duration: 10s}\nschedule:\n  - {at: 5m, fault: kill, node: n1}\n")
	unbound := sc("unbound.yaml", "load: {duration: 10s}\nschedule:\n  - {at: 2s, fault: kill, node: n1}\n  - {at: 4s, fault: start, node: victim}\n")
	txkvNode := write("txkv.yaml", "name: t\ntarget: {kind: txkv}\nworkload: {ycsb: txn}\nload: {duration: 10s}\nschedule:\n  - {at: 2s, fault: kill, node: n1}\n")
	cassandraScenario := write("cs.yaml", "name: t\ntarget: {kind: cassandra, nodes: 3}\nworkload: {ycsb: workloada}\nload: {duration: 10s}\n")
	redisReplica := write("rc.yaml", "name: t\ntarget: {kind: redis-cluster, nodes: 3, replicas: 1}\nworkload: {ycsb: workloada}\nload: {duration: 10s}\nschedule:\n  - {at: 2s, fault: kill, node: n7}\n")

	hostsBad := write("hostsbad.yaml", "ssh: {user: u, key: /k, known_hosts: /kh}\nhosts:\n  - {name: c1, address: 10.0.0.1, roles: [clint]}\n")
	hostsNodes := write("hostsnodes.yaml", "ssh: {user: u, key: /k, known_hosts: /kh}\nhosts:\n  - {name: n1, address: 10.0.0.1, roles: [node]}\n")
	loadInterrupted := filepath.Join(dir, "interrupted")
	if err := os.MkdirAll(loadInterrupted, 0o755); err != nil {
		t.Fatal(err)
	}
	copyInto(t, testRuns[0], filepath.Join(loadInterrupted, "load"))

	tests := []struct {
		name  string
		args  []string
		code  int
		first string // the first line of stderr (stdout when the code is 0) starts with this
	}{
		// run and load: every flag and property checked before connecting
		{"threads 0", []string{"run", "redis", "-threads", "0"}, 2, "faultbench: -threads 0: allowed 1..10000"},
		{"clients file missing", []string{"load", "etcd", "--clients", filepath.Join(dir, "nope.yaml")}, 2, "faultbench: --clients: inventory: open "},
		{"clients bad role", []string{"load", "etcd", "--clients", hostsBad}, 2, "faultbench: --clients: " + hostsBad + ": hosts[0] (c1).roles: \"clint\": allowed client, node"},
		{"clients without client hosts", []string{"load", "etcd", "--clients", hostsNodes}, 2, "faultbench: --clients " + hostsNodes + ": no host has role client"},
		{"endpoints empty element", []string{"run", "etcd", "--endpoints", "http://a:1,,http://b:2"}, 2, "faultbench: --endpoints \"http://a:1,,http://b:2\": an empty address in the list"},
		{"endpoints and property", []string{"run", "etcd", "--endpoints", "http://a:1", "-p", "etcd.endpoints=http://b:2"}, 2, "faultbench: --endpoints http://a:1 and etcd.endpoints=http://b:2 (-p) both given: choose one"},
		{"k8s without clients", []string{"k8s", "manifest", "scenarios/failover-etcd.yaml", "--image", "x"}, 2, "faultbench: --clients 0: allowed 1..1000"},
		{"k8s without endpoints", []string{"k8s", "manifest", "scenarios/failover-etcd.yaml", "--image", "x", "--clients", "2"}, 2, "faultbench: scenarios/failover-etcd.yaml: no target.endpoints: a Kubernetes run measures an existing cluster"},
		{"check: no such history", []string{"check", filepath.Join(dir, "nosuch.jsonl"), "--checker", "isolation"}, 2, "faultbench: " + filepath.Join(dir, "nosuch.jsonl") + ": no such run directory or history file"},
		{"k8s with faults", []string{"k8s", "manifest", "scenarios/failover-etcd.yaml", "--image", "x", "--clients", "2", "--endpoints", "http://e:2379"}, 2, "faultbench: scenarios/failover-etcd.yaml: the fault schedule (and checks) need nodes faultbench started"},
		{"k8s percent rate", []string{"k8s", "manifest", "scenarios/failover-etcd.yaml", "--image", "x", "--clients", "2", "--endpoints", "http://e:2379", "--no-faults"}, 2, "faultbench: scenarios/failover-etcd.yaml: load.rate 75% is relative to a calibrated capacity"},
		{"listen without workers", []string{"run", "etcd", "--listen", ":0"}, 2, "faultbench: --listen ADDR needs --workers N (1..1000)"},
		{"client processes not a boolean", []string{"run", "redis", "-P", wl, "-p", "clients.process=maybe"}, 2, `faultbench: -p: property clients.process="maybe": not a boolean`},
		{"client processes without clients", []string{"run", "redis", "-P", wl, "-p", "clients.process=true"}, 2, "faultbench: property clients: with clients.process=true: allowed 1..64 client processes"},
		{"client processes too many", []string{"run", "redis", "-P", wl, "-p", "clients.process=true", "-p", "clients=100", "-threads", "200"}, 2, `faultbench: -p: property clients="100": with clients.process=true: allowed 1..64`},
		{"client processes and hosts", []string{"run", "redis", "-P", wl, "-p", "clients.process=true", "-p", "clients=2", "-threads", "2", "--listen", ":0", "--workers", "2"}, 2, "faultbench: -p clients.process=true and client hosts (--clients, --listen) both given"},
		{"accept-new without clients", []string{"load", "etcd", "--accept-new-host-keys"}, 2, "faultbench: --accept-new-host-keys is for --clients only"},
		{"threads too many", []string{"run", "redis", "-threads", "100000"}, 2, "faultbench: -threads 100000: allowed 1..10000"},
		{"negative target", []string{"run", "redis", "-target", "-3"}, 2, "faultbench: -target -3: allowed 0 (closed loop) or a positive number of ops/s"},
		{"binary property file", []string{"run", "redis", "-P", garbage}, 2, "faultbench: " + garbage + ":1: not a properties file"},
		{"threadcount 0", []string{"run", "redis", "-P", wl, "-p", "threadcount=0"}, 2, `faultbench: -p: property threadcount="0": allowed 1..10000`},
		{"target property negative", []string{"run", "redis", "-P", wl, "-p", "target=-1"}, 2, `faultbench: -p: property target="-1": allowed 0`},
		{"status interval 0", []string{"run", "redis", "-P", wl, "-p", "status.interval=0"}, 2, `faultbench: -p: property status.interval="0": must be positive`},
		{"bad percentiles", []string{"run", "redis", "-P", wl, "-p", "hdrhistogram.percentiles=99,abc"}, 2, `faultbench: -p: property hdrhistogram.percentiles="99,abc": "abc": allowed`},
		{"unknown property before connecting", []string{"run", "redis", "-P", wl, "-p", "readproportoin=1"}, 2, "faultbench: unknown properties: readproportoin (-p)"},
		{"bad dotransactions", []string{"run", "redis", "-P", wl, "-p", "dotransactions=maybe"}, 2, `faultbench: -p: property dotransactions="maybe": not a boolean`},
		// settings errors are usage errors (exit 2), naming what the user typed
		{"bad runner.wake", []string{"run", "redis", "-P", wl, "-p", "runner.wake=fast"}, 2, `faultbench: -p: property runner.wake="fast": allowed spin`},
		{"recordcount 0", []string{"load", "redis", "-P", wl, "-p", "recordcount=0"}, 2, `faultbench: -p: property recordcount="0": must be at least 1`},
		{"proportion not a number", []string{"run", "redis", "-P", wl, "-p", "readproportion=x"}, 2, `faultbench: -p: property readproportion="x": not a number`},
		{"bad measurement.interval", []string{"run", "redis", "-P", wl, "-p", "measurement.interval=bogus"}, 2, `faultbench: -p: property measurement.interval="bogus": must be op, intended or both`},
		{"bad maxexecutiontime", []string{"run", "redis", "-P", wl, "-p", "maxexecutiontime=x"}, 2, `faultbench: -p: property maxexecutiontime="x": not a duration`},
		{"bad requestdistribution", []string{"run", "redis", "-P", wl, "-p", "requestdistribution=zipf"}, 2, `faultbench: -p: property requestdistribution="zipf": unknown request distribution`},
		{"negative insertcount", []string{"load", "redis", "-P", wl, "-p", "insertcount=-1"}, 2, `faultbench: -p: property insertcount="-1": must be at least 1`},
		{"missing property file", []string{"run", "redis", "-P", filepath.Join(dir, "nosuch.properties")}, 2, "faultbench: property file: open " + filepath.Join(dir, "nosuch.properties")},
		{"bad runner.wake in a scenario", []string{"scenario", good, "--set", "workload.properties.runner.wake=fast"}, 2, `faultbench: --set workload.properties.runner.wake=fast: property runner.wake="fast": allowed spin`},
		{"upb kmax not a number", []string{"upb", "scenarios/upb-etcd.yaml", "--set", "upb.kmax=x"}, 2, `faultbench: --set upb.kmax=x: "x" is not a valid integer`},
		{"bad driver property value", []string{"run", "etcd", "-P", wl, "-p", "etcd.endpoints=127.0.0.1:1", "-p", "etcd.serializable=maybe"}, 2, `faultbench: etcd driver: -p: property etcd.serializable="maybe": not a boolean`},
		{"no such scenario", []string{"scenario", "nosuch"}, 2, `faultbench: scenario nosuch: no such file, and no built-in scenario "nosuch"`},
		{"unknown target", []string{"load", "mongo"}, 2, `faultbench: unknown target "mongo"`},
		{"unknown flag", []string{"run", "--bogus"}, 2, "faultbench: flag provided but not defined: -bogus"},
		{"bad flag value", []string{"run", "redis", "-threads", "many"}, 2, `faultbench: invalid value "many" for flag -threads`},
		{"both phases", []string{"run", "redis", "-t", "-load"}, 2, "faultbench: -t and -load both given"},
		{"-t without target", []string{"-t"}, 2, "faultbench: run needs exactly one TARGET"},
		{"run name with slash", []string{"load", "etcd", "-name", "../x"}, 2, `faultbench: -name "../x": allowed letters`},
		// cluster up: no silent defaults
		{"nodes 0", []string{"cluster", "up", "etcd", "--nodes", "0"}, 2, "faultbench: --nodes 0: allowed 1..64"},
		{"hosts: another target", []string{"cluster", "up", "cassandra", "--hosts", hostsNodes}, 2, "faultbench: --hosts: cassandra nodes cannot run on inventory hosts yet (supported: etcd, redis, redis-cluster)"},
		{"hosts: no node hosts", []string{"cluster", "up", "etcd", "--hosts", hostsBad}, 2, "faultbench: --hosts: " + hostsBad + ": hosts[0] (c1).roles"},
		{"hosts: more nodes than hosts", []string{"cluster", "up", "etcd", "--hosts", hostsNodes, "--nodes", "3"}, 2, "faultbench: --nodes 3: the inventory " + hostsNodes + " has only 1 node hosts"},
		{"hosts and net", []string{"cluster", "up", "etcd", "--hosts", hostsNodes, "--net"}, 2, "faultbench: --net and --hosts:"},
		{"hosts on down", []string{"cluster", "down", "etcd", "--hosts", hostsNodes}, 2, "faultbench: --hosts is for `cluster up`"},
		{"cleanup hosts and all", []string{"cleanup", "--hosts", hostsNodes, "--all"}, 2, "faultbench: --all and --hosts: give one"},
		{"cleanup accept-new without hosts", []string{"cleanup", "--accept-new-host-keys"}, 2, "faultbench: --accept-new-host-keys is for --hosts only"},
		{"nodes-from: another target", []string{"scenario", cassandraScenario, "--nodes-from", hostsNodes}, 2, "faultbench: --hosts: cassandra nodes cannot run on inventory hosts yet"},
		{"nodes-from: no host for the replicas", []string{"scenario", redisReplica, "--nodes-from", hostsNodes}, 2, "faultbench: target.nodes 3: the inventory " + hostsNodes + " has only 1 node hosts (3 masters with 1 replica each, 6 nodes needs 6"},
		{"nodes-from: more nodes than hosts", []string{"scenario", good, "--nodes-from", hostsNodes}, 2, "faultbench: target.nodes 3: the inventory " + hostsNodes + " has only 1 node hosts"},
		{"spawn without a command", []string{"spawn", "--log", "/tmp/x.log"}, 2, "faultbench: spawn: usage"},
		{"replicas negative", []string{"cluster", "up", "redis-cluster", "--replicas", "-5"}, 2, "faultbench: --replicas -5: allowed 0..64"},
		{"servers 0", []string{"cluster", "up", "txkv", "--servers", "0"}, 2, "faultbench: --servers 0: allowed 1..64"},
		{"unknown launcher option", []string{"cluster", "up", "etcd", "-o", "bogus.option=1"}, 2, "faultbench: -o bogus.option=1: unknown launcher option for etcd (allowed: etcd."},
		{"bad launcher option value", []string{"cluster", "up", "etcd", "-o", "etcd.snapshot-count=abc"}, 2, `faultbench: -o: etcd launcher: option etcd.snapshot-count="abc": want a non-negative integer`},
		{"launcher option out of range", []string{"cluster", "up", "redis-cluster", "-o", "redis.cluster-node-timeout=5"}, 2, `faultbench: -o: redis-cluster launcher: option redis.cluster-node-timeout="5": want milliseconds between 50 and 3600000`},
		{"option without value", []string{"cluster", "up", "etcd", "-o", "etcd.log-level"}, 2, `faultbench: -o "etcd.log-level": expected key=value`},
		{"cluster name with slash", []string{"cluster", "up", "etcd", "--name", "../x"}, 2, `faultbench: --name "../x": allowed are letters, digits`},
		{"replicas for etcd", []string{"cluster", "up", "etcd", "--replicas", "1"}, 2, "faultbench: --replicas is not for etcd"},
		{"timeout 0", []string{"cluster", "up", "etcd", "--timeout", "0s"}, 2, "faultbench: --timeout 0s: must be positive"},
		{"unknown action", []string{"cluster", "frob", "etcd"}, 2, `faultbench: unknown cluster action "frob"`},
		{"down with a path", []string{"cluster", "down", "../x"}, 2, `faultbench: TARGET "../x": allowed are letters`},
		{"nodes on down", []string{"cluster", "down", "etcd", "--nodes", "3"}, 2, "faultbench: --nodes is for `cluster up`"},
		// scenario: each value blamed on where it came from
		{"calibration 0s", []string{"scenario", good, "--set", "load.calibration=0s"}, 2, "faultbench: --set load.calibration=0s: field load.calibration: 0: allowed a positive duration"},
		{"op_timeout 0s", []string{"scenario", good, "--set", "load.op_timeout=0s"}, 2, "faultbench: --set load.op_timeout=0s: field load.op_timeout: 0: allowed a positive duration"},
		{"threads 0 in the file", []string{"scenario", threads0}, 2, "faultbench: " + threads0 + ":7: field load.threads: 0: allowed at least 1"},
		{"unknown nested key", []string{"scenario", typo}, 2, "faultbench: " + typo + ":7: field load.thredas: unknown; allowed keys of load: threads, load_threads, rate"},
		{"workload property typo", []string{"scenario", propTypo}, 2, "faultbench: unknown properties: readproportoin (" + propTypo + ":5 (workload.properties.readproportoin))"},
		{"--set unknown field", []string{"scenario", good, "--set", "load.bogus=1"}, 2, "faultbench: --set load.bogus=1: load has no field bogus (allowed: threads,"},
		{"--set not a number", []string{"scenario", good, "--set", "load.threads=abc"}, 2, `faultbench: --set load.threads=abc: "abc" is not a valid integer`},
		{"--set workload property typo", []string{"scenario", good, "--set", "workload.properties.fieldcont=3"}, 2, "faultbench: unknown properties: fieldcont (--set workload.properties.fieldcont=3)"},
		{"unknown launcher option in a scenario", []string{"scenario", good, "--set", "target.options.etcd.bogus=1"}, 2, "faultbench: --set target.options.etcd.bogus=1: field target.options.etcd.bogus: unknown launcher option for etcd (allowed: etcd."},
		{"bad launcher option value in a scenario", []string{"scenario", good, "--set", "target.options.etcd.election-timeout=xyz"}, 2, `faultbench: --set target.options.etcd.election-timeout=xyz: field target.options.etcd.election-timeout: etcd launcher: option etcd.election-timeout="xyz": want milliseconds`},
		{"load_rate percentage", []string{"scenario", good, "--set", "load.load_rate=50%"}, 2, "faultbench: --set load.load_rate=50%: field load.load_rate: 50%: allowed ops/s"},
		{"step on n9 of 3 nodes", []string{"scenario", n9}, 2, "faultbench: " + n9 + `: schedule: schedule step 1 (at 2s: kill n9): node "n9" is neither a node of cluster etcd (n1, n2, n3)`},
		{"step after the end", []string{"scenario", late}, 2, "faultbench: " + late + ":8: field schedule[0].at: 5m0s is not before the end of the measured run (load.duration 10s)"},
		{"selector never bound", []string{"scenario", unbound}, 2, "faultbench: " + unbound + `: schedule: schedule step 2 (at 4s: start victim): node "victim" is neither a node`},
		{"txkv has no n1", []string{"scenario", txkvNode}, 2, "faultbench: " + txkvNode + `: schedule: schedule step 1 (at 2s: kill n1): node "n1" is neither a node of cluster txkv (coord, s1, s2)`},
		{"redis-cluster has 6 nodes", []string{"scenario", redisReplica}, 2, "faultbench: " + redisReplica + `: schedule: schedule step 1 (at 2s: kill n7): node "n7" is neither a node of cluster redis-cluster (n1, n2, n3, n4, n5, n6)`},
		{"bad durations", []string{"scenario", good, "--durations", "1m,2m"}, 2, `faultbench: --durations "1m,2m": expected steady,down,after`},
		{"dry run of a bad file", []string{"scenario", "--dry-run", n9}, 2, "faultbench: " + n9 + ": schedule:"},
		// fault
		{"fault negative timeout", []string{"fault", "kill", "n1", "-timeout", "-1s"}, 2, "faultbench: -timeout -1s: must be positive"},
		{"fault unknown action", []string{"fault", "frob", "n1"}, 2, `faultbench: unknown fault action "frob"`},
		{"fault cluster with a path", []string{"fault", "kill", "n1", "--cluster", "../x"}, 2, `faultbench: --cluster "../x": allowed are letters`},
		// report
		{"report on a run interrupted in its load phase", []string{"report", loadInterrupted}, 1, "faultbench: " + loadInterrupted + " has no measured run: it was interrupted in its load phase; that phase's measurements are in " + filepath.Join(loadInterrupted, "load")},
		{"report without a directory", []string{"report"}, 2, "faultbench: report needs at least one RUN_DIR"},
		{"verdict table of a run without verdicts", []string{"report", "--verdict-table", testRuns[0]}, 1, "faultbench: verdict table: " + testRuns[0] + ": no checker's verdict"},
		// what succeeds prints what it should, once
		{"dry run", []string{"scenario", "--dry-run", good}, 0, "scenario t (" + good + "): valid; dry run, nothing started"},
		{"cluster status of nothing", []string{"cluster", "status"}, 0, "no cluster is running"},
		{"version", []string{"--version"}, 0, "faultbench dev"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runApp(tc.args...)
			for _, s := range []string{stdout, stderr} {
				if strings.Contains(s, "goroutine ") || strings.Contains(s, "panic:") {
					t.Fatalf("Go trace in the output:\n%s", s)
				}
			}
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			out := stderr
			if tc.code == 0 {
				out = stdout
			}
			first, _, _ := strings.Cut(out, "\n")
			if !strings.HasPrefix(first, tc.first) {
				t.Errorf("first line\n  %q\nwant it to start with\n  %q\n(stderr: %s)", first, tc.first, stderr)
			}
		})
	}
}

// TestBadFlagUsage: a bad flag prints the error once, then the usage, all
// on stderr; --help prints the usage on stdout, without an empty Flags:.
func TestBadFlagUsage(t *testing.T) {
	stdout, stderr, code := runApp("run", "--bogus")
	if code != 2 || stdout != "" {
		t.Fatalf("code %d, stdout %q", code, stdout)
	}
	if n := strings.Count(stderr, "flag provided but not defined"); n != 1 {
		t.Errorf("the error is printed %d times:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "Usage: faultbench run TARGET") {
		t.Errorf("no usage on stderr:\n%s", stderr)
	}
	for _, args := range [][]string{{"upb", "summarize", "--help"}} { // report has flags since --verdict-table
		stdout, stderr, code := runApp(args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: faultbench") {
			t.Errorf("%v: code %d, stderr %q, stdout %q", args, code, stderr, stdout)
		}
		if strings.Contains(stdout, "Flags:") {
			t.Errorf("%v: a command without flags shows Flags:\n%s", args, stdout)
		}
	}
	stdout, _, _ = runApp("run", "--help")
	if !strings.Contains(stdout, "Flags:") || !strings.Contains(stdout, "-threads") {
		t.Errorf("run --help lacks its flags:\n%s", stdout)
	}
}

// TestVersionOnce: --version prints the version and the commit once.
func TestVersionOnce(t *testing.T) {
	cases := []struct{ version, commit, want string }{
		{"dev", "", "faultbench dev"},
		{"v0.3.0", "abc1234", "faultbench v0.3.0 (commit abc1234)"},
		{"abc1234", "abc1234", "faultbench abc1234"},
		{"v0.3.0-2-gabc1234", "abc1234", "faultbench v0.3.0-2-gabc1234"},
	}
	defer func(v, c string) { version, commit = v, c }(version, commit)
	for _, tc := range cases {
		version, commit = tc.version, tc.commit
		stdout, _, code := runApp("--version")
		if code != 0 || stdout != tc.want+"\n" {
			t.Errorf("version %q commit %q: got %q, want %q", tc.version, tc.commit, stdout, tc.want)
		}
	}
}

// TestDryRunPlan: the plan lists the phases, the rates and every step at
// its time from the measured run's start (warm-up included).
func TestDryRunPlan(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FAULTBENCH_STATE_DIR", filepath.Join(dir, "state"))
	f := filepath.Join(dir, "s.yaml")
	doc := "name: plan\ntarget: {kind: etcd}\nworkload: {ycsb: workloada, properties: {recordcount: \"1000\"}}\n" +
		"load: {threads: 4, rate: 75%, load_rate: 500, warmup: 5s, duration: 1m}\n" +
		"schedule:\n  - {at: 10s, fault: kill, node: leader, as: victim}\n  - {at: 30s, fault: start, node: victim}\nchecks: [lost-writes]\n"
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runApp("scenario", "--dry-run", f)
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	for _, want := range []string{
		"etcd, 3 members: n1, n2, n3",
		"insert 1000 records with 4 threads, at 500 inserts/s (about 2s)",
		"closed loop for 15s",
		"warm-up 5s, then 1m0s at 75% of the calibrated capacity (open loop) with 4 threads",
		"t=15s at 10s: kill leader as victim",
		"t=35s at 30s: start victim",
		"t=1m5s end of the measured run",
		"lost-writes",
	} {
		if !strings.Contains(strings.Join(strings.Fields(stdout), " "), want) {
			t.Errorf("plan lacks %q:\n%s", want, stdout)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "state")); len(ents) != 0 {
		t.Errorf("a dry run recorded clusters: %v", ents)
	}
	if _, err := os.Stat("runs"); err == nil {
		t.Errorf("a dry run created runs/")
	}
}

// TestFailedRunBanner: a summary marked failed shows a banner in
// report.html.
func TestFailedRunBanner(t *testing.T) {
	run := copyDir(t, testRuns[0])
	p := filepath.Join(run, "summary.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["failed"] = true
	m["failures"] = []string{"fault schedule: schedule step 2 (at 2s: pause n2): n2 is not running"}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runApp("report", run); code != 0 {
		t.Fatalf("report: %d %s", code, stderr)
	}
	html, err := os.ReadFile(filepath.Join(run, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<div class="failed"`, "RUN FAILED", "schedule step 2 (at 2s: pause n2)"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestCompareWarnsNotComparable: runs of different workloads or rates are
// flagged; the two committed runs (same workload and rate) are not.
func TestCompareWarnsNotComparable(t *testing.T) {
	_, stderr, code := runApp("compare", testRuns[0], testRuns[1])
	if code != 0 || strings.Contains(stderr, "not comparable") {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	other := copyDir(t, testRuns[1])
	props := filepath.Join(other, "run.properties")
	b, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(props, []byte(strings.Replace(string(b), "readproportion=0.5", "readproportion=0.95", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runApp("compare", testRuns[0], other)
	if code != 0 || !strings.Contains(stderr, "warning: the runs are not comparable: the workloads differ") {
		t.Errorf("code %d, stderr %q", code, stderr)
	}
	// more client threads than the first
	longer := copyDir(t, testRuns[1])
	sumPath := filepath.Join(longer, "summary.json")
	var sum map[string]any
	if b, err = os.ReadFile(sumPath); err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		t.Fatal(err)
	}
	sum["threads"] = sum["threads"].(float64) + 8
	if b, err = json.Marshal(sum); err == nil {
		err = os.WriteFile(sumPath, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runApp("compare", testRuns[0], longer)
	if code != 0 || !strings.Contains(stderr, "warning: the runs are not comparable: the client threads differ") {
		t.Errorf("threads changed: code %d, stderr %q", code, stderr)
	}
}

// TestCompareShowsARunOnce: a run matched by two patterns (the issue's
// `compare runs/*-kill-* runs/*-split-*` on a split-vs-kill run) is one
// column, with a note.
func TestCompareShowsARunOnce(t *testing.T) {
	stdout, stderr, code := runApp("compare", testRuns[0], testRuns[1], filepath.Clean(testRuns[0])+"/")
	if code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	header, _, _ := strings.Cut(stdout, "\n")
	if n := strings.Count(header, filepath.Base(testRuns[0])); n != 1 {
		t.Errorf("run %s shown %d times in %q", filepath.Base(testRuns[0]), n, header)
	}
	if !strings.Contains(stderr, "is given more than once; it is shown once") {
		t.Errorf("no note about the repeated run: %q", stderr)
	}
}

// copyInto copies the files of run directory src into dst.
func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClosedPipeDoesNotKillRun: `faultbench run ... | head -1` on a real
// one-member etcd cluster. The reader goes away after the first line;
// the run must still finish, exit 0 and write report.html (Go kills a
// program writing to a broken pipe on fd 1 or 2 unless SIGPIPE is
// notified).
func TestClosedPipeDoesNotKillRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd member")
	}
	c := newCLI(t)
	if out, errs, code := c.run(2*time.Minute, "cluster", "up", "etcd", "--nodes", "1"); code != 0 {
		t.Fatalf("cluster up: %s %s", out, errs)
	}
	wl, _ := filepath.Abs(filepath.Join("..", "..", "workloads", "workloada"))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "run", "etcd", "-P", wl, "-p", "recordcount=100", "-p", "operationcount=0",
		"-p", "maxexecutiontime=3", "-p", "status.interval=1", "-threads", "2", "-target", "100", "-s")
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "FAULTBENCH_STATE_DIR="+c.state)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	r.Close() // like head -1: every later write gets EPIPE
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("the run died after its reader went away (first line %q): %v", line, err)
	}
	reports, _ := filepath.Glob(filepath.Join(c.dir, "runs", "*-run-etcd", "report.html"))
	if len(reports) != 1 {
		t.Errorf("report.html not written: %v", reports)
	}
}
