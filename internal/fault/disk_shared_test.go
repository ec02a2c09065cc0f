package fault

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// sharedLayerProc starts argv and kills it when the test ends.
func sharedLayerProc(t *testing.T, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// sharedLayerChild waits for the first child of pid (from /proc) and returns it.
func sharedLayerChild(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			c, err := strconv.Atoi(f[0])
			if err == nil {
				return c
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d started no child", pid)
	return 0
}

// TestCheckSharedLayers: a power loss of nodes that share a data
// directory (one disk layer) with a running node left out is refused,
// unless that node's process descends from a selected one (postgres-ha's
// nK under nK-keeper); selecting every node on the directory is accepted.
func TestCheckSharedLayers(t *testing.T) {
	s1 := sharedLayerProc(t, "sleep", "60")
	s2 := sharedLayerProc(t, "sleep", "60")
	keeper := sharedLayerProc(t, "sh", "-c", "sleep 60 & wait")
	server := sharedLayerChild(t, keeper)
	mk := func(s2pid int) *Cluster {
		return &Cluster{Cluster: &launcher.Cluster{Kind: "x", Name: "x", Nodes: []launcher.Node{
			{Name: "s1", PID: s1, DataDir: "/d/storage"},
			{Name: "s2", PID: s2pid, DataDir: "/d/storage/"},
			{Name: "n1-keeper", PID: keeper, DataDir: "/d/n1"},
			{Name: "n1", PID: server, DataDir: "/d/n1"},
			{Name: "coord", PID: os.Getpid(), DataDir: "/d/coord"},
		}}}
	}
	for _, tc := range []struct {
		name    string
		s2pid   int
		nodes   []string
		refused string // "" accepted, else a node the message names
	}{
		{"one of two servers on a shared storage", s2, []string{"s1"}, "s2"},
		{"every server on the storage", s2, []string{"s1", "s2"}, ""},
		{"the other server is down", 0, []string{"s1"}, ""},
		{"a keeper takes its server with it", s2, []string{"n1-keeper"}, ""},
		{"a server without its keeper", s2, []string{"n1"}, "n1-keeper"},
		{"a node alone on its directory", s2, []string{"coord"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSharedLayers(context.Background(), mk(tc.s2pid), tc.nodes)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Errorf("accepted; want a refusal naming %s", tc.refused)
			case tc.refused != "" && !strings.Contains(err.Error(), "shared with "+tc.refused):
				t.Errorf("refusal %q does not name %s", err, tc.refused)
			}
		})
	}
}
