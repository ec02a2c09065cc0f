package clusterctl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/cgroup"
	"github.com/faultbench/faultbench/internal/launcher"
)

// TestCleanupCgroupsAfterKill9: a faultbench killed with kill -9 while a
// node was stalled (frozen) and throttled leaves the node's cgroups
// behind; `faultbench cleanup` thaws the node, removes the groups and
// stops the node. The cluster is recorded as left by a faultbench that is
// gone; the before and after listings are logged.
func TestCleanupCgroupsAfterKill9(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	sys, err := cgroup.Open()
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []cgroup.Controller{cgroup.CPU, cgroup.Freezer} {
		if err := sys.Check(c); err != nil {
			t.Skip(err)
		}
	}
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Skip(err)
	}
	go func() { _ = sleep.Wait() }()
	pid := sleep.Process.Pid
	t.Cleanup(func() { _ = sleep.Process.Kill() })
	name := "killed" + strings.ReplaceAll(t.Name(), "/", "-")
	for _, ctrl := range []cgroup.Controller{cgroup.CPU, cgroup.Freezer} {
		g, err := sys.Make(ctrl, name+"-n1", pid)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Add([]int{pid}); err != nil {
			t.Fatal(err)
		}
		if ctrl == cgroup.CPU {
			err = g.SetCPU(10)
		} else {
			err = g.Freeze(true)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	listing := func() []string {
		var out []string
		for _, dirs := range sys.Left() {
			for _, d := range dirs {
				if strings.HasPrefix(filepath.Base(d), cgroup.Prefix+name+"-") {
					out = append(out, d)
				}
			}
		}
		return out
	}
	before := listing()
	t.Logf("before cleanup: %v", before)
	if len(before) != 2 {
		t.Fatalf("groups before cleanup: %v, want the cpu and the freezer group", before)
	}
	dir := t.TempDir()
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	m := New(filepath.Join(dir, "state"), env, nil)
	c := &launcher.Cluster{Kind: "redis", Name: name, Dir: filepath.Join(dir, "c"), OwnerPID: 1 << 22,
		Nodes: []launcher.Node{{Name: "n1", PID: pid, Argv: []string{"sleep", "300"}}}}
	if err := m.Save(c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := m.Cleanup(ctx, false, &out); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out.String())
	}
	t.Logf("cleanup said:\n%s", out.String())
	after := listing()
	t.Logf("after cleanup: %v", after)
	if len(after) > 0 {
		t.Errorf("cleanup left cgroups: %v", after)
	}
	if launcher.Alive(pid) {
		t.Errorf("the stalled node (pid %d) survived cleanup", pid)
	}
	for _, d := range before {
		if !strings.Contains(out.String(), "removed cgroup "+d) {
			t.Errorf("cleanup did not report removing %s", d)
		}
	}
}
