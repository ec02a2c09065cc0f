package remote

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"strings"
)

// Existing describes a cluster someone else deployed on the inventory's
// hosts (the inventory's `cluster:`): faultbench drives it and applies
// faults to it but installs and starts nothing, and leaves it as it found
// it (`cleanup --hosts` starts what a fault left down, continues what it
// left paused). docs/distributed.md has the schema.
type Existing struct {
	// Kind is the target kind of the database (its driver and health
	// check), e.g. redis-cluster.
	Kind string `yaml:"kind"`
	// Name is the cluster's name in faultbench's state (default
	// "existing").
	Name  string         `yaml:"name"`
	Nodes []ExistingNode `yaml:"nodes"`
}

// ExistingNode is one node of an existing cluster: where it runs, how its
// process is found (exactly one of Unit, PidFile, Process) and its client
// endpoint.
type ExistingNode struct {
	Name string `yaml:"name"`
	Host string `yaml:"host"` // an inventory host's name
	// Endpoint is the client address, host:port.
	Endpoint string `yaml:"endpoint"`
	// Peer is the peer or bus address, host:port, when the kind has one
	// and network faults should cut it by address (optional).
	Peer string `yaml:"peer"`
	// Unit is a systemd unit: its MainPID is the node's process; start is
	// `systemctl start UNIT`.
	Unit string `yaml:"unit"`
	// PidFile is a file on the host holding the node's pid.
	PidFile string `yaml:"pid_file"`
	// Process is a regular expression matched against the full command
	// lines of the host's processes (pgrep -f); exactly one must match.
	Process string `yaml:"process"`
	// Start is the command line (an argument vector, no shell) that starts
	// the node again where it is found by PidFile or Process; it may
	// daemonize. Not used with Unit.
	Start []string `yaml:"start"`
}

// ExistingName is the default state name of an existing cluster.
const ExistingName = "existing"

var unitRE = regexp.MustCompile(`^[A-Za-z0-9:_.@-]+$`)

// validateExisting checks the cluster section against the hosts.
func (inv *Inventory) validateExisting(bad func(string, ...any)) {
	e := inv.Cluster
	if e == nil {
		return
	}
	if e.Kind == "" {
		bad("cluster.kind: empty (the target kind, e.g. redis-cluster)")
	}
	if e.Name == "" {
		e.Name = ExistingName
	} else if !nameRE.MatchString(e.Name) {
		bad("cluster.name %q: allowed letters, digits, '-' and '_'", e.Name)
	}
	if len(e.Nodes) == 0 {
		bad("cluster.nodes: empty (list every node: {name, host, endpoint, unit|pid_file|process})")
	}
	hosts := map[string]bool{}
	for _, h := range inv.Hosts {
		hosts[h.Name] = true
	}
	names := map[string]bool{}
	for i, n := range e.Nodes {
		where := fmt.Sprintf("cluster.nodes[%d]", i)
		if n.Name != "" {
			where += " (" + n.Name + ")"
		}
		switch {
		case !nameRE.MatchString(n.Name):
			bad("%s.name %q: allowed letters, digits, '-' and '_'", where, n.Name)
		case names[n.Name]:
			bad("%s.name %q: used twice", where, n.Name)
		}
		names[n.Name] = true
		if !hosts[n.Host] {
			bad("%s.host %q: not a host of the inventory", where, n.Host)
		}
		for field, a := range map[string]string{"endpoint": n.Endpoint, "peer": n.Peer} {
			if a == "" && field == "peer" {
				continue
			}
			if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
				bad("%s.%s %q: want host:port", where, field, a)
			}
		}
		set := 0
		for _, s := range []string{n.Unit, n.PidFile, n.Process} {
			if s != "" {
				set++
			}
		}
		if set != 1 {
			bad("%s: set exactly one of unit, pid_file, process (how its process is found)", where)
		}
		if n.Unit != "" && !unitRE.MatchString(n.Unit) {
			bad("%s.unit %q: not a systemd unit name", where, n.Unit)
		}
		if n.PidFile != "" && !path.IsAbs(n.PidFile) {
			bad("%s.pid_file %q: want an absolute path", where, n.PidFile)
		}
		if n.Process != "" {
			if _, err := regexp.Compile(n.Process); err != nil {
				bad("%s.process %q: %v", where, n.Process, err)
			}
		}
		switch {
		case n.Unit != "" && len(n.Start) > 0:
			bad("%s.start: a unit is started with systemctl start %s; remove start", where, n.Unit)
		case n.Unit == "" && set == 1 && len(n.Start) == 0:
			bad("%s.start: empty (the command line that starts the node again, e.g. [redis-server, /etc/redis/redis.conf])", where)
		case len(n.Start) > 0 && strings.TrimSpace(n.Start[0]) == "":
			bad("%s.start[0]: empty program", where)
		}
	}
}
