// Package clusterctl is the work behind `faultbench cluster up|down|status`
// and `faultbench cleanup`: it starts clusters through their launchers,
// records them in state files, finds them again, and ends what a crashed
// faultbench left behind. It also says which recorded cluster a command acts
// on (Choose) and builds the fault.Cluster that faults act on
// (FaultCluster, the one constructor of it: `faultbench fault`, scenarios
// and the Under Pressure Benchmark take theirs here).
package clusterctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/targets"
)

// Manager manages recorded clusters.
type Manager struct {
	Store   launcher.StateStore
	Targets *targets.Registry
	Env     *launcher.Env
	// Grace is how long a node gets to exit after SIGTERM before SIGKILL.
	Grace time.Duration
}

// New returns a Manager for the state directory dir that looks kinds up
// in reg (nil: targets.Builtin()).
func New(dir string, env *launcher.Env, reg *targets.Registry) *Manager {
	if reg == nil {
		reg = targets.Builtin()
	}
	return &Manager{Store: launcher.StateStore{Dir: dir}, Targets: reg, Env: env, Grace: 10 * time.Second}
}

// Up starts a cluster of kind and records it. A detached cluster outlives
// this process (cluster up); otherwise its nodes die with this process and
// the state file only serves cleanup after a crash.
func (m *Manager) Up(ctx context.Context, kind string, spec launcher.Spec) (*launcher.Cluster, error) {
	t, err := m.Targets.Get(kind)
	if err != nil {
		return nil, err
	}
	if t.Launcher == nil {
		return nil, fmt.Errorf("faultbench cannot start %s clusters; point the driver at yours with -p %s=HOST:PORT", kind, t.EndpointKey)
	}
	if spec.Name == "" {
		spec.Name = kind
	}
	if !ValidName(spec.Name) {
		return nil, fmt.Errorf("cluster name %q: %s", spec.Name, NameRule)
	}
	if spec.Nodes == 0 {
		spec.Nodes = t.Size.Nodes
	}
	if spec.Replicas < 0 {
		spec.Replicas = t.Size.Replicas
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if old, err := m.Store.Load(spec.Name); err == nil {
		if len(old.RunningNodes()) > 0 {
			return nil, fmt.Errorf("a cluster named %q is already running (%d nodes): `faultbench cluster down %s` first, or pick another --name", spec.Name, len(old.RunningNodes()), spec.Name)
		}
		_ = m.Store.Remove(spec.Name)
	}
	if err := checkDisk(spec); err != nil {
		return nil, err
	}
	if err := t.CheckDiskLayer(spec.Options); err != nil {
		return nil, err
	}
	if err := checkClock(t, spec); err != nil {
		return nil, err
	}
	env, nw, err := m.netEnv(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("starting %s cluster: %w", kind, err)
	}
	if env, err = diskEnv(env, spec.Options); err != nil {
		return nil, fmt.Errorf("starting %s cluster: %w", kind, err)
	}
	env = clockEnv(env, spec.Options)
	c, err := t.Launcher.Up(ctx, env, launcherSpec(spec))
	if c != nil {
		c.Name = spec.Name
		c.Detached = spec.Detached
		c.OwnerPID = os.Getpid()
		recordDisk(c, spec.Options)
		recordClock(c, spec.Options)
		if err == nil {
			err = syncDisks(ctx, c)
		}
		if nerr := recordNet(c, nw); nerr != nil && err == nil {
			err = nerr
		}
		if serr := m.Store.Save(c); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		if c != nil {
			_ = launcher.Down(context.WithoutCancel(ctx), c, m.Grace)
			_ = m.Store.Remove(spec.Name)
		}
		if nw != nil {
			_ = nw.Destroy(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("starting %s cluster: %w", kind, err)
	}
	return c, nil
}

// Load reads a recorded cluster.
func (m *Manager) Load(name string) (*launcher.Cluster, error) { return m.Store.Load(name) }

// Save records c.
func (m *Manager) Save(c *launcher.Cluster) error { return m.Store.Save(c) }

// Launcher returns the launcher of c's kind.
func (m *Manager) Launcher(c *launcher.Cluster) (launcher.Launcher, error) {
	t, err := m.Targets.Get(c.Kind)
	if err != nil {
		return nil, err
	}
	if t.Launcher == nil {
		return nil, fmt.Errorf("no launcher for %s", c.Kind)
	}
	return t.Launcher, nil
}

// Down stops the cluster recorded as name and removes its state.
func (m *Manager) Down(ctx context.Context, name string) error {
	c, err := m.Store.Load(name)
	if err != nil {
		return err
	}
	return m.down(ctx, c)
}

func (m *Manager) down(ctx context.Context, c *launcher.Cluster) error {
	if err := releaseCgroups(c); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	if err := launcher.Down(ctx, c, m.Grace); err != nil {
		_ = m.Store.Save(c)
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	if err := downNet(ctx, c); err != nil {
		_ = m.Store.Save(c)
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return m.Store.Remove(c.Name)
}

// NameRule says what ValidName accepts.
const NameRule = "allowed are letters, digits, '-' and '_' (it names the state file)"

// ValidName reports whether name is a plain cluster or run name: letters,
// digits, '-' and '_' only, so that it names a file inside the state
// directory and nothing else.
func ValidName(name string) bool {
	if name == "" || len(name) > 200 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Running returns the names of the recorded clusters that have a running
// node or were started by `cluster up`, sorted by name.
func (m *Manager) Running() []string {
	cs, _ := m.Store.List()
	var out []string
	for _, c := range cs {
		if len(c.RunningNodes()) > 0 || c.Detached {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Status refreshes roles and liveness of the cluster recorded as name and
// writes a table of its nodes to w.
func (m *Manager) Status(ctx context.Context, name string, w io.Writer) (*launcher.Cluster, error) {
	c, err := m.Store.Load(name)
	if err != nil {
		return nil, err
	}
	l, err := m.Launcher(c)
	if err != nil {
		return nil, err
	}
	refresh := 10 * time.Second
	if c.Inventory != "" {
		refresh = 30 * time.Second // every look at a node is an SSH command
	}
	rctx, cancel := context.WithTimeout(ctx, refresh)
	rerr := l.Refresh(rctx, c)
	cancel()
	fmt.Fprintf(w, "cluster %s (%s), %d nodes, dir %s\n", c.Name, c.Kind, len(c.Nodes), c.Dir)
	writeNetStatus(w, c)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tROLE\tPID\tADDRESS\tPEER\tID\tDATA DIR")
	for _, n := range c.Nodes {
		state := "up"
		switch {
		case n.PID == 0 || !c.ProcsOf(&n).Alive(ctx, n.PID):
			state = "down"
		case c.ProcsOf(&n).Stopped(ctx, n.PID):
			state = "paused"
		case n.Down:
			state = "unresponsive"
		}
		role := n.Role
		if role == "" {
			role = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", n.Name, state, role, n.PID, n.Addr, n.PeerAddr, n.ID, n.DataDir)
	}
	tw.Flush()
	if rerr != nil {
		fmt.Fprintf(w, "note: %v\n", rerr)
	}
	if d, ok := l.(launcher.StatusDescriber); ok {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		text, err := d.DescribeStatus(dctx, c)
		cancel()
		fmt.Fprint(w, text)
		if err != nil {
			fmt.Fprintf(w, "note: %v\n", err)
		}
	}
	return c, nil
}

// Leftovers returns the recorded clusters whose owning faultbench is gone
// (a crashed run), for a warning at start.
func (m *Manager) Leftovers() []*launcher.Cluster {
	cs, _ := m.Store.List()
	var out []*launcher.Cluster
	for _, c := range cs {
		if c.Leftover() {
			out = append(out, c)
		}
	}
	return out
}

// Cleanup stops and removes every cluster left by a faultbench that is no
// longer running; with all, also clusters started by `cluster up`. It
// reports what it did to w.
func (m *Manager) Cleanup(ctx context.Context, all bool, w io.Writer) error {
	cs, errs := m.Store.List()
	var out []error
	out = append(out, errs...)
	n := 0
	// the slow-node faults' cgroups first: a frozen process dies of
	// SIGKILL only once thawed
	var gone []string // the clusters removed below
	for _, c := range cs {
		if all || c.Leftover() {
			gone = append(gone, c.Name)
		}
	}
	removed, err := cleanupCgroups(gone, w)
	n += removed
	if err != nil {
		out = append(out, err)
	}
	for _, c := range cs {
		if !all && !c.Leftover() {
			if len(c.RunningNodes()) > 0 {
				fmt.Fprintf(w, "kept %s: started by `cluster up` (stop it with `faultbench cluster down %s` or `faultbench cleanup --all`)\n", c.Name, c.Name)
			}
			continue
		}
		running := c.RunningNodes()
		netText := netSummary(c)
		if err := m.down(ctx, c); err != nil {
			out = append(out, err)
			continue
		}
		n++
		pids := make([]string, 0, len(running))
		for _, r := range running {
			pids = append(pids, fmt.Sprint(r.PID))
		}
		fmt.Fprintf(w, "removed %s (%s): stopped %d processes [%s], removed %s%s\n", c.Name, c.Kind, len(running), strings.Join(pids, " "), c.Dir, netText)
	}
	removed, err = m.cleanupNets(ctx, w)
	n += removed
	if err != nil {
		out = append(out, err)
	}
	if n == 0 && len(out) == 0 {
		fmt.Fprintln(w, "nothing to clean up")
	}
	return errors.Join(out...)
}
