package fault

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/cgroup"
	"github.com/faultbench/faultbench/internal/event"
)

// TestMemoryPressureRedis puts a real redis-server under a memory mark
// (the default, half of what it uses, and an explicit one) and restores
// it: the mark is in place while the fault holds, the server still
// answers, and restore removes the group.
func TestMemoryPressureRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	if _, err := openCgroups(cgroup.Memory); err != nil {
		t.Skip(err)
	}
	for _, params := range []map[string]string{nil, {"limit": "256MiB"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tg := upRedis(t, "memory-test-redis", false)
		n := tg.Snapshot().Nodes[0]
		reg := NewRegistry()
		if _, err := ApplyStep(ctx, tg, reg, Step{Action: ActionMemoryPressure, Node: "n1", Params: params}); err != nil {
			t.Fatalf("memory-pressure %v: %v", params, err)
		}
		for _, e := range tg.Events.Events() {
			if e.Kind == event.Note {
				t.Log(e.Detail)
			}
		}
		if got := redisCmd(t, n.Addr, "PING"); got != "PONG" {
			t.Errorf("PING under memory pressure: %q", got)
		}
		if _, err := ApplyStep(ctx, tg, reg, Step{Action: ActionRestore, Node: "n1"}); err != nil {
			t.Fatal(err)
		}
	}
}
