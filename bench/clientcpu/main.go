// Command clientcpu runs one client command of bench/vs-peers.sh and
// reports the CPU time of that client process alone, read from
// /proc/PID/stat when it has exited and before it is reaped (waitid with
// WNOWAIT): utime + stime of every thread of the process, plus cutime +
// cstime of the children it waited for (a wrapper script's java, for
// instance). Servers the benchmark talks to are other processes and are not
// counted; neither is clientcpu itself.
//
// The command's stdout and stderr pass through. One line is appended to
// the file given with -o:
//
//	cpu_seconds 12.340 wall_seconds 20.512 exit 0
//
// clientcpu exits with the command's exit status (1 when it could not be
// started or measured).
//
// Usage: clientcpu -o FILE -- COMMAND [ARGS...]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultbench/faultbench/internal/procstat"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on Linux
// (fixed for the /proc ABI on every architecture Go supports).
const clockTicks = 100

func main() {
	out := flag.String("o", "", "file to append the measurement line to (required)")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: clientcpu -o FILE -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	code, err := run(*out, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientcpu:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// run starts argv, waits for it to exit, reads its CPU time and appends the
// line to out; it returns the command's exit code.
func run(out string, argv []string) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	pid := cmd.Process.Pid
	// wait for the exit but leave the process a zombie, so that its /proc
	// entry (with its final CPU times) is still there
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return 1, fmt.Errorf("waitid %d: %w", pid, err)
		}
	}
	wall := time.Since(start)
	stat, serr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	werr := cmd.Wait() // reaps it
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		code = ee.ExitCode()
		if code < 0 {
			code = 1
		}
	case werr != nil:
		return 1, werr
	}
	if serr != nil {
		return code, serr
	}
	ticks, err := cpuTicks(string(stat))
	if err != nil {
		return code, err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return code, err
	}
	_, err = fmt.Fprintf(f, "cpu_seconds %.3f wall_seconds %.3f exit %d\n", float64(ticks)/clockTicks, wall.Seconds(), code)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return code, err
}

// cpuTicks returns utime + stime + cutime + cstime (fields 14-17) of a
// /proc/PID/stat line.
func cpuTicks(stat string) (int64, error) {
	s, err := procstat.Parse([]byte(stat))
	if err != nil {
		return 0, err
	}
	return int64(s.UTime + s.STime + s.CUTime + s.CSTime), nil
}
