package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		wantV1 map[Controller]string
		wantV2 string
	}{
		{"hybrid: v1 controllers, an empty v2", `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`, map[Controller]string{CPU: "/sys/fs/cgroup/cpu", Memory: "/sys/fs/cgroup/memory", Freezer: "/sys/fs/cgroup/freezer"}, "/sys/fs/cgroup/unified"},
		{"v1 with cpu and cpuacct together", `32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
`, map[Controller]string{CPU: "/sys/fs/cgroup/cpu,cpuacct"}, ""},
		{"v2 only", `30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
`, map[Controller]string{}, "/sys/fs/cgroup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := parseMountinfo([]byte(tc.text))
			if fmt.Sprint(s.v1) != fmt.Sprint(tc.wantV1) || s.v2 != tc.wantV2 {
				t.Errorf("got v1 %v v2 %q, want %v %q", s.v1, s.v2, tc.wantV1, tc.wantV2)
			}
		})
	}
}

// cpuTicks is pid's user and system CPU time in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	s, err := procstat.Read(procstat.Root, pid)
	if err != nil {
		t.Fatal(err)
	}
	return int64(s.CPU())
}

func procState(t *testing.T, pid int) byte {
	s, err := procstat.Read(procstat.Root, pid)
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

// busy starts a process that burns CPU (yes into /dev/null), stopped at
// the end of the test.
func busy(t *testing.T) int {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("yes")
	cmd.Stdout = null
	if err := cmd.Start(); err != nil {
		t.Skip("no yes:", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		null.Close()
	})
	return cmd.Process.Pid
}

func realSystem(t *testing.T, ctrls ...Controller) *System {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	s, err := Open()
	if err != nil {
		t.Skip(err)
	}
	for _, c := range ctrls {
		if err := s.Check(c); err != nil {
			t.Skip(err)
		}
	}
	return s
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestThrottle: a busy process limited to 10 % of a core is throttled
// (cpu.stat counts it) and uses at most about that share; the same
// process in a group without a limit is never throttled (the negative
// control: were SetCPU to do nothing, the first subtest fails).
func TestThrottle(t *testing.T) {
	s := realSystem(t, CPU)
	tests := []struct {
		name      string
		percent   int
		throttled bool
	}{
		{"10 percent of a core", 10, true},
		{"no limit", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid := busy(t)
			g, err := s.Make(CPU, fmt.Sprintf("test-throttle-%d", pid), pid)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := g.Release(); err != nil {
					t.Error(err)
				}
			})
			if err := g.SetCPU(tc.percent); err != nil {
				t.Fatal(err)
			}
			if err := g.Add(Tree(pid)); err != nil {
				t.Fatal(err)
			}
			if got, err := g.CPU(); err != nil || got != tc.percent {
				t.Fatalf("CPU() = %d, %v; want %d", got, err, tc.percent)
			}
			before, err := g.Throttled()
			if err != nil {
				t.Fatal(err)
			}
			t0, c0 := time.Now(), cpuTicks(t, pid)
			time.Sleep(2 * time.Second)
			pct := float64(cpuTicks(t, pid)-c0) / 100 / time.Since(t0).Seconds() * 100
			after, err := g.Throttled()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("CPU %.1f %% of a core; throttled in %d of %d periods (%v)", pct, after.Throttled-before.Throttled, after.Periods-before.Periods, after.Time-before.Time)
			if got := after.Throttled > before.Throttled; got != tc.throttled {
				t.Errorf("throttled: %v, want %v", got, tc.throttled)
			}
			if tc.throttled && pct > 25 {
				t.Errorf("a process limited to %d %% of a core used %.1f %%", tc.percent, pct)
			}
		})
	}
}

// TestFreezeAndRelease: a frozen process stops using CPU yet is not in
// the stopped state a SIGSTOP (pause) leaves; thawed it runs again;
// Release moves it back and removes the group; a group left behind is
// found and removed by CleanupAll.
func TestFreezeAndRelease(t *testing.T) {
	s := realSystem(t, Freezer)
	pid := busy(t)
	name := fmt.Sprintf("test-freeze-%d", pid)
	g, err := s.Make(Freezer, name, pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add(Tree(pid)); err != nil {
		t.Fatal(err)
	}
	if err := g.Freeze(true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the group to freeze", func() bool { ok, err := g.Frozen(); return err == nil && ok })
	c0 := cpuTicks(t, pid)
	time.Sleep(300 * time.Millisecond)
	if c1 := cpuTicks(t, pid); c1 != c0 {
		t.Errorf("a frozen process ran: %d ticks", c1-c0)
	}
	if st := procState(t, pid); st == 'T' || st == 't' {
		t.Errorf("a frozen process is in state %c, the state of a paused one", st)
	}
	if err := g.Freeze(false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the thawed process to run", func() bool { return cpuTicks(t, pid) > c0 })

	if err := g.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Errorf("group %s still there after Release: %v", g.Dir, err)
	}
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); strings.Contains(string(b), Prefix) {
		t.Errorf("the process is still in a group of ours:\n%s", b)
	}

	// a group left behind (a faultbench killed with it in place)
	g, err = s.Make(Freezer, name, pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add([]int{pid}); err != nil {
		t.Fatal(err)
	}
	if err := g.Freeze(true); err != nil {
		t.Fatal(err)
	}
	mine := func(dir string) bool { return filepath.Base(dir) != Prefix+name } // keep the others'
	if found, _ := s.Find(Freezer, name); found == nil || found.Dir != g.Dir {
		t.Fatalf("Find = %v, want %s", found, g.Dir)
	}
	removed, err := s.CleanupAll(mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != g.Dir {
		t.Errorf("CleanupAll removed %v, want [%s]", removed, g.Dir)
	}
	c0 = cpuTicks(t, pid)
	waitUntil(t, "the process thawed by cleanup to run", func() bool { return cpuTicks(t, pid) > c0 })
}

func TestTree(t *testing.T) {
	got := Tree(os.Getpid())
	if len(got) == 0 || !contains(got, os.Getpid()) {
		t.Errorf("Tree(self) = %v, want it to hold %d", got, os.Getpid())
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
