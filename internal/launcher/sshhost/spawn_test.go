package sshhost

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
)

// alive reports whether pid runs (not a zombie).
func alive(pid int) bool { return procstat.Alive(pid) }

// session returns pid's session id (/proc/PID/stat), 0 if unreadable.
func session(pid int) int {
	s, err := procstat.Read(procstat.Root, pid)
	if err != nil {
		return 0
	}
	return s.Session
}

// TestSpawnAndCleanNodes starts two "nodes" the way a node host does
// (Spawn), checks they run detached with their pid recorded, and that
// CleanNodes stops them, removes the nodes directory, leaves an unrelated
// process alone, and does nothing the second time.
func TestSpawnAndCleanNodes(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	tail, err := exec.LookPath("tail")
	if err != nil {
		t.Skip("no tail(1)")
	}
	// a process that reuses a recorded pid's slot must not be killed: a
	// pid file pointing at an unrelated process
	other := exec.Command(sleep, "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()

	var pids []int
	for _, n := range []string{"n1", "n2"} {
		nodeDir := filepath.Join(dir, NodesDir, "etcd", n)
		var out bytes.Buffer
		// a long-running command line that names the node's directory, as
		// a real node's --data-dir does
		if err := Spawn([]string{"--log", filepath.Join(nodeDir, "node.log"), "--", tail, "-f", filepath.Join(nodeDir, "node.log")}, &out); err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
		if err != nil {
			t.Fatalf("Spawn printed %q", out.String())
		}
		b, err := os.ReadFile(filepath.Join(nodeDir, "pid"))
		// the pid and its start time: the process across pid reuse
		if st, _ := startTime(pid); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid)+" "+strconv.FormatUint(st, 10) {
			t.Fatalf("pid file %q (%v), want %d and its start time %d", b, err, pid, st)
		}
		if sid := session(pid); sid != pid {
			t.Errorf("%s: session %d, want its own (%d)", n, sid, pid)
		}
		pids = append(pids, pid)
	}
	stray := filepath.Join(dir, NodesDir, "etcd", "n3")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "pid"), []byte(strconv.Itoa(other.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := CleanNodes(ctx, []string{"--dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still runs after CleanNodes", pid)
		}
	}
	if !alive(other.Process.Pid) {
		t.Error("CleanNodes killed a process whose command line does not name its node directory")
	}
	if _, err := os.Stat(filepath.Join(dir, NodesDir)); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", filepath.Join(dir, NodesDir), err)
	}
	if got := strings.Count(out.String(), "stopped pid"); got != 2 {
		t.Errorf("report says %d stopped, want 2:\n%s", got, out.String())
	}
	out.Reset()
	if err := CleanNodes(ctx, []string{"--dir", dir}, &out); err != nil || out.Len() != 0 {
		t.Errorf("second CleanNodes: %v, %q", err, out.String())
	}
}

func TestSpawnUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no log", []string{"--", "true"}},
		{"no command", []string{"--log", "/tmp/x.log"}},
		{"unknown flag", []string{"--nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Spawn(tc.args, &bytes.Buffer{}); err == nil {
				t.Errorf("Spawn(%q) succeeded", tc.args)
			}
		})
	}
}

// TestSpawnAgainEndsEarlierStart: a node spawned again while the process
// of its earlier spawn still runs (that start's SSH call timed out after
// the process started, so the launcher never learnt its pid) has that
// process ended first, so the new one can bind the node's ports; a pid
// file naming an unrelated process leaves that process alone.
func TestSpawnAgainEndsEarlierStart(t *testing.T) {
	tail, err := exec.LookPath("tail")
	if err != nil {
		t.Skip("no tail(1)")
	}
	nodeDir := filepath.Join(t.TempDir(), NodesDir, "etcd", "n1")
	log := filepath.Join(nodeDir, "node.log")
	spawn := func() int {
		t.Helper()
		var out bytes.Buffer
		if err := Spawn([]string{"--log", log, "--", tail, "-f", log}, &out); err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
		if err != nil {
			t.Fatalf("Spawn printed %q", out.String())
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	}
	first := spawn()
	second := spawn()
	if alive(first) {
		t.Errorf("the earlier start's process (pid %d) still runs after the node was spawned again", first)
	}
	if !alive(second) {
		t.Fatalf("the new process (pid %d) does not run", second)
	}
	// a pid file naming a process that is not this node's: left alone
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	other := exec.Command(sleep, "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if err := os.WriteFile(filepath.Join(nodeDir, "pid"), []byte(strconv.Itoa(other.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	spawn()
	if !alive(other.Process.Pid) {
		t.Error("Spawn ended a process whose command line does not name the node's directory")
	}
}
