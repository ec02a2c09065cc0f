package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/netns"
)

// TestGrayCrashCleanup kills faultbench with -9 while gray network faults
// hold (blackhole-send on the etcd leader, a partial partition, duplicate:
// nftables ip and netdev tables in the members' namespaces, listed there
// with `nft list ruleset` during the run) and checks that `faultbench
// cleanup` leaves the host's namespaces, links and nftables tables as they
// were before the run.
func TestGrayCrashCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd cluster in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
	c := newCLI(t)
	nss0, links0, tables0 := hostNetwork(t)
	sc := filepath.Join(c.dir, "gray.yaml")
	if err := os.WriteFile(sc, []byte(`name: gray-crash
target:
  kind: etcd
  nodes: 3
  options: {net: netns}
workload:
  ycsb: workloada
  properties: {recordcount: "200"}
load: {threads: 4, rate: "200", warmup: 1s, duration: 120s, window: 100ms}
schedule:
  - {at: 1s, fault: blackhole-send, node: leader}
  - {at: 2s, fault: partial-partition, node: "[[n1,n2]]", concurrent: true}
  - {at: 3s, fault: duplicate, node: n3, params: {percent: "5"}, concurrent: true}
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
	var st netns.State
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir(netns.Dir(c.state))
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(netns.Dir(c.state), e.Name())); err == nil && strings.HasSuffix(e.Name(), ".json") {
				_ = json.Unmarshal(b, &st)
			}
		}
		if len(st.Rules) == 4 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(st.Rules) != 4 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the gray faults not in place within 2 minutes (rules %+v)\n%s", st.Rules, errb.String())
	}
	time.Sleep(500 * time.Millisecond)
	var during strings.Builder
	for _, ns := range st.Namespaces {
		out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list ruleset in %s: %v\n%s", ns, err, out)
		}
		during.WriteString("== " + ns + "\n" + string(out))
	}
	if l := during.String(); strings.Count(l, "table netdev faultbench_") != 2 || strings.Count(l, "table ip faultbench_") != 2 {
		t.Errorf("during the run, want 2 netdev and 2 ip tables in the namespaces:\n%s", l)
	}
	t.Logf("nft list ruleset in the namespaces during the run:\n%s", during.String())
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	out, errs, code := c.run(time.Minute, "cleanup")
	if code != 0 {
		t.Fatalf("cleanup: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("cleanup after kill -9 with gray faults in place:\n%s", out)
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
