package targets

import (
	"go/build"
	"io/fs"
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
		{[]string{"internal/workload", "internal/measure", "internal/analyze", "internal/outcome", "internal/metastable", "internal/autoscale"},
			[]string{"internal/driver", "internal/launcher", "internal/targets"}, "measurement and analysis are database-agnostic"},
		{[]string{"internal/driver/etcd", "internal/driver/redis", "internal/driver/txkv", "internal/driver/sqldb", "internal/driver/cassandra", "internal/driver/hbase"},
			[]string{"internal/launcher", "internal/targets", "internal/experiment"}, "a driver talks to a database, it does not start one"},
		{[]string{"internal/driver/etcd", "internal/driver/redis", "internal/driver/txkv", "internal/driver/sqldb", "internal/driver/cassandra", "internal/driver/hbase"},
			[]string{"internal/check", "internal/runner", "internal/workload", "internal/measure"},
			"a driver is a client: the checks and the load are built on it, not in it (the lost-write tag field is in internal/lwtag)"},
		{[]string{"internal/fault"}, []string{"internal/driver", "internal/targets"}, "faults act on clusters; client faults through fault's own interface"},
		{[]string{"internal/remote"}, []string{"internal/driver", "internal/launcher", "internal/targets", "internal/experiment", "internal/distrib"},
			"remote is the SSH transport: it knows hosts and commands, not databases"},
		{[]string{"internal/fault/kind"}, []string{"internal/driver", "internal/launcher", "internal/runner", "internal/experiment", "internal/targets", "internal/clusterctl"},
			"fault kinds are described for analysis and reports, which must not pull in what breaks clusters"},
		{[]string{"internal/history", "internal/check/verdict", "internal/stats", "internal/check/elle", "internal/check/linear", "internal/check/bank",
			"internal/check/setvis", "internal/histcheck"}, []string{"internal/driver", "internal/launcher", "internal/targets", "internal/runner", "internal/experiment"},
			"a verdict is computed from the history file alone"},
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
	t.Run("cmd/faultbench", func(t *testing.T) {
		// the kinds reach the command line through the registry only; the
		// one exception sets go-redis's process-wide logger in main
		bp, err := build.ImportDir(filepath.Join("..", "..", "cmd", "faultbench"), 0)
		if err != nil {
			t.Fatal(err)
		}
		kinds := []string{"internal/driver/etcd", "internal/driver/txkv", "internal/driver/sqldb", "internal/driver/cassandra",
			"internal/launcher/etcd", "internal/launcher/redis", "internal/launcher/txkv", "internal/launcher/postgresha",
			"internal/launcher/galera", "internal/launcher/cassandra", "internal/driver/hbase", "internal/launcher/hbase", "internal/check", "internal/measure"}
		for _, imp := range bp.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok && under(rel, kinds...) {
				t.Errorf("cmd/faultbench imports %s: the command line builds a spec and calls one package; kinds come from internal/targets", rel)
			}
		}
	})
	t.Run("internal/workload/program", func(t *testing.T) {
		for _, imp := range internalImports(t, "internal/workload/program") {
			if imp != "internal/properties" && imp != "internal/history" && imp != "internal/runfile" {
				t.Errorf("internal/workload/program imports %s: the program workload contract is a leaf every workload and the harness import", imp)
			}
		}
	})
	t.Run("internal/workload/wltest", func(t *testing.T) {
		// the workloads' test harness starts databases: tests only
		root := filepath.Join("..", "..")
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			bp, err := build.ImportDir(path, 0)
			if err != nil {
				return nil
			}
			for _, imp := range bp.Imports {
				if imp == module+"internal/workload/wltest" {
					t.Errorf("%s imports internal/workload/wltest, the workloads' test harness: only tests may", path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
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

// layers orders the packages from the leaves up (docs/architecture.md,
// "Layers"): a package imports only packages of lower layers, or of its
// own tree (internal/driver/etcd imports internal/driver). A package not
// listed takes the layer of its nearest listed parent directory.
var layers = [][]string{
	{"internal/runfile", "internal/procstat"}, // below the leaves: how a run directory's files are opened, the /proc/PID/stat parser
	{"internal/outcome", "internal/properties", "internal/lwtag", "internal/fault/kind", "internal/diskfs", "internal/cgroup", "internal/history", "internal/check/verdict", "internal/stats", "internal/texttable", "internal/netns", "internal/event", "internal/k8s", "internal/txkv", "internal/hostload", "internal/hbasethrift", "workloads", "scenarios"},
	{"internal/driver", "internal/launcher", "internal/measure", "internal/workload", "internal/remote",
		"internal/check/elle", "internal/check/linear", "internal/check/bank", "internal/check/setvis"},
	{"internal/driver/etcd", "internal/driver/redis", "internal/driver/txkv", "internal/driver/sqldb", "internal/driver/cassandra", "internal/driver/hbase",
		"internal/launcher/etcd", "internal/launcher/redis", "internal/launcher/txkv", "internal/launcher/postgresha",
		"internal/launcher/galera", "internal/launcher/cassandra", "internal/launcher/hbase", "internal/launcher/sshhost",
		"internal/analyze", "internal/runner", "internal/fault", "internal/workload/register", "internal/workload/appendset", "internal/histcheck", "internal/metastable", "internal/autoscale"},
	{"internal/targets", "internal/check", "internal/scenario", "internal/live", "internal/workload/wltest"},
	{"internal/clusterctl", "internal/rundir"},
	{"internal/report"},
	{"internal/experiment"},
	{"internal/distrib", "internal/sweep", "internal/upb"},
	{"internal/reproduce"},
	{"cmd/faultbench", "bench/etcdloop", "bench/txkvloop", "bench/cqlloop", "bench/clientcpu", "scripts/testskips"},
}

// layerOf returns p's layer and the listed package it is counted as, or
// -1 when neither p nor a parent directory is listed.
func layerOf(p string) (int, string) {
	for q := p; q != "." && q != ""; q = filepath.Dir(q) {
		for i, ps := range layers {
			for _, l := range ps {
				if l == q {
					return i, l
				}
			}
		}
	}
	return -1, ""
}

// TestNoUpwardImports: no package imports one of its own layer (outside
// its tree) or above; with the layers a total order, there is no import
// cycle between the trees either.
func TestNoUpwardImports(t *testing.T) {
	for _, ps := range layers {
		for _, p := range ps {
			if _, err := build.ImportDir(filepath.Join("..", "..", p), 0); err != nil {
				t.Errorf("layers lists %s: %v", p, err)
			}
		}
	}
	var pkgs []string
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), path)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "docs") {
			return filepath.SkipDir
		}
		if bp, err := build.ImportDir(path, 0); err == nil && len(bp.GoFiles) > 0 {
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < len(layers) {
		t.Fatalf("found %d packages under the module root: %v", len(pkgs), pkgs)
	}
	for _, p := range pkgs {
		lp, as := layerOf(p)
		if lp < 0 {
			t.Logf("%s has no layer (add it to layers and to docs/architecture.md)", p)
			continue
		}
		bp, _ := build.ImportDir(filepath.Join("..", "..", p), 0)
		for _, imp := range bp.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			li, ias := layerOf(rel)
			if li < 0 || ias == as || strings.HasPrefix(ias, as+"/") || strings.HasPrefix(as, ias+"/") {
				continue
			}
			if li >= lp {
				t.Errorf("%s (layer %d, as %s) imports %s (layer %d, as %s): an import goes down the layers", p, lp, as, rel, li, ias)
			}
		}
	}
}
