package sshhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/procstat"
	"github.com/faultbench/faultbench/internal/remote"
)

// ExistingDir is the directory under a host's faultbench directory where
// the nodes of existing clusters that faultbench started again keep the
// log of their start command (DIR/existing/CLUSTER/NODE/start.log).
// `cleanup --hosts` does not stop what runs from there: those nodes are
// the cluster's, not faultbench's.
const ExistingDir = "existing"

// FindCommand is the hidden subcommand that finds processes on a host by
// a pattern over their command lines (see FindProcesses).
const FindCommand = "find-process"

// FindProcesses is the body of the hidden `faultbench find-process
// --pattern RE`: it prints, as a JSON array, the pids of the processes
// whose command line (arguments joined by spaces) matches RE, leaving out
// itself and its ancestors (the SSH session's shell and timeout(1) carry
// the pattern in their own command lines).
func FindProcesses(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("faultbench "+FindCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pattern := fs.String("pattern", "", "regular expression over command lines (required)")
	if err := fs.Parse(args); err != nil || *pattern == "" || fs.NArg() > 0 {
		return fmt.Errorf("%s: usage: faultbench %s --pattern RE", FindCommand, FindCommand)
	}
	re, err := regexp.Compile(*pattern)
	if err != nil {
		return fmt.Errorf("%s: %w", FindCommand, err)
	}
	skip := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !skip[pid]; pid = parentOf(pid) {
		skip[pid] = true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("%s: %w", FindCommand, err)
	}
	pids := []int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		if _, live := startTime(pid); !live {
			continue
		}
		if re.Match(bytes.TrimRight(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), " ")) {
			pids = append(pids, pid)
		}
	}
	return json.NewEncoder(stdout).Encode(pids)
}

// parentOf returns pid's parent (0 when unknown).
func parentOf(pid int) int {
	st, err := procstat.Read(procstat.Root, pid)
	if err != nil {
		return 0
	}
	return st.PPID
}

// FindPID implements launcher.ProcessFinder: the unit's MainPID
// (systemctl show), the pid in the pid file (when that process runs), or
// the one process whose command line matches the pattern.
func (n *nodeHost) FindPID(ctx context.Context, f *launcher.Finder) (int, error) {
	switch {
	case f.Unit != "":
		out, err := n.run(ctx, "systemctl", "show", "--property=MainPID", "--value", "--", f.Unit)
		if err != nil {
			return 0, fmt.Errorf("host %s: systemctl show %s: %w", n.h.Name, f.Unit, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			return 0, fmt.Errorf("host %s: systemctl show %s printed %q", n.h.Name, f.Unit, bytes.TrimSpace(out))
		}
		return pid, nil
	case f.PidFile != "":
		out, err := n.run(ctx, "cat", "--", f.PidFile)
		if err != nil {
			var ee *remote.ExitError
			if errors.As(err, &ee) {
				return 0, nil // no pid file: not running
			}
			return 0, fmt.Errorf("host %s: reading %s: %w", n.h.Name, f.PidFile, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || pid <= 0 {
			return 0, nil
		}
		if !n.Alive(ctx, pid) {
			return 0, nil // a stale pid file
		}
		return pid, nil
	}
	self, _, err := n.Prepare(ctx)
	if err != nil {
		return 0, err
	}
	out, err := n.run(ctx, self, FindCommand, "--pattern", f.Process)
	if err != nil {
		return 0, fmt.Errorf("host %s: finding %q: %w", n.h.Name, f.Process, err)
	}
	var pids []int
	if err := json.Unmarshal(out, &pids); err != nil {
		return 0, fmt.Errorf("host %s: %s printed %q: %w", n.h.Name, FindCommand, bytes.TrimSpace(out), err)
	}
	switch len(pids) {
	case 0:
		return 0, nil
	case 1:
		return pids[0], nil
	}
	return 0, fmt.Errorf("host %s: %d processes match %q (%v): make the pattern name one", n.h.Name, len(pids), f.Process, pids)
}

// StartFound implements launcher.ProcessFinder: `systemctl start UNIT`, or
// the node's start command run detached by `faultbench spawn` with its
// output in DIR/existing/CLUSTER/NODE/start.log.
func (n *nodeHost) StartFound(ctx context.Context, f *launcher.Finder, cluster, node string) error {
	if f.Unit != "" {
		if _, err := n.run(ctx, "systemctl", "start", "--", f.Unit); err != nil {
			return fmt.Errorf("host %s: systemctl start %s: %w", n.h.Name, f.Unit, err)
		}
		return nil
	}
	if len(f.Start) == 0 {
		return errors.New("no start command in the inventory")
	}
	self, dir, err := n.Prepare(ctx)
	if err != nil {
		return err
	}
	logFile := path.Join(dir, ExistingDir, cluster, node, "start.log")
	if _, err := n.run(ctx, append([]string{self, SpawnCommand, "--log", logFile, "--"}, f.Start...)...); err != nil {
		return fmt.Errorf("host %s: spawn %s: %w", n.h.Name, f.Start[0], err)
	}
	return nil
}

// ExistingCluster returns the record of the existing cluster e on the
// hosts hs (an inventory's cluster:): one node per entry, on its host,
// with its client and peer addresses and how its process is found, and its
// pid found now (0 for a node that does not run). Nothing is installed or
// started; a node whose process cannot be looked for is an error.
func ExistingCluster(ctx context.Context, hs *NodeHosts, e *remote.Existing) (*launcher.Cluster, error) {
	c := &launcher.Cluster{Kind: e.Kind, Name: e.Name, Detached: true, KeepData: true,
		Inventory: hs.Inventory(), Hosts: hs, Options: map[string]string{"existing": "true"}}
	var errs []error
	for _, en := range e.Nodes {
		// Argv is the start command (its program name guards against a
		// reused pid, as for nodes faultbench started); none for a unit
		n := launcher.Node{Name: en.Name, Host: en.Host, Addr: en.Endpoint, PeerAddr: en.Peer, Argv: en.Start,
			Found: &launcher.Finder{Unit: en.Unit, PidFile: en.PidFile, Process: en.Process, Start: en.Start}}
		h, err := hs.Host(en.Host)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pid, err := h.(launcher.ProcessFinder).FindPID(ctx, n.Found)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", n.Name, n.Found.What(), err))
			continue
		}
		n.PID, n.Down = pid, pid == 0
		c.Nodes = append(c.Nodes, n)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// restoreExisting leaves the existing cluster of inv as faultbench found
// it, for `cleanup --hosts` (after its faults are gone): a node whose
// process is found stopped is continued (SIGCONT), one that is not found
// is started (its unit, or its start command); one line per node that
// needed it goes to report[host].
func restoreExisting(ctx context.Context, hs *NodeHosts, e *remote.Existing, report map[string][]string) error {
	var errs []error
	for _, en := range e.Nodes {
		h, err := hs.Host(en.Host)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n := &launcher.Node{Name: en.Name, Host: en.Host, Found: &launcher.Finder{Unit: en.Unit, PidFile: en.PidFile, Process: en.Process, Start: en.Start}}
		pid, err := h.(launcher.ProcessFinder).FindPID(ctx, n.Found)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s on %s: %w", en.Name, en.Host, err))
		case pid > 0 && h.Stopped(ctx, pid):
			if err := h.Signal(ctx, pid, syscall.SIGCONT); err != nil {
				errs = append(errs, fmt.Errorf("%s on %s: continuing pid %d: %w", en.Name, en.Host, pid, err))
				continue
			}
			report[en.Host] = append(report[en.Host], fmt.Sprintf("continued %s (pid %d, stopped; %s of cluster %s)", en.Name, pid, n.Found.What(), e.Name))
		case pid == 0:
			pid, err := launcher.StartFound(ctx, h, e.Name, n)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s on %s: %w", en.Name, en.Host, err))
				continue
			}
			report[en.Host] = append(report[en.Host], fmt.Sprintf("started %s again (pid %d; %s of cluster %s)", en.Name, pid, n.Found.What(), e.Name))
		}
	}
	return errors.Join(errs...)
}
