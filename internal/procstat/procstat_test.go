package procstat

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// line is a /proc/PID/stat line with the given pid, command, state,
// parent and process group; utime 11, stime 12, cutime 13, cstime 14,
// start time 5000, rss 300.
func line(pid int, comm string, state string, ppid, pgrp int) string {
	return strconv.Itoa(pid) + " (" + comm + ") " + state + " " + strconv.Itoa(ppid) + " " + strconv.Itoa(pgrp) +
		" 7 0 -1 4194560 100 0 0 0 11 12 13 14 20 0 8 0 5000 1000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
}

func TestParse(t *testing.T) {
	want := func(pid int, comm string, state byte, ppid, pgrp int) Stat {
		return Stat{PID: pid, Comm: comm, State: state, PPID: ppid, PGRP: pgrp, Session: 7,
			UTime: 11, STime: 12, CUTime: 13, CSTime: 14, StartTime: 5000, RSS: 300}
	}
	tests := []struct {
		name string
		in   string
		want Stat
		err  string // a part of the error; "" for none
	}{
		{name: "plain", in: line(42, "etcd", "S", 1, 42), want: want(42, "etcd", 'S', 1, 42)},
		{name: "comm with spaces", in: line(43, "postgres: walwriter ", "R", 42, 42), want: want(43, "postgres: walwriter ", 'R', 42, 42)},
		{name: "comm with parentheses", in: line(44, "a) S 9 9 (b", "Z", 3, 4), want: want(44, "a) S 9 9 (b", 'Z', 3, 4)},
		{name: "comm only a parenthesis", in: line(45, ")", "T", 1, 1), want: want(45, ")", 'T', 1, 1)},
		{name: "empty comm", in: line(46, "", "t", 2, 2), want: want(46, "", 't', 2, 2)},
		{name: "no trailing newline", in: strings.TrimSuffix(line(47, "x", "D", 1, 1), "\n"), want: want(47, "x", 'D', 1, 1)},
		{name: "exactly up to rss", in: strings.Join(strings.Fields(line(48, "x", "S", 1, 1))[:24], " "), want: want(48, "x", 'S', 1, 1)},
		{name: "empty", in: "", err: "no command name"},
		{name: "no parentheses", in: "42 etcd S 1 42", err: "no command name"},
		{name: "only an open parenthesis", in: "42 (etcd S 1 42 7 0", err: "no command name"},
		{name: "close before open", in: "42 )etcd( S 1 42", err: "no command name"},
		{name: "bad pid", in: strings.Replace(line(42, "x", "S", 1, 1), "42", "4x", 1), err: "pid"},
		{name: "too few fields", in: "42 (etcd) S 1 42 7 0 -1 4194560 100 0 0 0 11 12", err: "fields"},
		{name: "state too long", in: strings.Replace(line(42, "x", "S", 1, 1), ") S ", ") SS ", 1), err: "state"},
		{name: "bad ppid", in: strings.Replace(line(42, "x", "S", 1, 1), ") S 1 ", ") S one ", 1), err: "field 4"},
		{name: "bad utime", in: strings.Replace(line(42, "x", "S", 1, 1), " 11 12 ", " eleven 12 ", 1), err: "field 14"},
		{name: "negative stime", in: strings.Replace(line(42, "x", "S", 1, 1), " 11 12 ", " 11 -12 ", 1), err: "field 15"},
		{name: "bad start time", in: strings.Replace(line(42, "x", "S", 1, 1), " 5000 ", " 5e3 ", 1), err: "field 22"},
		{name: "bad rss", in: strings.Replace(line(42, "x", "S", 1, 1), " 300 ", " 3OO ", 1), err: "field 24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestStates(t *testing.T) {
	tests := []struct {
		state         byte
		live, stopped bool
	}{
		{'R', true, false}, {'S', true, false}, {'D', true, false}, {'I', true, false},
		{'T', true, true}, {'t', true, true}, {'Z', false, false}, {'X', false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			s := Stat{State: tt.state}
			if s.Live() != tt.live || s.Stopped() != tt.stopped {
				t.Errorf("state %c: live %v stopped %v, want %v %v", tt.state, s.Live(), s.Stopped(), tt.live, tt.stopped)
			}
		})
	}
}

// fakeProc writes a /proc with the processes of lines (pid -> line) and
// a few entries that are not processes.
func fakeProc(t *testing.T, lines map[int]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, l := range lines {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(l), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"self", "sys", "0"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "77"), 0o755); err != nil { // exited during the scan: no stat
		t.Fatal(err)
	}
	return root
}

// TestScanAndTrees: a /proc of two process trees, a process group whose
// leader's child left it, a zombie, an unreadable line and a gone process.
func TestScanAndTrees(t *testing.T) {
	root := fakeProc(t, map[int]string{
		1:  line(1, "init", "S", 0, 1),
		10: line(10, "postmaster (pg)", "S", 1, 10), // a node's root
		11: line(11, "postgres: checkpointer", "S", 10, 10),
		12: line(12, "postgres: backend", "Z", 10, 10), // zombie child
		13: line(13, "worker", "S", 11, 10),            // grandchild
		20: line(20, "other", "S", 1, 20),
		21: line(21, "joined", "S", 20, 10), // in 10's group, child of 20
		22: line(22, "child of joined", "R", 21, 22),
		30: "30 (broken",
	})
	tab, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for p := range tab {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	if want := []int{1, 10, 11, 12, 13, 20, 21, 22}; !slices.Equal(pids, want) {
		t.Fatalf("Scan: pids %v, want %v", pids, want)
	}
	live := tab.Live()
	tests := []struct {
		name string
		got  []int
		want []int
	}{
		{"children", tab.Children(10), []int{11, 12}},
		{"children of a leaf", tab.Children(13), nil},
		{"group", tab.Group(10), []int{10, 11, 12, 13, 21}},
		{"tree", tab.Tree(10), []int{10, 11, 12, 13}},
		{"tree without zombies", live.Tree(10), []int{10, 11, 13}},
		{"tree of group members", live.Tree(append([]int{10}, live.Group(10)...)...), []int{10, 11, 13, 21, 22}},
		{"two roots, overlapping", tab.Tree(11, 10, 20), []int{10, 11, 12, 13, 20, 21, 22}},
		{"a gone root", tab.Tree(99, 13), []int{13}},
		{"no roots", tab.Tree(), []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	t.Run("owners", func(t *testing.T) {
		// 10 and 11 both roots: 11 (a node inside 10's tree, as a
		// postmaster under its keeper) owns its subtree, 10 the rest
		got := tab.Owners(10, 11, 99)
		want := map[int]int{10: 10, 12: 10, 11: 11, 13: 11}
		if len(got) != len(want) {
			t.Fatalf("Owners = %v, want %v", got, want)
		}
		for p, r := range want {
			if got[p] != r {
				t.Errorf("Owners: %d -> %d, want %d (all %v)", p, got[p], r, got)
			}
		}
	})
	t.Run("descends", func(t *testing.T) {
		for _, c := range []struct {
			pid, anc int
			want     bool
		}{{13, 10, true}, {13, 13, true}, {22, 20, true}, {22, 10, false}, {20, 10, false}, {99, 10, false}, {13, 0, false}} {
			if got := DescendsFrom(root, c.pid, c.anc, 64); got != c.want {
				t.Errorf("DescendsFrom(%d, %d) = %v, want %v", c.pid, c.anc, got, c.want)
			}
		}
	})
	if _, err := Scan(filepath.Join(root, "none")); err == nil {
		t.Error("Scan of a missing root: no error")
	}
}

// TestReadSelf: the real /proc line of this process parses, with its own
// pid, its parent and a live state.
func TestReadSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	s, err := Read(Root, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.PID != os.Getpid() || s.PPID != os.Getppid() || !s.Live() || s.StartTime == 0 || s.RSS <= 0 {
		t.Errorf("Read(self) = %+v", s)
	}
	if !Alive(os.Getpid()) || Alive(0) || Alive(-1) {
		t.Error("Alive")
	}
}
