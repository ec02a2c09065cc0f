package clusterctl

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultbench/faultbench/internal/cgroup"
	"github.com/faultbench/faultbench/internal/launcher"
)

// cleanupCgroups removes the cgroups of slow-node faults (internal/cgroup,
// named cgroup.Prefix+CLUSTER-NODE) of the clusters in gone (those
// `cleanup` removes), and every such group left empty (its processes died
// with a killed faultbench): their processes move back to the parent
// cgroups, thawed and unlimited. A group of another cluster that still
// holds processes (a `cluster up` cluster with a fault in place, or a run
// recorded in another state directory) is left alone. It reports what it
// removed to w and returns how many.
func cleanupCgroups(gone []string, w io.Writer) (int, error) {
	if os.Geteuid() != 0 {
		return 0, nil // no slow-node fault could have made one
	}
	sys, err := cgroup.Open()
	if err != nil {
		return 0, nil
	}
	removed, err := sys.CleanupAll(func(dir string) bool {
		base := filepath.Base(dir)
		for _, c := range gone {
			if strings.HasPrefix(base, cgroup.Prefix+c+"-") {
				return false
			}
		}
		procs, err := cgroup.ProcsIn(dir)
		return err != nil || len(procs) > 0
	})
	for _, d := range removed {
		fmt.Fprintf(w, "removed cgroup %s\n", d)
	}
	if err != nil {
		return len(removed), fmt.Errorf("removing the cgroups of slow-node faults: %w", err)
	}
	return len(removed), nil
}

// releaseCgroups removes the cgroups of c's nodes left by slow-node
// faults before c goes down: a stalled (frozen) node dies of SIGKILL only
// once thawed.
func releaseCgroups(c *launcher.Cluster) error {
	if os.Geteuid() != 0 {
		return nil
	}
	sys, err := cgroup.Open()
	if err != nil {
		return nil
	}
	mine := map[string]bool{}
	for _, n := range c.Nodes {
		mine[cgroup.Prefix+c.Name+"-"+n.Name] = true
	}
	_, err = sys.CleanupAll(func(dir string) bool { return !mine[filepath.Base(dir)] })
	return err
}
