package distrib_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/distrib"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
)

// TestRunPhaseWhere: RunPhase decides where the load runs and refuses,
// before anything starts and as bad input, every combination of places
// that cannot go together.
func TestRunPhaseWhere(t *testing.T) {
	dir := t.TempDir()
	noClients := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(noClients, []byte("ssh: {user: u, key: /k, known_hosts: /kh}\nhosts:\n  - {name: n1, address: 10.0.0.1, roles: [node]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	procs := func() *properties.Properties {
		p := properties.New()
		p.Set("clients.process", "true")
		p.Set("clients", "2")
		return p
	}
	cases := []struct {
		name  string
		props *properties.Properties
		where distrib.Spec
		want  string
	}{
		{"processes and a listener", procs(), distrib.Spec{Listen: "127.0.0.1:0", Workers: 2}, "-p clients.process=true and client hosts (--clients, --listen) both given"},
		{"processes and hosts", procs(), distrib.Spec{ClientsFile: noClients}, "-p clients.process=true and client hosts"},
		{"processes and metrics", procs(), distrib.Spec{Spec: experiment.Spec{MetricsAddr: "127.0.0.1:0"}}, "--metrics-addr is not supported with -p clients.process=true yet"},
		{"host keys without hosts", nil, distrib.Spec{AcceptNewHostKeys: true}, "--accept-new-host-keys is for --clients only"},
		{"listener without workers", nil, distrib.Spec{Listen: "127.0.0.1:0"}, "--listen ADDR needs --workers N (1..1000)"},
		{"workers without listener", nil, distrib.Spec{Workers: 2}, "--listen ADDR needs --workers N"},
		{"listener and hosts", nil, distrib.Spec{Listen: "127.0.0.1:0", Workers: 2, ClientsFile: noClients}, "--listen and --clients both given"},
		{"bad listen address", nil, distrib.Spec{Listen: "nonsense", Workers: 2}, `--listen "nonsense": `},
		{"no client hosts", nil, distrib.Spec{ClientsFile: noClients}, "--clients " + noClients + ": no host has role client"},
		{"no inventory", nil, distrib.Spec{ClientsFile: filepath.Join(dir, "missing.yaml")}, "--clients: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.where
			s.Target, s.Phase, s.Props, s.RunsDir, s.StateDir = "redis", runner.Run, tc.props, filepath.Join(dir, "runs"), filepath.Join(dir, "state")
			err := distrib.RunPhase(context.Background(), s)
			var ie *experiment.InvalidError
			if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("RunPhase = %v, want an InvalidError starting %q", err, tc.want)
			}
		})
	}
	t.Run("in process", func(t *testing.T) {
		// nothing said about where: experiment.Run, which finds a wrong
		// property before connecting
		p := properties.New()
		p.Set("recordcount", "0")
		err := distrib.RunPhase(context.Background(), distrib.Spec{Spec: experiment.Spec{Target: "redis", Phase: runner.Run, Props: p,
			RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}})
		if err == nil || !strings.Contains(err.Error(), "must be at least 1") {
			t.Errorf("RunPhase = %v, want experiment.Run's check of recordcount", err)
		}
	})
}
