package distrib

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/remote"
)

// MaxWorkers bounds the workers a listener waits for (`--workers`).
const MaxWorkers = 1000

// RunPhase runs one load or run phase where its load is to run, the one
// entry point of `faultbench load` and `faultbench run`:
//   - with clients.process=true in a run phase, as local `faultbench
//     worker` processes of Binary (Processes);
//   - with Listen or Listener, from the workers that connect to it;
//   - with ClientsFile or Inventory, from the inventory's client hosts over
//     SSH;
//   - otherwise in this process (experiment.Run).
//
// Every mistake in where (two places given, a bad inventory or address) is
// an *experiment.InvalidError, found before anything starts.
func RunPhase(ctx context.Context, s Spec) error {
	if err := s.Spec.Validate(); err != nil {
		return err
	}
	hosts := s.ClientsFile != "" || s.Inventory != nil || s.Listen != "" || s.Listener != nil || s.Workers != 0
	invalid := func(format string, args ...any) error {
		return &experiment.InvalidError{Err: fmt.Errorf(format, args...)}
	}
	procs, err := experiment.WantsClientProcesses(s.Props, s.Phase)
	switch {
	case err != nil:
		return &experiment.InvalidError{Err: err}
	case procs || s.Processes:
		if hosts {
			return invalid("-p clients.process=true and client hosts (--clients, --listen) both given: the client processes run on this machine; choose one")
		}
		if s.MetricsAddr != "" {
			return invalid("--metrics-addr is not supported with -p clients.process=true yet")
		}
		s.Processes = true
		_, err := Run(ctx, s)
		return err
	case s.AcceptNewHostKeys && s.ClientsFile == "" && s.Inventory == nil:
		return invalid("--accept-new-host-keys is for --clients only")
	case s.Listen != "" || s.Listener != nil || s.Workers != 0:
		if s.ClientsFile != "" || s.Inventory != nil {
			return invalid("--listen and --clients both given: workers either connect (--listen) or are started over SSH (--clients)")
		}
		if (s.Listen == "" && s.Listener == nil) || s.Workers < 1 || s.Workers > MaxWorkers {
			return invalid("--listen ADDR needs --workers N (1..%d), got --listen %q --workers %d", MaxWorkers, s.Listen, s.Workers)
		}
		if s.Listener == nil {
			l, err := net.Listen("tcp", s.Listen)
			if err != nil {
				return invalid("--listen %q: %v", s.Listen, err)
			}
			s.Listener = l
		}
		fmt.Fprintf(s.Err, "waiting for %d workers at %s\n", s.Workers, s.Listener.Addr())
		_, err := Run(ctx, s)
		return err
	case s.ClientsFile != "" || s.Inventory != nil:
		if s.Inventory == nil {
			inv, err := remote.Load(s.ClientsFile)
			if err != nil {
				return invalid("--clients: %v", err)
			}
			if len(inv.WithRole(remote.RoleClient)) == 0 {
				return invalid("--clients %s: no host has role client", s.ClientsFile)
			}
			s.Inventory = inv
		}
		if s.MetricsAddr != "" {
			return invalid("--metrics-addr is not supported with --clients yet")
		}
		if s.Binary == "" {
			return errors.New("finding the faultbench binary to install on the client hosts: none given")
		}
		_, err := Run(ctx, s)
		return err
	}
	_, err = experiment.Run(ctx, s.Spec)
	return err
}
