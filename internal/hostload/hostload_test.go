package hostload

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeProc writes a /proc with the given load, aggregate CPU times
// (total ticks split as user and idle, plus steal) and processes' ticks.
func fakeProc(t *testing.T, root string, load string, user, idle, steal int, procs map[int]int) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "loadavg"), []byte(load+" 1.00 0.50 2/100 1234\n"), 0o644))
	stat := "cpu  " + itoa(user) + " 0 0 " + itoa(idle) + " 0 0 0 " + itoa(steal) + " 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
	must(os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644))
	for pid, ticks := range procs {
		dir := filepath.Join(root, itoa(pid))
		must(os.MkdirAll(dir, 0o755))
		// the command holds a space and a parenthesis, as real ones may
		line := itoa(pid) + " (etcd (x) y) S 1 1 1 0 -1 4194560 100 0 0 0 " + itoa(ticks-ticks/4) + " " + itoa(ticks/4) + " 0 0 20 0 8 0 100 1000 100\n"
		must(os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSample: the interval's shares from /proc deltas: steal 100 of 1000
// ticks is 10 %, a process using 100 ticks (1 s of CPU) in 1 s is 100 %,
// a node whose process is gone has no value.
func TestSample(t *testing.T) {
	root := t.TempDir()
	nodes := map[string]int{"n1": 42, "n2": 43}
	s := &Sampler{Root: root, Self: 7, Nodes: func() map[string]int { return nodes }}
	fakeProc(t, root, "1.50", 100, 700, 100, map[int]int{7: 10, 42: 200, 43: 50})
	t0 := time.Unix(1000, 0)
	first, err := s.sample(t0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Load1 != 1.5 || first.StealPct != 0 || first.SelfPct != 0 {
		t.Fatalf("first sample %+v: want the load and no shares yet", first)
	}
	fakeProc(t, root, "2.25", 500, 1200, 200, map[int]int{7: 60, 42: 300})
	os.RemoveAll(filepath.Join(root, "43")) // n2's process died
	got, err := s.sample(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Load1 != 2.25 || math.Abs(got.StealPct-10) > 1e-9 || math.Abs(got.SelfPct-50) > 1e-9 {
		t.Errorf("sample %+v: want load 2.25, steal 10 %%, faultbench 50 %%", got)
	}
	if v, ok := got.NodePct["n1"]; !ok || math.Abs(v-100) > 1e-9 {
		t.Errorf("n1 %v (%v), want 100 %%", v, ok)
	}
	if _, ok := got.NodePct["n2"]; ok {
		t.Error("n2's process is gone, yet it has a value")
	}
}

func TestSampleBadProc(t *testing.T) {
	root := t.TempDir()
	s := &Sampler{Root: root}
	if _, err := s.sample(time.Now()); err == nil {
		t.Fatal("no /proc/loadavg: no error")
	}
	if err := s.Run(context.Background(), time.Now(), &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "host load") {
		t.Fatalf("Run on a missing /proc: %v", err)
	}
	os.WriteFile(filepath.Join(root, "loadavg"), []byte("x"), 0o644)
	if _, err := s.sample(time.Now()); err == nil {
		t.Fatal("a garbled loadavg: no error")
	}
}

// TestRunAndRead: Run writes host.csv with a column per node while the
// context lasts; Read gives the same series back, a missing value NaN.
func TestRunAndRead(t *testing.T) {
	root := t.TempDir()
	fakeProc(t, root, "0.75", 100, 700, 0, map[int]int{7: 10, 42: 20})
	s := &Sampler{Root: root, Self: 7, Interval: 20 * time.Millisecond, TreeEvery: 30 * time.Millisecond, Nodes: func() map[string]int { return map[string]int{"n1": 42, "n2": 99} }}
	path := filepath.Join(t.TempDir(), File)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx, time.Now(), f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ser, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ser.AtSec) < 2 || strings.Join(ser.Nodes, ",") != "n1,n2" {
		t.Fatalf("read %d samples, nodes %v", len(ser.AtSec), ser.Nodes)
	}
	for i := range ser.AtSec {
		if ser.Load1[i] != 0.75 || ser.NodePct["n1"][i] != 0 || !math.IsNaN(ser.NodePct["n2"][i]) {
			t.Fatalf("sample %d: load %v n1 %v n2 %v", i, ser.Load1[i], ser.NodePct["n1"][i], ser.NodePct["n2"][i])
		}
		if i > 0 && ser.AtSec[i] <= ser.AtSec[i-1] {
			t.Fatalf("times not increasing: %v", ser.AtSec)
		}
	}
	// the tree scans run beside the samples: some samples carry their figure
	others := 0
	for _, v := range ser.OtherPct {
		if !math.IsNaN(v) {
			others++
		}
	}
	if others == 0 {
		t.Errorf("other CPU in none of %d samples, want some (a scan every 30 ms)", len(ser.OtherPct))
	}
	if _, err := Read(filepath.Join(root, "loadavg")); err == nil {
		t.Error("a file that is not host.csv: no error")
	}
}

// writeProcTree writes a /proc whose busy CPU is user ticks (idle the
// rest) and whose processes have the given parent and ticks.
func writeProcTree(t *testing.T, root string, user, idle int, procs map[int][2]int) {
	t.Helper()
	fakeProc(t, root, "9.00", user, idle, 0, nil)
	for pid, pt := range procs {
		dir := filepath.Join(root, itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		line := itoa(pid) + " (p) S " + itoa(pt[0]) + " 1 1 0 -1 4194560 100 0 0 0 " + itoa(pt[1]) + " 0 0 0 20 0 8 0 100 1000 100\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOtherCPU: the CPU of everything but the run is the busy time minus
// faultbench's tree (itself, its client process) and the nodes' trees
// (a node, its forked server); a stranger's CPU is what is left.
func TestOtherCPU(t *testing.T) {
	root := t.TempDir()
	// pid: {parent, ticks}; 7 faultbench, 8 its client process, 42 node
	// n1, 44 n1's forked server, 99 a stranger (a build)
	procs := map[int][2]int{7: {1, 0}, 8: {7, 0}, 42: {1, 0}, 44: {42, 0}, 99: {1, 0}}
	writeProcTree(t, root, 1000, 1000, procs)
	for _, tc := range []struct {
		name     string
		stranger int // its ticks in the second
		want     float64
	}{
		{"the run's own CPU is not other", 0, 0},
		{"a stranger's CPU is other", 80, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sampler{Root: root, Self: 7, TreeEvery: time.Millisecond, Nodes: func() map[string]int { return map[string]int{"n1": 42} }}
			writeProcTree(t, root, 1000, 1000, procs)
			t0 := time.Unix(1000, 0)
			if first, err := s.sample(t0); err != nil || first.OtherOK {
				t.Fatalf("first sample: %+v %v (no interval yet)", first, err)
			}
			// in 1 s: faultbench 30 ticks, its client 20, n1 40, n1's server 10, the stranger
			next := map[int][2]int{7: {1, 30}, 8: {7, 20}, 42: {1, 40}, 44: {42, 10}, 99: {1, tc.stranger}}
			writeProcTree(t, root, 1000+100+tc.stranger, 1000, next)
			got, err := s.sample(t0.Add(time.Second))
			if err != nil || !got.OtherOK || math.Abs(got.OtherPct-tc.want) > 1e-9 {
				t.Fatalf("other = %v (ok %v, err %v), want %v %% of one CPU", got.OtherPct, got.OtherOK, err, tc.want)
			}
		})
	}
}

// TestNodeTreeCPU: a node's CPU is its process tree's, less the subtree
// of another node inside it. postgres-ha's shape: n1-keeper is
// pg_autoctl (50), whose postgres service (51) runs the postmaster, node
// n1 (60), whose backends (61, 62) do the work; the backends' CPU is n1's,
// not the keeper's, and a stranger (99) is neither's.
func TestNodeTreeCPU(t *testing.T) {
	root := t.TempDir()
	nodes := map[string]int{"n1-keeper": 50, "n1": 60}
	s := &Sampler{Root: root, Self: 7, TreeEvery: time.Millisecond, Nodes: func() map[string]int { return nodes }}
	t0 := time.Unix(1000, 0)
	// pid: {parent, ticks}
	tree := func(keeper, service, postmaster, b1, b2, stranger int) map[int][2]int {
		return map[int][2]int{7: {1, 0}, 50: {1, keeper}, 51: {50, service}, 60: {51, postmaster}, 61: {60, b1}, 62: {60, b2}, 99: {1, stranger}}
	}
	steps := []map[int][2]int{
		tree(0, 0, 0, 0, 0, 0),
		tree(1, 1, 1, 10, 10, 10), // the first scan's members were not read in the sample before
		tree(3, 2, 6, 40, 30, 90), // in 1 s: keeper 2, service 1, postmaster 5, backends 30 + 20, stranger 80
	}
	var got Sample
	for i, procs := range steps {
		writeProcTree(t, root, 1000*(i+1), 1000, procs)
		var err error
		if got, err = s.sample(t0.Add(time.Duration(i) * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		node string
		want float64
	}{{"n1", 55}, {"n1-keeper", 3}} {
		t.Run(c.node, func(t *testing.T) {
			if v, ok := got.NodePct[c.node]; !ok || math.Abs(v-c.want) > 1e-9 {
				t.Errorf("%s = %v (%v), want %v %% of one CPU (all %v)", c.node, v, ok, c.want, got.NodePct)
			}
		})
	}
}

// TestOtherCPUReal is the noise guard's negative control on the real
// /proc: a process burning CPU is "other" when it is a stranger and not
// when it is a node, in the same interval (two samplers side by side).
func TestOtherCPUReal(t *testing.T) {
	if os.Getenv("HOSTLOAD_HELPER") != "" {
		t.Skip("helper process")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	start := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "HOSTLOAD_HELPER="+mode)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	burner, idle := start("burn"), start("sleep")
	asNode := &Sampler{Self: idle.Process.Pid, TreeEvery: time.Millisecond, Nodes: func() map[string]int { return map[string]int{"n1": burner.Process.Pid} }}
	asStranger := &Sampler{Self: idle.Process.Pid, TreeEvery: time.Millisecond}
	for _, s := range []*Sampler{asNode, asStranger} {
		if _, err := s.sample(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	n, err1 := asNode.sample(time.Now())
	o, err2 := asStranger.sample(time.Now())
	if err1 != nil || err2 != nil || !n.OtherOK || !o.OtherOK {
		t.Fatalf("samples: %+v %v / %+v %v", n, err1, o, err2)
	}
	burn := n.NodePct["n1"]
	if burn < 10 {
		t.Skipf("the burner got %.0f %% of a CPU in 2 s: the machine is too busy to tell it from the rest", burn)
	}
	// the difference of the two "other" figures is the burner's CPU; the
	// scans are a few milliseconds apart: 10 % of a CPU of slack
	if d := o.OtherPct - n.OtherPct; math.Abs(d-burn) > 10 {
		t.Fatalf("other as a stranger %.1f %%, as a node %.1f %%: differ by %.1f, the burner used %.1f %% of a CPU", o.OtherPct, n.OtherPct, d, burn)
	}
	t.Logf("burner %.0f %% of a CPU; other CPU with it as a node %.0f %%, as a stranger %.0f %%", burn, n.OtherPct, o.OtherPct)
}

// TestHelperProcess is the process TestOtherCPUReal starts: it burns CPU
// or sleeps until killed (at most a minute).
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("HOSTLOAD_HELPER")
	if mode == "" {
		t.Skip("started by TestOtherCPUReal")
	}
	end := time.Now().Add(time.Minute)
	for time.Now().Before(end) {
		if mode == "sleep" {
			time.Sleep(100 * time.Millisecond)
		}
	}
}
