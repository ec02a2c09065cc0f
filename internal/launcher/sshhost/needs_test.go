package sshhost

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckNeedsHere checks `faultbench host-check`: a program on PATH is
// found, a missing one and a taken port are reported (the negative
// controls of the check a host must pass before nodes start there).
func TestCheckNeedsHere(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	tests := []struct {
		name        string
		args        []string
		wantMissing []string
	}{
		{name: "all there", args: []string{"--program", "sh", "--port", freeAddr}},
		{name: "missing program", args: []string{"--program", "no-such-program-fb30"}, wantMissing: []string{"program no-such-program-fb30"}},
		{name: "taken port", args: []string{"--program", "sh", "--port", l.Addr().String()}, wantMissing: []string{"port " + l.Addr().String()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := CheckNeedsHere(tc.args, &out); err != nil {
				t.Fatal(err)
			}
			var r needsReport
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", out.String(), err)
			}
			if len(r.Missing) != len(tc.wantMissing) {
				t.Fatalf("missing %v, want %v", r.Missing, tc.wantMissing)
			}
			for i, w := range tc.wantMissing {
				if !strings.HasPrefix(r.Missing[i], w) {
					t.Errorf("missing[%d] = %q, want %q...", i, r.Missing[i], w)
				}
			}
			if len(tc.wantMissing) == 0 && !filepath.IsAbs(r.Programs["sh"]) {
				t.Errorf("programs %v: want sh's absolute path", r.Programs)
			}
		})
	}
}

// TestRecordedProcess checks the pid file's identity: the process spawn
// recorded is recognised by its pid and start time even when its command
// line does not name the node directory (redis-server's title), and a pid
// file whose start time is another's (a reused pid) is not.
func TestRecordedProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if err := writePidFile(dir, pid); err != nil {
		t.Fatal(err)
	}
	if got, ok := recordedProcess(dir); !ok || got != pid {
		t.Fatalf("recordedProcess = %d, %v; want %d, true (sleep's command line does not name %s)", got, ok, pid, dir)
	}
	st, _ := startTime(pid)
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(pid)+" "+strconv.FormatUint(st+1, 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := recordedProcess(dir); ok {
		t.Fatal("a pid file with another start time names the process (a reused pid would be killed)")
	}
	// an old pid file (pid alone) falls back to the command line
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := recordedProcess(dir); ok {
		t.Fatal("a pid-only file names a process whose command line does not name the directory")
	}
}

// TestFindProcesses checks `faultbench find-process`: the process whose
// command line matches is found, the finder itself (whose own command line
// holds the pattern) is not, and a pattern nothing matches finds nothing.
func TestFindProcesses(t *testing.T) {
	marker := "fb30-find-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// tail follows a file named by the marker without forking (a shell
	// would fork, and its child has the same command line until it execs)
	file := filepath.Join(t.TempDir(), marker)
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("tail", "-f", file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for _, tc := range []struct {
		pattern string
		want    []int
	}{
		{pattern: marker, want: []int{cmd.Process.Pid}},
		{pattern: marker + "-nothing", want: []int{}},
	} {
		var out bytes.Buffer
		if err := FindProcesses([]string{"--pattern", tc.pattern}, &out); err != nil {
			t.Fatal(err)
		}
		var pids []int
		if err := json.Unmarshal(out.Bytes(), &pids); err != nil {
			t.Fatal(err)
		}
		if len(pids) != len(tc.want) || (len(pids) == 1 && pids[0] != tc.want[0]) {
			t.Errorf("find %q = %v, want %v", tc.pattern, pids, tc.want)
		}
	}
}
