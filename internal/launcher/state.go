package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/diskfs"
)

// StateStore keeps one JSON file per cluster so that a later faultbench
// (cluster down, fault, cleanup) finds every process again.
type StateStore struct {
	Dir string
	// OpenHosts, if set, reaches the hosts of a cluster recorded with an
	// inventory (Cluster.Inventory); Load attaches them as Cluster.Hosts.
	OpenHosts func(inventory string) (Hosts, error)
}

// DefaultStateDir is $FAULTBENCH_STATE_DIR, else $XDG_STATE_HOME/faultbench,
// else ~/.local/state/faultbench.
func DefaultStateDir() string {
	if d := os.Getenv("FAULTBENCH_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "faultbench")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(os.TempDir(), "faultbench-state")
	}
	return filepath.Join(home, ".local", "state", "faultbench")
}

func (s StateStore) path(name string) string { return filepath.Join(s.Dir, name+".json") }

// Save writes c's state atomically.
func (s StateStore) Save(c *Cluster) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path(c.Name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	if err := os.Rename(tmp, s.path(c.Name)); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	return nil
}

// ErrNoCluster means no state file exists under that name.
var ErrNoCluster = errors.New("no such cluster")

// Load reads the state of cluster name.
func (s StateStore) Load(name string) (*Cluster, error) {
	b, err := os.ReadFile(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q (state dir %s)", ErrNoCluster, name, s.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	var c Cluster
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("state file %s: %w", s.path(name), err)
	}
	if c.Inventory != "" && s.OpenHosts != nil {
		h, err := s.OpenHosts(c.Inventory)
		if err != nil {
			return nil, fmt.Errorf("cluster %s runs on the hosts of %s: %w", c.Name, c.Inventory, err)
		}
		c.Hosts = h
	}
	return &c, nil
}

// Remove deletes the state of cluster name (missing is fine).
func (s StateStore) Remove(name string) error {
	err := os.Remove(s.path(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// List returns every recorded cluster, sorted by name. Unreadable files are
// returned as errors alongside.
func (s StateStore) List() ([]*Cluster, []error) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	var out []*Cluster
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		c, err := s.Load(strings.TrimSuffix(e.Name(), ".json"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs
}

// Leftover reports whether c belongs to a faultbench that is gone: a
// non-detached cluster whose owner process no longer runs.
func (c *Cluster) Leftover() bool {
	return !c.Detached && !Alive(c.OwnerPID)
}

// RunningNodes returns the nodes whose recorded process still runs (on
// its host; a host that cannot be reached shows none).
func (c *Cluster) RunningNodes() []Node {
	var out []Node
	for _, n := range c.Nodes {
		if n.PID > 0 && c.ProcsOf(&n).Alive(context.Background(), n.PID) {
			out = append(out, n)
		}
	}
	return out
}

// Down stops every node of c (SIGTERM, then SIGKILL after grace), takes a
// disk-fault layer off every local node's data directory (diskfs.Release:
// unmounted, the files back in place), removes its data unless KeepData, and returns the first error. It does not touch
// the state file; callers remove it once Down succeeded. A node on another
// host (Node.Host) is stopped there, and the cluster's directory there
// removed: faultbench lays a remote node out as DIR/nodes/CLUSTER/NODE/data
// (internal/remote), so that is its data directory's grandparent.
func Down(ctx context.Context, c *Cluster, grace time.Duration) error {
	var first error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Host != "" {
			if _, err := c.host(n); err != nil {
				if first == nil {
					first = fmt.Errorf("stopping %s: %w", n.Name, err)
				}
				continue
			}
		}
		if n.Found != nil {
			continue // an existing cluster's node: faultbench did not start it
		}
		p := c.ProcsOf(n)
		if p.RunsNode(ctx, n) {
			if err := TerminateOn(ctx, p, n.PID, grace); err != nil && first == nil {
				first = fmt.Errorf("stopping %s (pid %d): %w", n.Name, n.PID, err)
			}
		}
		n.PID = 0
		n.Down = true
	}
	for _, n := range c.Nodes {
		// a disk-fault layer under the data directory (cluster option
		// disk: fuse) is unmounted and its files moved back into place,
		// whether or not the data is kept; nothing to do without one
		if n.Host == "" && n.DataDir != "" && first == nil {
			if err := diskfs.Release(ctx, n.DataDir); err != nil {
				first = fmt.Errorf("%s: %w", n.Name, err)
			}
		}
	}
	if first == nil && !c.KeepData {
		for _, n := range c.Nodes {
			if n.Host == "" || n.DataDir == "" || n.Found != nil {
				continue
			}
			h, _ := c.host(&n)
			dir := path.Dir(path.Dir(n.DataDir)) // DIR/nodes/CLUSTER of DIR/nodes/CLUSTER/NODE/data
			if err := h.RemoveAll(ctx, dir); err != nil && first == nil {
				first = fmt.Errorf("removing %s on %s: %w", dir, n.Host, err)
			}
		}
	}
	if first == nil && !c.KeepData && c.Dir != "" {
		if c.TempDir {
			if err := os.RemoveAll(c.Dir); err != nil {
				first = fmt.Errorf("removing %s: %w", c.Dir, err)
			}
		} else {
			for _, n := range c.Nodes {
				if n.DataDir != "" && n.Host == "" {
					if err := os.RemoveAll(n.DataDir); err != nil && first == nil {
						first = fmt.Errorf("removing %s: %w", n.DataDir, err)
					}
				}
			}
		}
	}
	return first
}
