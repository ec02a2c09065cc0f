package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
)

// hostNetwork lists what the host's network has: named namespaces (what
// `ip netns list` shows), links of the root namespace (`ip link`) and
// nftables tables of the root namespace (`nft list ruleset`), read through
// the same libraries faultbench uses, so the test needs neither binary.
func hostNetwork(t *testing.T) (nss, links, tables []string) {
	t.Helper()
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		nss = append(nss, e.Name())
	}
	ls, err := netlink.LinkList()
	if err != nil {
		t.Fatalf("listing links: %v", err)
	}
	for _, l := range ls {
		links = append(links, l.Attrs().Name)
	}
	c, err := nftables.New()
	if err != nil {
		t.Fatalf("nftables: %v", err)
	}
	ts, err := c.ListTables()
	if err != nil {
		t.Fatalf("nftables tables: %v", err)
	}
	for _, tb := range ts {
		tables = append(tables, tb.Name)
	}
	sort.Strings(nss)
	sort.Strings(links)
	sort.Strings(tables)
	return nss, links, tables
}

// TestNetCrashCleanup kills faultbench with -9 in the middle of a
// partition (the etcd leader cut off, rules in place in the members'
// namespaces) and checks that `faultbench cleanup` leaves the host's
// namespaces, links and nftables tables as they were before the run.
func TestNetCrashCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd cluster in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
	c := newCLI(t)
	nss0, links0, tables0 := hostNetwork(t)
	sc := filepath.Join(c.dir, "split.yaml")
	if err := os.WriteFile(sc, []byte(`name: split-crash
target:
  kind: etcd
  nodes: 3
  options: {net: netns}
workload:
  ycsb: workloada
  properties: {recordcount: "200"}
load: {threads: 4, rate: "200", warmup: 1s, duration: 120s, window: 100ms}
schedule:
  - {at: 1s, fault: partition, node: leader, label: split}
  - {at: 100s, fault: heal, node: all}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "scenario", sc, "-q")
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "FAULTBENCH_STATE_DIR="+c.state)
	errb := &syncBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// wait until the partition's rules are recorded in place
	var st netns.State
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir(netns.Dir(c.state))
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(netns.Dir(c.state), e.Name())); err == nil && strings.HasSuffix(e.Name(), ".json") {
				_ = json.Unmarshal(b, &st)
			}
		}
		if len(st.Rules) == 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(st.Rules) != 3 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("no partition in place within 2 minutes (rules %+v)\n%s", st.Rules, errb.String())
	}
	time.Sleep(500 * time.Millisecond)
	nss1, links1, _ := hostNetwork(t)
	if len(nss1) != len(nss0)+len(st.Namespaces) || len(links1) != len(links0)+1 {
		t.Errorf("during the run: %d namespaces (before %d, recorded %d), %d links (before %d)", len(nss1), len(nss0), len(st.Namespaces), len(links1), len(links0))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	store := launcher.StateStore{Dir: c.state}
	cs, _ := store.List()
	out, errs, code := c.run(time.Minute, "cleanup")
	if code != 0 {
		t.Fatalf("cleanup: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("cleanup after kill -9 mid-partition:\n%s", out)
	for _, cl := range cs {
		for _, n := range cl.Nodes {
			if launcher.Alive(n.PID) {
				t.Errorf("member %s (pid %d) still runs after cleanup", n.Name, n.PID)
			}
		}
	}
	nss2, links2, tables2 := hostNetwork(t)
	if strings.Join(nss2, " ") != strings.Join(nss0, " ") {
		t.Errorf("namespaces after cleanup %v, before the run %v", nss2, nss0)
	}
	if strings.Join(links2, " ") != strings.Join(links0, " ") {
		t.Errorf("links after cleanup %v, before the run %v", links2, links0)
	}
	if strings.Join(tables2, " ") != strings.Join(tables0, " ") {
		t.Errorf("nftables tables after cleanup %v, before the run %v", tables2, tables0)
	}
	for _, ns := range st.Namespaces {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			t.Errorf("namespace %s left after cleanup", ns)
		}
	}
	if _, err := os.Stat(netns.StatePath(c.state, st.Cluster)); !os.IsNotExist(err) {
		t.Errorf("network state file left after cleanup")
	}
}
