package targets

import (
	"go/build"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/faultbench/faultbench/"

// internalImports returns the module's packages that pkg (a path relative
// to the module root, e.g. "internal/analyze") imports, directly or not,
// test files excluded.
func internalImports(t *testing.T, pkg string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		bp, err := build.ImportDir(filepath.Join("..", "..", p), 0)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			walk(rel)
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestLayers enforces the import rules of docs/architecture.md: what
// measures and analyzes is database-agnostic, drivers do not start
// databases, txkv is a database of its own, and a report re-renders from
// the run directory's files alone.
func TestLayers(t *testing.T) {
	under := func(p string, prefixes ...string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
	rules := []struct {
		pkgs   []string
		banned []string
		why    string
	}{
		{[]string{"internal/workload", "internal/measure", "internal/analyze", "internal/outcome"},
			[]string{"internal/driver", "internal/launcher", "internal/targets"}, "measurement and analysis are database-agnostic"},
		{[]string{"internal/driver/etcd", "internal/driver/redis", "internal/driver/txkv", "internal/driver/sqldb", "internal/driver/cassandra"},
			[]string{"internal/launcher", "internal/targets", "internal/experiment"}, "a driver talks to a database, it does not start one"},
		{[]string{"internal/fault"}, []string{"internal/driver", "internal/targets"}, "faults act on clusters; client faults through fault's own interface"},
		{[]string{"internal/remote"}, []string{"internal/driver", "internal/launcher", "internal/targets", "internal/experiment", "internal/distrib"},
			"remote is the SSH transport: it knows hosts and commands, not databases"},
		{[]string{"internal/fault/kind"}, []string{"internal/driver", "internal/launcher", "internal/runner", "internal/experiment", "internal/targets", "internal/clusterctl"},
			"fault kinds are described for analysis and reports, which must not pull in what breaks clusters"},
		{[]string{"internal/report"}, []string{"internal/driver", "internal/launcher", "internal/clusterctl", "internal/runner", "internal/experiment", "internal/targets"},
			"a report re-renders from the run directory's files alone"},
	}
	for _, r := range rules {
		for _, pkg := range r.pkgs {
			t.Run(pkg, func(t *testing.T) {
				for _, imp := range internalImports(t, pkg) {
					if under(imp, r.banned...) {
						t.Errorf("%s imports %s: %s", pkg, imp, r.why)
					}
				}
			})
		}
	}
	t.Run("internal/txkv", func(t *testing.T) {
		for _, sub := range []string{"internal/txkv/coord", "internal/txkv/server", "internal/txkv/client"} {
			for _, imp := range internalImports(t, sub) {
				if !under(imp, "internal/txkv") {
					t.Errorf("%s imports %s: txkv is a database of its own and imports nothing of the harness", sub, imp)
				}
			}
		}
	})
}
