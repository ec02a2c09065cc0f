package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Clock faults (docs/faults.md) move the clock one node reads. A node
// started for them runs with libfaketime preloaded and a control file of
// its own (ClockFile) that libfaketime reads on every clock call; the clock
// faults (internal/fault) write the file. Only programs that read the clock
// through libc can be reached this way: C and JVM binaries (redis,
// postgres, mariadb, cassandra), not Go programs, whose runtime reads it
// through the vDSO and raw system calls (etcd and txkv, which run from the
// faultbench binary).

// Cluster option of clock faults: OptClock=ClockFaketime (`cluster up
// --clock-faults`, a scenario's target options clock: faketime) starts the
// nodes under libfaketime. The cluster manager handles it; a launcher
// never sees it (OwnOptions).
const (
	OptClock      = "clock"
	ClockFaketime = "faketime"
)

// ClockWanted reports whether cluster options opts ask for clock faults.
func ClockWanted(opts map[string]string) bool { return opts[OptClock] == ClockFaketime }

// CheckClockOption checks the value of option OptClock ("" is off).
func CheckClockOption(v string) error {
	if v == "" || v == ClockFaketime {
		return nil
	}
	return fmt.Errorf("option %s=%q: want %s (nodes started under libfaketime for clock faults) or leave it out", OptClock, v, ClockFaketime)
}

// ErrGoClock is why a kind whose nodes run from a Go binary takes no clock
// fault.
var ErrGoClock = errors.New("its nodes are Go programs (run from the faultbench binary): libfaketime reaches only programs that read the clock through libc, and Go's runtime reads it through the vDSO and raw system calls, so a clock fault could not move their clock")

// ClockFile is the libfaketime control file of the node whose log file is
// logFile: it holds the node's clock offset in libfaketime's syntax ("+0",
// "+10", "-2.5": seconds added to the wall clock).
func ClockFile(logFile string) string { return logFile + ".faketime" }

// The libraries the clock faults preload. libfaketime's own initialisation
// allocates memory, and jemalloc (Debian's redis-server links it) reads
// the clock while it initialises: the two recurse and the node does not
// start (libfaketime issue #130). glibc's malloc debugging library in front
// of both keeps the allocations of the node's process in glibc's malloc,
// which reads no clock.
var (
	faketimeLibs    = []string{"/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1"}
	mallocDebugLibs = []string{"/lib/*/libc_malloc_debug.so.0", "/usr/lib/*/libc_malloc_debug.so.0"}
)

// firstFile returns the first existing file matching one of patterns.
func firstFile(patterns []string) string {
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		for _, f := range m {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				return f
			}
		}
	}
	return ""
}

// FaketimeLibrary returns the path of libfaketime.so.1, or why it cannot
// be used.
func FaketimeLibrary() (string, error) {
	if lib := firstFile(faketimeLibs); lib != "" {
		return lib, nil
	}
	return "", fmt.Errorf("clock faults need libfaketime.so.1 (looked in %s): install it with `scripts/setup.sh --only faketime` (Debian's libfaketime)", strings.Join(faketimeLibs, ", "))
}

// ClockEnviron returns the environment variables that start a node
// program under libfaketime with control file ClockFile(logFile), and
// creates that file with offset +0 when it does not exist (a node started
// again keeps the offset it had). Only the wall clock moves
// (FAKETIME_DONT_FAKE_MONOTONIC): a clock fault is a step of the system
// clock, which leaves CLOCK_MONOTONIC alone. inherited is the
// LD_PRELOAD the program would otherwise get.
func ClockEnviron(logFile, inherited string) ([]string, error) {
	lib, err := FaketimeLibrary()
	if err != nil {
		return nil, err
	}
	f := ClockFile(logFile)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return nil, fmt.Errorf("clock control file: %w", err)
	}
	if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
		if err := WriteClockOffset(f, "+0"); err != nil {
			return nil, err
		}
	}
	preload := []string{lib}
	if m := firstFile(mallocDebugLibs); m != "" {
		preload = []string{m, lib}
	}
	if inherited != "" {
		preload = append(preload, inherited)
	}
	return []string{
		"LD_PRELOAD=" + strings.Join(preload, ":"),
		"FAKETIME_TIMESTAMP_FILE=" + f,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
		"FAKETIME_DONT_RESET=1",
	}, nil
}

// WriteClockOffset replaces control file f's content with offset (in
// libfaketime's syntax) at once: the file is written next to it and
// renamed, so that a node reading it sees the old offset or the new one.
// The file is world-readable: nodes may run as another user (galera).
func WriteClockOffset(f, offset string) error {
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, []byte(offset+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing clock control file: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("writing clock control file: %w", err)
	}
	if err := os.Rename(tmp, f); err != nil {
		return fmt.Errorf("writing clock control file: %w", err)
	}
	return nil
}

// WithClock returns an Env like e whose node programs start under
// libfaketime (Env.Clock); e itself is unchanged.
func (e *Env) WithClock() *Env {
	return &Env{Self: e.Self, Addrs: e.Addrs, OnExit: e.OnExit, Remote: e.Remote, Disk: e.Disk, Clock: true, waiting: map[int]chan struct{}{}}
}

// clockEnviron is the environment of argv spawned with log logFile: nil
// (inherit faultbench's) unless e starts node programs under libfaketime
// and argv is one (faultbench's own processes, a network relay or a disk
// layer's server, are not: Go programs that libfaketime does not reach).
func (e *Env) clockEnviron(argv []string, logFile string) ([]string, error) {
	if !e.Clock || Program(argv) == e.Self {
		return nil, nil
	}
	var env []string
	var inherited string
	for _, kv := range os.Environ() {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			inherited = v
			continue
		}
		env = append(env, kv)
	}
	add, err := ClockEnviron(logFile, inherited)
	if err != nil {
		return nil, err
	}
	return append(env, add...), nil
}
