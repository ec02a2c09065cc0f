package hostload

import (
	"context"
	"math"
	"os"
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
	s := &Sampler{Root: root, Self: 7, Interval: 20 * time.Millisecond, Nodes: func() map[string]int { return map[string]int{"n1": 42, "n2": 99} }}
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
	if _, err := Read(filepath.Join(root, "loadavg")); err == nil {
		t.Error("a file that is not host.csv: no error")
	}
}
