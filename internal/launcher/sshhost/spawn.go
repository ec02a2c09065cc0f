package sshhost

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
)

// Spawn is the body of the hidden `faultbench spawn --log FILE -- ARGV...`
// that a node host runs over SSH: it starts ARGV in a new session (setsid:
// no controlling terminal, its own process group, so neither the end of
// the SSH session nor timeout(1) reaches it), standard input from
// /dev/null, standard output and error appended to FILE, writes its pid to
// the file "pid" next to FILE (for `cleanup --hosts`), prints the pid and
// returns without waiting for it.
func Spawn(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("faultbench "+SpawnCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	logFile := fs.String("log", "", "log file (required)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", SpawnCommand, err)
	}
	argv := fs.Args()
	if *logFile == "" || len(argv) == 0 {
		return fmt.Errorf("%s: usage: faultbench %s --log FILE -- PROGRAM [ARGS...]", SpawnCommand, SpawnCommand)
	}
	if err := os.MkdirAll(filepath.Dir(*logFile), 0o755); err != nil {
		return fmt.Errorf("%s: %w", SpawnCommand, err)
	}
	if err := endEarlierStart(filepath.Dir(*logFile)); err != nil {
		return fmt.Errorf("%s: %w", SpawnCommand, err)
	}
	lf, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", SpawnCommand, err)
	}
	defer lf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s %s: %w", SpawnCommand, strings.Join(argv, " "), err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	if err := writePidFile(filepath.Dir(*logFile), pid); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("%s: recording the pid: %w", SpawnCommand, err)
	}
	_, err = fmt.Fprintln(stdout, pid)
	return err
}

// endEarlierStart ends the process an earlier Spawn recorded in dir's pid
// file if it is still that process (recordedProcess: same start time; a
// recycled pid is not). It is the node started again while the
// process of an earlier start still runs: that start's SSH call ended (a
// timeout on a loaded machine) after the process had started, so the
// launcher never learnt its pid; it holds the node's ports and data
// directory, and the new process could not bind ("address already in
// use").
func endEarlierStart(dir string) error {
	pid, ok := recordedProcess(dir)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := endProcess(ctx, pid); err != nil {
		return fmt.Errorf("ending pid %d of an earlier start of %s: %w", pid, dir, err)
	}
	return nil
}

// CleanNodes is the body of the hidden `faultbench cleanup-host --dir DIR`
// that `faultbench cleanup --hosts` runs on every host: it ends every
// process recorded in a pid file under DIR/nodes that is still the process
// spawn recorded there (recordedProcess: its pid and start time; SIGCONT,
// SIGTERM, SIGKILL after 5 s), removes
// DIR/nodes, and writes one line per thing it did to w. A host with
// nothing there writes nothing; running it twice is harmless.
func CleanNodes(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("faultbench "+CleanupCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "faultbench's directory on this host (required)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", CleanupCommand, err)
	}
	if *dir == "" || fs.NArg() > 0 {
		return fmt.Errorf("%s: usage: faultbench %s --dir DIR", CleanupCommand, CleanupCommand)
	}
	root := filepath.Join(*dir, NodesDir)
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	pidFiles, err := findPidFiles(root)
	if err != nil {
		return fmt.Errorf("%s: %w", CleanupCommand, err)
	}
	var errs []error
	for _, pf := range pidFiles {
		nodeDir := filepath.Dir(pf)
		pid, ok := recordedProcess(nodeDir)
		if !ok {
			continue // gone, or the pid is another process's now
		}
		if err := endProcess(ctx, pid); err != nil {
			errs = append(errs, fmt.Errorf("pid %d (%s): %w", pid, nodeDir, err))
			continue
		}
		fmt.Fprintf(w, "stopped pid %d (%s)\n", pid, nodeDir)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", CleanupCommand, errors.Join(errs...))
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("%s: %w", CleanupCommand, err)
	}
	fmt.Fprintf(w, "removed %s\n", root)
	return nil
}

// findPidFiles returns every DIR/CLUSTER/NODE/pid under root, sorted.
func findPidFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		depth := strings.Count(rel, string(filepath.Separator))
		if d.IsDir() && depth >= 2 {
			if depth > 2 || d.Name() == "data" {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && d.Name() == "pid" && depth == 2 {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// endProcess stops pid: SIGCONT, SIGTERM, SIGKILL after 5 s, and waits
// until it is gone.
func endProcess(ctx context.Context, pid int) error {
	gone := func() bool { return !procstat.Alive(pid) }
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for _, sig := range []syscall.Signal{0, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(pid, sig)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !gone() {
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		if gone() {
			return nil
		}
	}
	return errors.New("still running 5 s after SIGKILL")
}
