// Package hostload samples what else loads the machine a run measures on,
// from /proc: the load average, the CPU steal of the host's hypervisor,
// faultbench's own CPU, each local database node's CPU, and the CPU of
// everything else: the machine's busy time minus faultbench's process tree
// and the nodes' process trees. A run records the samples in host.csv so
// that a reader can see whether the machine, rather than the database,
// moved a figure (docs/output.md, host.csv); the noise guard judges the
// last series, which the run's own work does not move.
package hostload

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
	"github.com/faultbench/faultbench/internal/runfile"
)

// File is the name of the samples' file in a run directory.
const File = "host.csv"

// ClockTicks is the kernel's USER_HZ, the unit of /proc's CPU times: 100
// on every Linux architecture faultbench builds for.
const ClockTicks = 100

// Sample is one interval's figures.
type Sample struct {
	At    time.Duration // end of the interval, since the run's t=0
	Load1 float64       // /proc/loadavg's 1-minute load average
	// StealPct is the share of all CPUs' time stolen by the hypervisor
	// in the interval (/proc/stat), in percent; 0 on bare metal.
	StealPct float64
	// SelfPct is faultbench's own CPU in the interval, in percent of one
	// CPU (200 = two CPUs busy).
	SelfPct float64
	// NodePct is each node's CPU in percent of one CPU: its process and
	// the processes below it (a postmaster's backends, a forked server)
	// as of the last process-tree scan, less the subtree of another node
	// inside it (postgres-ha's nK under nK-keeper: the postmaster's tree
	// is nK's, pg_autoctl's own processes nK-keeper's). A node whose
	// process was not running in the whole interval is left out.
	NodePct map[string]float64
	// OtherPct is the CPU of everything but the run, in percent of one
	// CPU, since the previous process-tree scan (OtherOK: this sample
	// made one; at most one per Sampler.TreeEvery): the machine's busy
	// time (user, nice, system of /proc/stat: interrupts and steal are
	// left out) minus the user and system time of faultbench's process
	// tree and of every node's process tree (their descendants by
	// /proc/PID/stat's parent, so a node's forked servers and a detached
	// node count). Kernel threads (a file system's journal, writeback)
	// count as other, and so does a child of the run that was born and
	// reaped between two scans.
	OtherPct float64
	OtherOK  bool
}

// Sampler reads /proc (Root, default "/proc") at every Interval.
type Sampler struct {
	Root     string
	Interval time.Duration
	// Nodes returns the database nodes' process ids by node name at the
	// time of the call (they change when a node restarts); nil: none.
	Nodes func() map[string]int
	Self  int // faultbench's pid; 0: os.Getpid()
	// TreeEvery is how often the process trees are scanned for OtherPct
	// (a read of every /proc/PID/stat); 0: every second.
	TreeEvery time.Duration
	// OnSample, when set, is called with every sample written (At set),
	// from Run's goroutine.
	OnSample func(Sample)

	prev     cpuTimes
	prevProc map[int]float64 // pid -> ticks
	prevAt   time.Time

	// the process-tree scans (OtherPct): by Run's scanLoop (async) or, in
	// a Sampler driven by hand, by sample itself
	async        bool
	prevTree     map[int]float64 // the run's processes at the last scan: pid -> ticks
	prevTreeAt   time.Time
	prevTreeBusy float64
	mu           sync.Mutex // guards the three below (async)
	pendingOther float64    // the last scan's figure, not yet in a sample
	hasPending   bool
	// members are the processes each node's root pid owned at the last
	// scan (procstat.Table.Owners), the root included
	members map[int][]int
}

// cpuTimes are /proc/stat's aggregate times: every field, the steal, and
// the busy part (user, nice, system).
type cpuTimes struct{ total, steal, busy float64 }

func (s *Sampler) root() string {
	if s.Root == "" {
		return "/proc"
	}
	return s.Root
}

// Run samples until ctx ends, writing each sample to w as a CSV row
// (Header first) with times since start. It returns nil when ctx ends; a
// /proc that cannot be read at the first sample is an error.
func (s *Sampler) Run(ctx context.Context, start time.Time, w io.Writer) error {
	if s.Interval <= 0 {
		s.Interval = time.Second
	}
	if s.Self == 0 {
		s.Self = os.Getpid()
	}
	if _, err := s.sample(time.Now()); err != nil {
		return fmt.Errorf("host load: %w", err)
	}
	s.async = true
	var wg sync.WaitGroup
	wg.Add(1)
	sctx, stop := context.WithCancel(ctx)
	go func() {
		defer wg.Done()
		s.scanLoop(sctx)
	}()
	defer wg.Wait()
	defer stop()
	cw := csv.NewWriter(w)
	var names []string // node columns, fixed at the first sample
	if s.Nodes != nil {
		for n := range s.Nodes() {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	header := []string{"t_ms", "load1", "steal_pct", "faultbench_cpu_pct", "other_cpu_pct"}
	for _, n := range names {
		header = append(header, n+"_cpu_pct")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	cw.Flush()
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			cw.Flush()
			return cw.Error()
		case now := <-tick.C:
			smp, err := s.sample(now)
			if err != nil {
				continue // a node that just died, a torn read: the next sample
			}
			other := ""
			if smp.OtherOK {
				other = f2(smp.OtherPct)
			}
			row := []string{strconv.FormatInt(now.Sub(start).Milliseconds(), 10), f2(smp.Load1), f2(smp.StealPct), f2(smp.SelfPct), other}
			for _, n := range names {
				v, ok := smp.NodePct[n]
				if !ok {
					row = append(row, "")
					continue
				}
				row = append(row, f2(v))
			}
			if err := cw.Write(row); err != nil {
				return err
			}
			cw.Flush()
			if s.OnSample != nil {
				smp.At = now.Sub(start)
				s.OnSample(smp)
			}
		}
	}
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// sample reads /proc once and returns the figures of the interval since
// the previous call (zeros for the CPU shares at the first).
func (s *Sampler) sample(now time.Time) (Sample, error) {
	var out Sample
	la, err := os.ReadFile(filepath.Join(s.root(), "loadavg"))
	if err != nil {
		return out, err
	}
	if out.Load1, err = strconv.ParseFloat(strings.Fields(string(la) + " x")[0], 64); err != nil {
		return out, fmt.Errorf("loadavg: %w", err)
	}
	ct, err := readCPU(filepath.Join(s.root(), "stat"))
	if err != nil {
		return out, err
	}
	procs := map[int]float64{}
	pids := map[string]int{}
	if s.Nodes != nil {
		pids = s.Nodes()
	}
	s.mu.Lock()
	members := s.members
	s.mu.Unlock()
	owned := map[int][]int{} // node root -> the pids read for it
	for _, pid := range valuesOf(pids) {
		owned[pid] = []int{pid}
		for _, m := range members[pid] {
			if m != pid {
				owned[pid] = append(owned[pid], m)
			}
		}
	}
	read := []int{s.Self}
	for _, ms := range owned {
		read = append(read, ms...)
	}
	for _, pid := range read {
		if st, err := procstat.Read(s.root(), pid); err == nil {
			procs[pid] = float64(st.CPU())
		}
	}
	if !s.prevAt.IsZero() {
		if d := ct.total - s.prev.total; d > 0 {
			out.StealPct = (ct.steal - s.prev.steal) / d * 100
		}
		secs := now.Sub(s.prevAt).Seconds()
		pct := func(pid int) (float64, bool) {
			cur, ok1 := procs[pid]
			old, ok2 := s.prevProc[pid]
			if !ok1 || !ok2 || secs <= 0 || cur < old {
				return 0, false
			}
			return (cur - old) / ClockTicks / secs * 100, true
		}
		out.SelfPct, _ = pct(s.Self)
		out.NodePct = map[string]float64{}
		for n, pid := range pids {
			v, ok := pct(pid)
			if !ok {
				continue
			}
			for _, m := range owned[pid][1:] {
				if mv, ok := pct(m); ok { // a member born or gone in the interval is left out
					v += mv
				}
			}
			out.NodePct[n] = v
		}
	}
	s.prev, s.prevProc, s.prevAt = ct, procs, now
	if s.async {
		s.mu.Lock()
		out.OtherPct, out.OtherOK = s.pendingOther, s.hasPending
		s.hasPending = false
		s.mu.Unlock()
	} else if now.Sub(s.prevTreeAt) >= s.treeEvery() {
		var err error
		if out.OtherPct, out.OtherOK, err = s.scanOther(now, pids); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Sampler) treeEvery() time.Duration {
	if s.TreeEvery <= 0 {
		return time.Second
	}
	return s.TreeEvery
}

// scanOther scans the process trees of the run (faultbench and the nodes
// of pids) and returns the other processes' CPU since the previous scan
// (ok false at the first). The machine's busy time is read before and
// after the scan and the mean taken: a scan on a busy machine takes a
// while, and the processes' times are read across it.
func (s *Sampler) scanOther(now time.Time, pids map[string]int) (pct float64, ok bool, err error) {
	before, err := readCPU(filepath.Join(s.root(), "stat"))
	if err != nil {
		return 0, false, err
	}
	tab, err := procstat.Scan(s.root())
	if err != nil {
		return 0, false, err
	}
	tree := map[int]float64{}
	for _, pid := range tab.Tree(append(valuesOf(pids), s.Self)...) {
		tree[pid] = float64(tab[pid].CPU())
	}
	members := map[int][]int{}
	for pid, root := range tab.Owners(valuesOf(pids)...) {
		members[root] = append(members[root], pid)
	}
	s.mu.Lock()
	s.members = members
	s.mu.Unlock()
	after, err := readCPU(filepath.Join(s.root(), "stat"))
	if err != nil {
		return 0, false, err
	}
	busy := (before.busy + after.busy) / 2
	if !s.prevTreeAt.IsZero() {
		var run float64
		for pid, t := range tree {
			if old, seen := s.prevTree[pid]; seen && t >= old {
				run += t - old
			} else if !seen {
				run += t // born since the last scan (or joined the tree: a node started again)
			}
		}
		if secs := now.Sub(s.prevTreeAt).Seconds(); secs > 0 {
			pct, ok = max(0, (busy-s.prevTreeBusy-run)/ClockTicks/secs*100), true
		}
	}
	s.prevTree, s.prevTreeAt, s.prevTreeBusy = tree, now, busy
	return pct, ok, nil
}

// scanLoop scans the process trees every TreeEvery until ctx ends and
// hands each figure to the next sample (Run's goroutine samples every
// Interval, and a scan on a busy machine may take longer than that).
func (s *Sampler) scanLoop(ctx context.Context) {
	tick := time.NewTicker(s.treeEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			pids := map[string]int{}
			if s.Nodes != nil {
				pids = s.Nodes()
			}
			pct, ok, err := s.scanOther(now, pids)
			if err != nil || !ok {
				continue
			}
			s.mu.Lock()
			s.pendingOther, s.hasPending = pct, true
			s.mu.Unlock()
		}
	}
}

func valuesOf(m map[string]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		if v > 0 {
			out = append(out, v)
		}
	}
	return out
}

// readCPU reads the aggregate "cpu" line of /proc/stat: every field summed
// (guest time is already in user and nice, so guest fields are left out)
// and the steal field.
func readCPU(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		var t cpuTimes
		// user nice system idle iowait irq softirq steal guest guest_nice
		for i, v := range fields[1:] {
			if i >= 8 {
				break
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("%s: %q: %w", path, v, err)
			}
			t.total += x
			if i <= 2 {
				t.busy += x
			}
			if i == 7 {
				t.steal = x
			}
		}
		return t, nil
	}
	return cpuTimes{}, errors.New(path + ": no cpu line")
}

// Series is host.csv read back: one row per sample.
type Series struct {
	AtSec    []float64
	Load1    []float64
	StealPct []float64
	SelfPct  []float64
	OtherPct []float64            // NaN where a sample made no tree scan, or the file predates the column
	Nodes    []string             // node columns, in file order
	NodePct  map[string][]float64 // NaN where a node had no value
}

// Read parses host.csv.
func Read(path string) (*Series, error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if len(recs) == 0 || len(recs[0]) < 4 || recs[0][0] != "t_ms" {
		return nil, fmt.Errorf("%s: no header", filepath.Base(path))
	}
	s := &Series{NodePct: map[string][]float64{}}
	first := 4 // the first node column
	hasOther := len(recs[0]) > 4 && recs[0][4] == "other_cpu_pct"
	if hasOther {
		first = 5
	}
	for _, h := range recs[0][first:] {
		s.Nodes = append(s.Nodes, strings.TrimSuffix(h, "_cpu_pct"))
	}
	num := func(v string) float64 {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nan()
		}
		return x
	}
	for _, r := range recs[1:] {
		if len(r) != len(recs[0]) {
			continue // a torn last line
		}
		s.AtSec = append(s.AtSec, num(r[0])/1000)
		s.Load1 = append(s.Load1, num(r[1]))
		s.StealPct = append(s.StealPct, num(r[2]))
		s.SelfPct = append(s.SelfPct, num(r[3]))
		other := nan()
		if hasOther {
			other = num(r[4])
		}
		s.OtherPct = append(s.OtherPct, other)
		for i, n := range s.Nodes {
			s.NodePct[n] = append(s.NodePct[n], num(r[first+i]))
		}
	}
	return s, nil
}

func nan() float64 { return math.NaN() }
