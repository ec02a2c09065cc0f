package postgresha

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/procstat"
)

// lookupUser returns the uid and gid of an operating-system user.
func lookupUser(name string) (uid, gid uint32, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: %w (Debian's postgresql package creates the postgres user: run scripts/setup.sh --only postgres)", name, err)
	}
	ui, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gi, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %q has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	return uint32(ui), uint32(gi), nil
}

// nodeEnv is the environment of every pg_autoctl process of one node: its
// own HOME and XDG directories (pg_autoctl keeps its config, state and pid
// files there), the PostgreSQL bin directory first on PATH, and a locale
// that initdb accepts.
func nodeEnv(cfg config, nodeDir string) []string {
	return []string{
		"HOME=" + nodeDir,
		"XDG_CONFIG_HOME=" + filepath.Join(nodeDir, "xdg", "config"),
		"XDG_DATA_HOME=" + filepath.Join(nodeDir, "xdg", "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(nodeDir, "xdg", "run"),
		"PG_CONFIG=" + filepath.Join(cfg.binDir, "pg_config"),
		"PATH=" + cfg.binDir + ":/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"PGCONNECT_TIMEOUT=5",
	}
}

// makeNodeDirs creates a node's directory tree, owned by the postgres user.
func makeNodeDirs(cfg config, nodeDir string) error {
	for _, d := range []string{nodeDir, filepath.Join(nodeDir, "xdg", "config"), filepath.Join(nodeDir, "xdg", "data"), filepath.Join(nodeDir, "xdg", "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return chownTree(nodeDir, cfg.uid, cfg.gid)
}

// chownTree gives dir and everything below it to uid:gid.
func chownTree(dir string, uid, gid uint32) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, int(uid), int(gid)); err != nil {
			return fmt.Errorf("chown %s to the postgres user: %w", p, err)
		}
		return nil
	})
}

// runAs runs argv to completion as the postgres user with env, appending
// its output to logFile. The error carries the last lines of the output.
// With a wrap (the node's netns-exec prefix) it runs inside the node's
// network namespace: the wrapper enters it as root, then setpriv drops to
// the postgres user.
func runAs(ctx context.Context, cfg config, wrap, env []string, logFile string, argv ...string) error {
	lf, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	var buf bytes.Buffer
	fmt.Fprintf(lf, "---- faultbench runs: %s\n", strings.Join(argv, " "))
	run := argv
	if len(wrap) > 0 {
		run = append(append(append([]string(nil), wrap...), setprivArgv(cfg)...), argv...)
	}
	cmd := exec.CommandContext(ctx, run[0], run[1:]...)
	cmd.Env = env
	cmd.Stdout = &teeTail{w: lf, tail: &buf}
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 && len(wrap) == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: cfg.uid, Gid: cfg.gid} // supplementary groups cleared
	}
	// kill the whole process group (pg_autoctl starts postgres) when ctx ends
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(argv[0]), strings.Join(argv[1:min(3, len(argv))], " "), err, lastLines(buf.String(), 5))
	}
	return nil
}

// teeTail writes to w and keeps the last 8 KiB in tail.
type teeTail struct {
	w    *os.File
	tail *bytes.Buffer
}

func (t *teeTail) Write(p []byte) (int, error) {
	t.tail.Write(p)
	if t.tail.Len() > 8192 {
		b := t.tail.Bytes()
		keep := append([]byte(nil), b[len(b)-4096:]...)
		t.tail.Reset()
		t.tail.Write(keep)
	}
	return t.w.Write(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// keeperArgv is what Env.Spawn runs for a pg_autoctl service: `pg_autoctl
// run` as the postgres user, as the init process of a new PID namespace
// (unshare --pid --fork, then setpriv). pg_autoctl starts the node's
// postgres inside that namespace, so a SIGKILL of pg_autoctl (or of
// unshare, which passes it on) ends every process of the node at once —
// the "whole node" crash — while SIGTERM to pg_autoctl stops postgres
// cleanly. Running as root is required for the new PID namespace. wrap,
// the node's netns-exec prefix in a cluster network, goes first: it enters
// the node's network namespace as root, and unshare becomes its program.
func keeperArgv(cfg config, wrap []string, nodeDir, pgdata string) []string {
	// setpriv drops to the postgres user and then sets the parent-death
	// signal (a change of user clears it): if unshare dies, say because
	// faultbench died and the kernel killed unshare, pg_autoctl gets SIGKILL
	// and its namespace goes with it.
	a := append([]string(nil), wrap...)
	a = append(a, "unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--")
	a = append(a, setprivArgv(cfg)...)
	a = append(a, "env", "-i")
	a = append(a, nodeEnv(cfg, nodeDir)...)
	return append(a, runArgv(cfg, pgdata)...)
}

// setprivArgv runs what follows it as the postgres user, with SIGKILL as
// its parent-death signal.
func setprivArgv(cfg config) []string {
	return []string{"setpriv", "--reuid=" + strconv.Itoa(int(cfg.uid)), "--regid=" + strconv.Itoa(int(cfg.gid)),
		"--clear-groups", "--pdeathsig=SIGKILL", "--"}
}

// runArgv is the pg_autoctl command of a node, recorded as the keeper's Argv.
func runArgv(cfg config, pgdata string) []string {
	return []string{cfg.autoctl, "run", "--pgdata", pgdata}
}

// childPID waits until the process pid (unshare) has a child and returns it.
func childPID(ctx context.Context, pid int) (int, error) {
	for {
		if c := firstChild(pid); c > 0 {
			return c, nil
		}
		if !procstat.Alive(pid) {
			return 0, fmt.Errorf("pid %d exited before it started pg_autoctl", pid)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for pid %d to start pg_autoctl: %w", pid, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// firstChild returns a child of pid, or 0.
func firstChild(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err == nil {
		for f := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				return c
			}
		}
		return 0
	}
	// kernels without /proc/PID/task/TID/children: scan for the parent
	tab, _ := procstat.Scan(procstat.Root)
	if c := tab.Children(pid); len(c) > 0 {
		return c[0]
	}
	return 0
}

// findPostmaster returns the host pid of the postmaster serving pgdata: the
// process whose command line is BIN/postgres -D pgdata ... (its children
// rename themselves "postgres: ..."), or 0. The pid in postmaster.pid is
// useless here: it is the pid inside the node's PID namespace.
func findPostmaster(cfg config, pgdata string) int {
	want := filepath.Join(cfg.binDir, "postgres")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 3 || args[0] != want {
			continue
		}
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "-D" && filepath.Clean(args[i+1]) == pgdata && procstat.Alive(pid) {
				return pid
			}
		}
	}
	return 0
}

// postmasterArgv is recorded as a postgres node's Argv: it names the
// program (so that launcher.RunsNode recognises the process) and the data
// directory; the keeper, not faultbench, starts it.
func postmasterArgv(cfg config, pgdata string) []string {
	return []string{filepath.Join(cfg.binDir, "postgres"), "-D", pgdata}
}
