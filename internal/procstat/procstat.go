// Package procstat reads Linux's /proc/PID/stat: a process's command name,
// state, parent, process group, session, CPU times, start time and
// resident set, and the process trees of a whole /proc scan. It is the one
// parser of that line in faultbench: the command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')' (proc(5)).
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Root is the mount point of the machine's proc file system.
const Root = "/proc"

// Stat is what faultbench reads of one /proc/PID/stat line. The times are
// in clock ticks (USER_HZ, 100 on Linux).
type Stat struct {
	PID     int
	Comm    string // the command name, without its parentheses
	State   byte   // R, S, D, T, t, Z, X, ...
	PPID    int
	PGRP    int
	Session int
	UTime   uint64 // user time
	STime   uint64 // system time
	CUTime  uint64 // user time of waited-for children
	CSTime  uint64 // system time of waited-for children
	// StartTime is when the process started, in ticks since boot: with
	// the pid it names one process across pid reuse.
	StartTime uint64
	RSS       int64 // resident set, in pages
}

// fields is how many fields a line must have: up to rss (field 24).
const fields = 24

// Parse parses one /proc/PID/stat line.
func Parse(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return s, fmt.Errorf("stat %q: no command name in parentheses", short(b))
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return s, fmt.Errorf("stat %q: pid: %w", short(b), err)
	}
	f := bytes.Fields(b[end+1:]) // f[0] is field 3, the state
	if len(f) < fields-2 {
		return s, fmt.Errorf("stat %q: %d fields, want at least %d", short(b), len(f)+2, fields)
	}
	if len(f[0]) != 1 {
		return s, fmt.Errorf("stat %q: state %q", short(b), f[0])
	}
	s.PID, s.Comm, s.State = pid, string(b[open+1:end]), f[0][0]
	field := func(n int) []byte { return f[n-3] }
	ints := []struct {
		n   int
		dst *int
	}{{4, &s.PPID}, {5, &s.PGRP}, {6, &s.Session}}
	for _, x := range ints {
		if *x.dst, err = strconv.Atoi(string(field(x.n))); err != nil {
			return s, fmt.Errorf("stat %q: field %d: %w", short(b), x.n, err)
		}
	}
	uints := []struct {
		n   int
		dst *uint64
	}{{14, &s.UTime}, {15, &s.STime}, {16, &s.CUTime}, {17, &s.CSTime}, {22, &s.StartTime}}
	for _, x := range uints {
		v, err := strconv.ParseInt(string(field(x.n)), 10, 64)
		if err == nil && v < 0 {
			err = errors.New("negative")
		}
		if err != nil {
			return s, fmt.Errorf("stat %q: field %d: %w", short(b), x.n, err)
		}
		*x.dst = uint64(v)
	}
	if s.RSS, err = strconv.ParseInt(string(field(24)), 10, 64); err != nil {
		return s, fmt.Errorf("stat %q: field 24: %w", short(b), err)
	}
	return s, nil
}

func short(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Read reads the stat of process pid under root (Root, or a copy of a
// /proc in tests).
func Read(root string, pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Live reports whether the process runs: it is not a zombie (Z) or dead
// (X).
func (s Stat) Live() bool { return s.State != 'Z' && s.State != 'X' }

// Stopped reports whether the process is stopped by a signal (T) or by a
// tracer (t).
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// CPU is the process's own user and system time in ticks.
func (s Stat) CPU() uint64 { return s.UTime + s.STime }

// Alive reports whether process pid exists under Root and is not a zombie.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	s, err := Read(Root, pid)
	return err == nil && s.Live()
}

// Table is one scan of a /proc: every process read, by pid.
type Table map[int]Stat

// Scan reads every process under root. A process that exits during the
// scan, or whose line does not parse, is left out; only a root that cannot
// be listed is an error.
func Scan(root string) (Table, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	t := Table{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if s, err := Read(root, pid); err == nil {
			t[pid] = s
		}
	}
	return t, nil
}

// Live returns the processes of t that are not zombies.
func (t Table) Live() Table {
	out := make(Table, len(t))
	for p, s := range t {
		if s.Live() {
			out[p] = s
		}
	}
	return out
}

// Children returns the pids whose parent is pid, in order.
func (t Table) Children(pid int) []int {
	var out []int
	for p, s := range t {
		if s.PPID == pid && p != pid {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Group returns the pids of process group pgid, in order.
func (t Table) Group(pgid int) []int {
	var out []int
	for p, s := range t {
		if s.PGRP == pgid {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Tree returns the roots that are in t and all their descendants by
// parent pid, each once, in order.
func (t Table) Tree(roots ...int) []int {
	children := map[int][]int{}
	for p, s := range t {
		if p != s.PPID {
			children[s.PPID] = append(children[s.PPID], p)
		}
	}
	in := map[int]bool{}
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if _, ok := t[p]; !ok || in[p] {
			continue
		}
		in[p] = true
		queue = append(queue, children[p]...)
	}
	out := make([]int, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Owners attributes the processes of t to roots: every process in a
// root's tree (the root and its descendants by parent pid) maps to that
// root, and a root inside another root's tree owns its own subtree (the
// nearest root above a process wins). Roots not in t own nothing.
func (t Table) Owners(roots ...int) map[int]int {
	isRoot := map[int]bool{}
	for _, r := range roots {
		if _, ok := t[r]; ok {
			isRoot[r] = true
		}
	}
	children := map[int][]int{}
	for p, s := range t {
		if p != s.PPID {
			children[s.PPID] = append(children[s.PPID], p)
		}
	}
	out := map[int]int{}
	for r := range isRoot {
		queue := []int{r}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if _, done := out[p]; done {
				continue
			}
			out[p] = r
			for _, c := range children[p] {
				if !isRoot[c] {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// DescendsFrom reports whether pid is anc or a descendant of anc, walking
// pid's parents under root (at most depth steps up).
func DescendsFrom(root string, pid, anc, depth int) bool {
	for range depth {
		if pid == anc {
			return true
		}
		if pid <= 1 || anc <= 0 {
			return false
		}
		s, err := Read(root, pid)
		if err != nil {
			return false
		}
		pid = s.PPID
	}
	return false
}
