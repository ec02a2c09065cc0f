// Package hostload samples what else loads the machine a run measures on,
// from /proc: the load average, the CPU steal of the host's hypervisor,
// faultbench's own CPU and each local database node's CPU. A run records
// the samples in host.csv so that a reader can see whether the machine,
// rather than the database, moved a figure (docs/output.md, host.csv).
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
	"time"

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
	// NodePct is each node's process CPU in percent of one CPU; a node
	// whose process was not running in the whole interval is left out.
	NodePct map[string]float64
}

// Sampler reads /proc (Root, default "/proc") at every Interval.
type Sampler struct {
	Root     string
	Interval time.Duration
	// Nodes returns the database nodes' process ids by node name at the
	// time of the call (they change when a node restarts); nil: none.
	Nodes func() map[string]int
	Self  int // faultbench's pid; 0: os.Getpid()
	// OnSample, when set, is called with every sample written (At set),
	// from Run's goroutine.
	OnSample func(Sample)

	prev     cpuTimes
	prevProc map[int]float64 // pid -> ticks
	prevAt   time.Time
}

type cpuTimes struct{ total, steal float64 }

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
	cw := csv.NewWriter(w)
	var names []string // node columns, fixed at the first sample
	if s.Nodes != nil {
		for n := range s.Nodes() {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	header := []string{"t_ms", "load1", "steal_pct", "faultbench_cpu_pct"}
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
			row := []string{strconv.FormatInt(now.Sub(start).Milliseconds(), 10), f2(smp.Load1), f2(smp.StealPct), f2(smp.SelfPct)}
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
	for _, pid := range append(valuesOf(pids), s.Self) {
		if t, err := readProcTicks(filepath.Join(s.root(), strconv.Itoa(pid), "stat")); err == nil {
			procs[pid] = t
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
			if v, ok := pct(pid); ok {
				out.NodePct[n] = v
			}
		}
	}
	s.prev, s.prevProc, s.prevAt = ct, procs, now
	return out, nil
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
			if i == 7 {
				t.steal = x
			}
		}
		return t, nil
	}
	return cpuTimes{}, errors.New(path + ": no cpu line")
}

// readProcTicks returns a process's user + system time in clock ticks
// from /proc/PID/stat (fields 14 and 15, counted after the command name,
// which may hold spaces and parentheses).
func readProcTicks(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New(path + ": no command")
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); utime is field 14, stime 15
	if len(fields) < 13 {
		return 0, errors.New(path + ": too few fields")
	}
	u, err1 := strconv.ParseFloat(fields[11], 64)
	st, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New(path + ": bad times")
	}
	return u + st, nil
}

// Series is host.csv read back: one row per sample.
type Series struct {
	AtSec    []float64
	Load1    []float64
	StealPct []float64
	SelfPct  []float64
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
	for _, h := range recs[0][4:] {
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
		for i, n := range s.Nodes {
			s.NodePct[n] = append(s.NodePct[n], num(r[4+i]))
		}
	}
	return s, nil
}

func nan() float64 { return math.NaN() }
