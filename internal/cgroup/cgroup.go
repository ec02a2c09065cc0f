// Package cgroup puts the processes of one database node into a control
// group of their own and limits it: a share of a core (cpu-throttle), a
// memory mark the kernel reclaims down to (memory-pressure), or frozen
// (stall). It works with cgroup v2 (cpu.max, memory.high, cgroup.freeze)
// and with the v1 hierarchies of a hybrid machine (cpu.cfs_quota_us,
// memory.limit_in_bytes, freezer.state), whichever holds the controller.
//
// A node's group is a directory named Prefix+NAME: on v1 created below the
// cgroup the node's processes are in (so that limits set above, such as a
// container's memory limit, still hold), on v2 below the root of the
// hierarchy. Release moves the processes back to the group's parent and
// removes it; CleanupAll removes every group of that prefix, for
// `faultbench cleanup` after faultbench was killed. It imports the
// standard library only.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
)

// Prefix starts the name of every group this package creates.
const Prefix = "faultbench-"

// Controller is what a group limits.
type Controller string

// The controllers the slow-node faults use.
const (
	CPU     Controller = "cpu"
	Memory  Controller = "memory"
	Freezer Controller = "freezer"
)

// Controllers are the controllers this package knows, in order.
var Controllers = []Controller{CPU, Memory, Freezer}

// CPUPeriod is the period of the CPU quota: a share of a core is a quota
// of that share of it per period.
const CPUPeriod = 100 * time.Millisecond

// mount is where the hierarchy holding a controller is mounted.
type mount struct {
	dir string
	v2  bool
}

// System is the machine's cgroup file systems as /proc/self/mountinfo
// lists them.
type System struct {
	v1 map[Controller]string // controller -> mount point of its v1 hierarchy
	v2 string                // mount point of the v2 hierarchy ("" if none)
}

// Open reads the cgroup mounts of this machine.
func Open() (*System, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	return parseMountinfo(b), nil
}

// parseMountinfo reads mountinfo's cgroup and cgroup2 mounts.
func parseMountinfo(b []byte) *System {
	s := &System{v1: map[Controller]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			if s.v2 == "" || f[4] == "/sys/fs/cgroup" {
				s.v2 = f[4]
			}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if slices.Contains(Controllers, Controller(o)) {
					s.v1[Controller(o)] = f[4]
				}
			}
		}
	}
	return s
}

// mountOf returns the hierarchy that holds ctrl: its v1 hierarchy, else
// the v2 one when it has the controller (the freezer is in every v2
// hierarchy: cgroup.freeze).
func (s *System) mountOf(ctrl Controller) (mount, error) {
	if d, ok := s.v1[ctrl]; ok {
		return mount{dir: d}, nil
	}
	if s.v2 != "" {
		if ctrl == Freezer {
			return mount{dir: s.v2, v2: true}, nil
		}
		b, _ := os.ReadFile(filepath.Join(s.v2, "cgroup.controllers"))
		if slices.Contains(strings.Fields(string(b)), string(ctrl)) {
			return mount{dir: s.v2, v2: true}, nil
		}
	}
	return mount{}, fmt.Errorf("no cgroup hierarchy on this machine has the %s controller (neither a v1 mount nor the v2 hierarchy's cgroup.controllers)", ctrl)
}

// Check says whether groups for ctrl can be made here: the hierarchy
// exists and is writable (root, or delegated to this user).
func (s *System) Check(ctrl Controller) error {
	m, err := s.mountOf(ctrl)
	if err != nil {
		return err
	}
	if err := syscallAccessW(m.dir); err != nil {
		return fmt.Errorf("the cgroup hierarchy %s (%s) is not writable by this user (%v): the slow-node faults need root", m.dir, ctrl, err)
	}
	return nil
}

// Group is one node's group for one controller.
type Group struct {
	Ctrl Controller
	Dir  string
	v2   bool
}

// currentPath is the cgroup of pid in the hierarchy of m holding ctrl, as
// /proc/PID/cgroup lists it ("/" for the root).
func currentPath(pid int, ctrl Controller, m mount) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("cgroup of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if m.v2 && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		if !m.v2 && slices.Contains(strings.Split(parts[1], ","), string(ctrl)) {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("pid %d is in no %s cgroup", pid, ctrl)
}

// Make returns the group named Prefix+name for ctrl of the node whose
// main process is pid, creating it when it does not exist: on v1 below
// pid's cgroup (or pid's group itself, when pid is already in it), on v2
// below the hierarchy's root with the controller enabled there.
func (s *System) Make(ctrl Controller, name string, pid int) (*Group, error) {
	m, err := s.mountOf(ctrl)
	if err != nil {
		return nil, err
	}
	base := Prefix + name
	var dir string
	if m.v2 {
		dir = filepath.Join(m.dir, base)
		if ctrl != Freezer {
			if err := enable(m.dir, ctrl); err != nil {
				return nil, err
			}
		}
	} else {
		cur, err := currentPath(pid, ctrl, m)
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(m.dir, cur)
		if filepath.Base(dir) != base {
			dir = filepath.Join(dir, base)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	g := &Group{Ctrl: ctrl, Dir: dir, v2: m.v2}
	if ctrl == Memory && !m.v2 {
		// the memory the processes use is charged to the group they move
		// to (v1 leaves it with the old group otherwise)
		_ = g.write("memory.move_charge_at_immigrate", "3")
	}
	return g, nil
}

// enable turns ctrl on for the children of the v2 root dir.
func enable(dir string, ctrl Controller) error {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if slices.Contains(strings.Fields(string(b)), string(ctrl)) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+string(ctrl)), 0o644); err != nil {
		return fmt.Errorf("enabling the %s controller in %s: %w", ctrl, dir, err)
	}
	return nil
}

func (g *Group) write(file, v string) error {
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(v), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: writing %q to %s: %w", g.Dir, v, file, err)
	}
	return nil
}

func (g *Group) read(file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, file))
	if err != nil {
		return "", fmt.Errorf("cgroup %s: %w", g.Dir, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Add moves pids (whole processes with their threads) into the group; a
// pid gone meanwhile is skipped. Children they fork later are born in it.
func (g *Group) Add(pids []int) error {
	var errs []error
	for _, p := range pids {
		err := g.write("cgroup.procs", strconv.Itoa(p))
		if err != nil && alive(p) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Procs lists the processes in the group.
func (g *Group) Procs() ([]int, error) { return ProcsIn(g.Dir) }

// ProcsIn lists the processes in the group of directory dir.
func ProcsIn(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// SetCPU limits the group's processes together to percent of one core
// (100: one core); 0 removes the limit.
func (g *Group) SetCPU(percent int) error {
	period := int(CPUPeriod / time.Microsecond)
	if g.v2 {
		if percent == 0 {
			return g.write("cpu.max", "max "+strconv.Itoa(period))
		}
		return g.write("cpu.max", fmt.Sprintf("%d %d", period*percent/100, period))
	}
	if err := g.write("cpu.cfs_period_us", strconv.Itoa(period)); err != nil {
		return err
	}
	if percent == 0 {
		return g.write("cpu.cfs_quota_us", "-1")
	}
	return g.write("cpu.cfs_quota_us", strconv.Itoa(period*percent/100))
}

// CPU returns the group's limit in percent of one core, 0 when none.
func (g *Group) CPU() (int, error) {
	if g.v2 {
		v, err := g.read("cpu.max")
		if err != nil {
			return 0, err
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[0] == "max" {
			return 0, nil
		}
		q, err1 := strconv.Atoi(f[0])
		p, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || p == 0 {
			return 0, fmt.Errorf("cgroup %s: cpu.max %q", g.Dir, v)
		}
		return q * 100 / p, nil
	}
	qs, err := g.read("cpu.cfs_quota_us")
	if err != nil {
		return 0, err
	}
	ps, err := g.read("cpu.cfs_period_us")
	if err != nil {
		return 0, err
	}
	q, err1 := strconv.Atoi(qs)
	p, err2 := strconv.Atoi(ps)
	if err1 != nil || err2 != nil || p == 0 {
		return 0, fmt.Errorf("cgroup %s: quota %q period %q", g.Dir, qs, ps)
	}
	if q < 0 {
		return 0, nil
	}
	return q * 100 / p, nil
}

// SetMemory sets the mark the kernel reclaims the group's memory down to:
// memory.high on v2 (the processes are slowed and reclaimed from, never
// killed), memory.limit_in_bytes on v1, which has no such mark (when the
// kernel cannot reclaim enough the group's OOM killer acts). 0 removes it.
// What a group is charged is what its processes allocated (and read into
// the page cache) since they joined it: the kernel moves no charge with a
// process (v2 never; v1 no longer, move_charge_at_immigrate being gone
// from recent kernels).
func (g *Group) SetMemory(bytes int64) error {
	if g.v2 {
		if bytes == 0 {
			return g.write("memory.high", "max")
		}
		return g.write("memory.high", strconv.FormatInt(bytes, 10))
	}
	if bytes == 0 {
		return g.write("memory.limit_in_bytes", "-1")
	}
	return g.write("memory.limit_in_bytes", strconv.FormatInt(bytes, 10))
}

// MemoryLimit returns the mark SetMemory set, 0 when none.
func (g *Group) MemoryLimit() (int64, error) {
	file := "memory.limit_in_bytes"
	if g.v2 {
		file = "memory.high"
	}
	v, err := g.read(file)
	if err != nil || v == "max" {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %s %q", g.Dir, file, v)
	}
	if n >= 1<<62 { // v1's "no limit" is a page-rounded huge number
		return 0, nil
	}
	return n, nil
}

// MemoryUsage returns the memory charged to the group.
func (g *Group) MemoryUsage() (int64, error) {
	file := "memory.usage_in_bytes"
	if g.v2 {
		file = "memory.current"
	}
	v, err := g.read(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Freeze freezes (or thaws) every process of the group: they stop
// running but stay in their state as the kernel and their peers see it
// (sleeping, connections open), with no signal sent.
func (g *Group) Freeze(frozen bool) error {
	if g.v2 {
		return g.write("cgroup.freeze", map[bool]string{true: "1", false: "0"}[frozen])
	}
	return g.write("freezer.state", map[bool]string{true: "FROZEN", false: "THAWED"}[frozen])
}

// Frozen reports whether every process of the group is frozen (a freeze
// in progress is not).
func (g *Group) Frozen() (bool, error) {
	if g.v2 {
		v, err := g.read("cgroup.events")
		return strings.Contains("\n"+v+"\n", "\nfrozen 1\n"), err
	}
	v, err := g.read("freezer.state")
	return v == "FROZEN", err
}

// Release undoes the group: thawed and unlimited, its processes moved to
// the parent group, the directory removed.
func (g *Group) Release() error { return release(g.Ctrl, g.Dir, g.v2) }

func release(ctrl Controller, dir string, v2 bool) error {
	g := &Group{Ctrl: ctrl, Dir: dir, v2: v2}
	var errs []error
	switch ctrl {
	case Freezer:
		errs = append(errs, g.Freeze(false))
	case CPU:
		errs = append(errs, g.SetCPU(0))
	case Memory:
		errs = append(errs, g.SetMemory(0))
	}
	pids, err := g.Procs()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	parent := &Group{Ctrl: ctrl, Dir: filepath.Dir(dir), v2: v2}
	errs = append(errs, parent.Add(pids))
	// a process moved out may take a moment to leave the group's count
	deadline := time.Now().Add(5 * time.Second)
	for {
		err = os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.Join(errs...)
}

// Find returns the existing group Prefix+name for ctrl (nil when there is
// none).
func (s *System) Find(ctrl Controller, name string) (*Group, error) {
	m, err := s.mountOf(ctrl)
	if err != nil {
		return nil, err
	}
	for _, d := range findGroups(m.dir, 8) {
		if filepath.Base(d) == Prefix+name {
			return &Group{Ctrl: ctrl, Dir: d, v2: m.v2}, nil
		}
	}
	return nil, nil
}

// Throttling is what the CPU limit did to a group (cpu.stat).
type Throttling struct {
	Periods, Throttled int64         // periods with runnable processes; those that hit the limit
	Time               time.Duration // how long its processes were held back
}

// Throttled reads the group's cpu.stat.
func (g *Group) Throttled() (Throttling, error) {
	v, err := g.read("cpu.stat")
	if err != nil {
		return Throttling{}, err
	}
	var t Throttling
	for _, line := range strings.Split(v, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "nr_periods":
			t.Periods = n
		case "nr_throttled":
			t.Throttled = n
		case "throttled_time": // v1, ns
			t.Time = time.Duration(n)
		case "throttled_usec": // v2
			t.Time = time.Duration(n) * time.Microsecond
		}
	}
	return t, nil
}

// Left lists the directories of every group this package created that
// still exists, per controller (a v2 group is listed once, as the
// freezer's when it has no other).
func (s *System) Left() map[Controller][]string {
	out := map[Controller][]string{}
	seen := map[string]bool{}
	for _, ctrl := range Controllers {
		m, err := s.mountOf(ctrl)
		if err != nil {
			continue
		}
		for _, d := range findGroups(m.dir, 8) {
			if !seen[d] {
				seen[d] = true
				out[ctrl] = append(out[ctrl], d)
			}
		}
	}
	return out
}

// CleanupAll releases every group this package created (Left) but those
// keep says to keep (nil: none), and returns the directories it removed.
func (s *System) CleanupAll(keep func(dir string) bool) ([]string, error) {
	var removed []string
	var errs []error
	for ctrl, dirs := range s.Left() {
		m, _ := s.mountOf(ctrl)
		for _, d := range dirs {
			if keep != nil && keep(d) {
				continue
			}
			if m.v2 { // one directory for every controller
				g := &Group{Dir: d, v2: true}
				errs = append(errs, g.Freeze(false), g.SetCPU(0), g.SetMemory(0))
			}
			if err := release(ctrl, d, m.v2); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, d)
		}
	}
	slices.Sort(removed)
	return removed, errors.Join(errs...)
}

// findGroups walks dir (at most depth levels) for directories named
// Prefix*, not below one another.
func findGroups(dir string, depth int) []string {
	if depth == 0 {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, p)
			continue
		}
		out = append(out, findGroups(p, depth-1)...)
	}
	return out
}

// Tree returns pid, its descendants and the other members of its process
// group, the processes of a node started as one process group.
func Tree(pid int) []int {
	tab, err := procstat.Scan(procstat.Root)
	if err != nil {
		return []int{pid}
	}
	live := tab.Live()
	out := live.Tree(append([]int{pid}, live.Group(pid)...)...)
	if !slices.Contains(out, pid) {
		out = append(out, pid)
		slices.Sort(out)
	}
	return out
}

// RSS is the resident memory of pids together (VmRSS), in bytes.
func RSS(pids []int) int64 {
	var sum int64
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f := strings.Fields(v) // "1234 kB"
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && len(f) == 2 && f[1] == "kB" {
					sum += n << 10
				}
			}
		}
	}
	return sum
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// syscallAccessW checks that this process may write in dir.
func syscallAccessW(dir string) error { return syscall.Access(dir, 2 /* W_OK */) }
