package sshhost

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/procstat"
)

// The pid file of a node directory names the process spawn started: its
// pid and its start time (field 22 of /proc/PID/stat, ticks since boot),
// "PID START\n". The pair names one process across pid reuse, whatever
// the process does to its command line (redis-server replaces it with its
// title, so the node directory is no longer in it). A pid file of an older
// faultbench has the pid alone; its process is recognised by its command
// line naming the node directory, as before.

// writePidFile records pid (and its start time, when it can be read) in
// dir/pid.
func writePidFile(dir string, pid int) error {
	line := strconv.Itoa(pid)
	if st, ok := startTime(pid); ok {
		line += " " + strconv.FormatUint(st, 10)
	}
	return os.WriteFile(filepath.Join(dir, "pid"), []byte(line+"\n"), 0o644)
}

// recordedProcess returns the pid recorded in dir/pid when that process
// still runs and is the one recorded (same start time, or for a pid file
// without one, a command line naming dir); ok is false otherwise.
func recordedProcess(dir string) (pid int, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if len(f) > 1 {
		want, err := strconv.ParseUint(f[1], 10, 64)
		got, live := startTime(pid)
		return pid, err == nil && live && got == want
	}
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return pid, err == nil && bytes.Contains(cmd, []byte(dir+"/"))
}

// startTime returns pid's start time (procstat); false when the process
// is gone or a zombie.
func startTime(pid int) (uint64, bool) {
	st, err := procstat.Read(procstat.Root, pid)
	if err != nil || !st.Live() {
		return 0, false
	}
	return st.StartTime, true
}
