package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ClusterDir returns the root directory of a new cluster of kind: spec.Dir
// (made absolute and created) or, when it is empty, a new temporary
// directory (temp true; readable by the database users launchers drop
// privileges to). Under a given directory, the node data directories
// dataDirs (relative to it) must be empty or missing, so that a cluster left
// behind is never started over or wiped.
func ClusterDir(spec Spec, kind string, dataDirs []string) (dir string, temp bool, err error) {
	if spec.Dir == "" {
		d, err := os.MkdirTemp("", "faultbench-"+kind+"-*")
		if err != nil {
			return "", false, fmt.Errorf("creating a temp dir: %w", err)
		}
		return d, true, os.Chmod(d, 0o755)
	}
	dir, err = filepath.Abs(spec.Dir)
	if err != nil {
		return "", false, fmt.Errorf("cluster dir %s: %w", spec.Dir, err)
	}
	for _, rel := range dataDirs {
		data := filepath.Join(dir, rel)
		if entries, err := os.ReadDir(data); err == nil && len(entries) > 0 {
			return "", false, fmt.Errorf("%s already holds node data (a cluster left behind?): stop it with `faultbench cluster down`, remove the directory or choose another", data)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("creating cluster dir: %w", err)
	}
	return dir, false, nil
}

// NodeDataDirs lists the data directories nK/sub of nodes n1..nN, for
// ClusterDir.
func NodeDataDirs(nodes int, sub string) []string {
	out := make([]string, nodes)
	for i := range out {
		out[i] = filepath.Join(fmt.Sprintf("n%d", i+1), sub)
	}
	return out
}

// WithDefaultTimeout bounds ctx by d unless it has a deadline already, so
// that no launcher wait runs forever.
func WithDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
