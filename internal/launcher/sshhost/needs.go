package sshhost

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
)

// CheckCommand is the hidden subcommand that checks a kind's needs on a
// host (see CheckNeedsHere).
const CheckCommand = "host-check"

// needsReport is what `faultbench host-check` prints: the programs found
// and every need that is not met.
type needsReport struct {
	Programs map[string]string `json:"programs"`
	Missing  []string          `json:"missing,omitempty"`
}

// CheckNeedsHere is the body of the hidden `faultbench host-check
// [--program NAME]... [--port ADDR:PORT]...` that a node host runs over
// SSH before nodes start: each program is looked up on PATH, each port is
// bound once (and released) on its address, and the result is printed as
// one JSON object: {"programs": {NAME: PATH}, "missing": [WHAT]}.
func CheckNeedsHere(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("faultbench "+CheckCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var programs, ports []string
	fs.Func("program", "a program that must be on PATH", func(s string) error { programs = append(programs, s); return nil })
	fs.Func("port", "ADDR:PORT that must be free", func(s string) error { ports = append(ports, s); return nil })
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", CheckCommand, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: usage: faultbench %s [--program NAME ...] [--port ADDR:PORT ...] (each repeatable)", CheckCommand, CheckCommand)
	}
	r := needsReport{Programs: map[string]string{}}
	for _, p := range programs {
		found, err := exec.LookPath(p)
		if err != nil {
			r.Missing = append(r.Missing, "program "+p+" (not on PATH)")
			continue
		}
		if abs, err := filepath.Abs(found); err == nil {
			found = abs
		}
		r.Programs[p] = found
	}
	for _, a := range ports {
		l, err := net.Listen("tcp", a)
		if err != nil {
			r.Missing = append(r.Missing, "port "+a+" (taken: "+err.Error()+")")
			continue
		}
		_ = l.Close()
	}
	return json.NewEncoder(stdout).Encode(r)
}

// CheckNeeds implements launcher.HostChecker: `faultbench host-check` on
// the host (the binary installed first). The error lists every need that
// is not met and how to install the programs.
func (n *nodeHost) CheckNeeds(ctx context.Context, needs launcher.HostNeeds) (map[string]string, error) {
	self, _, err := n.Prepare(ctx)
	if err != nil {
		return nil, err
	}
	argv := []string{self, CheckCommand}
	for _, p := range needs.Programs {
		argv = append(argv, "--program", p)
	}
	for _, p := range needs.Ports {
		argv = append(argv, "--port", net.JoinHostPort(n.h.Address, strconv.Itoa(p)))
	}
	out, err := n.run(ctx, argv...)
	if err != nil {
		return nil, fmt.Errorf("checking what nodes need: %w", err)
	}
	var r needsReport
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("%s printed %q: %w", CheckCommand, strings.TrimSpace(string(out)), err)
	}
	if len(r.Missing) > 0 {
		msg := "missing " + strings.Join(r.Missing, ", ")
		if needs.Setup != "" && len(r.Programs) < len(needs.Programs) {
			msg += "; install with: " + needs.Setup
		}
		return nil, errors.New(msg)
	}
	return r.Programs, nil
}

// MkdirAll implements launcher.DirMaker, inside the host's node
// directories only.
func (n *nodeHost) MkdirAll(ctx context.Context, p string) error {
	dir, err := n.dir(ctx)
	if err != nil {
		return err
	}
	root := path.Join(dir, NodesDir) + "/"
	if !strings.HasPrefix(path.Clean(p)+"/", root) {
		return fmt.Errorf("host %s: refusing to create %s: not inside %s", n.h.Name, p, root)
	}
	if _, err := n.run(ctx, "mkdir", "-p", "--", path.Clean(p)); err != nil {
		return fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	return nil
}

// NetLeftover implements launcher.Leftovers.
func (n *nodeHost) NetLeftover(owner string) string {
	return fmt.Sprintf("fault %s's rules (chain %s of the nftables table inet %s) on host %s (%s); remove them with `faultbench cleanup --hosts %s`, or as root on %s: nft delete chain inet %s %s",
		owner, owner, NFTable, n.h.Name, n.h.Address, n.hs.abs, n.h.Name, NFTable, owner)
}

// StoppedLeftover implements launcher.Leftovers.
func (n *nodeHost) StoppedLeftover(pid int) string {
	return fmt.Sprintf("pid %d on host %s (%s) is stopped (SIGSTOP); continue it on %s with: kill -s CONT %d",
		pid, n.h.Name, n.h.Address, n.h.Name, pid)
}
