// Package scenarios ships the built-in scenario files inside the faultbench
// binary (for `faultbench demo`, `faultbench scenario NAME` and
// `faultbench reproduce PAPER`). The YAML files beside this one are the
// source of truth; the directories hold the scenarios that reproduce one
// paper each (docs/reproductions/), read as DIR/NAME.
package scenarios

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed *.yaml upb/*.yaml nosql-failover/*.yaml scalability/*.yaml cumulonimbo/*.yaml txkv-recovery/*.yaml
var files embed.FS

// Read returns the embedded scenario name (with or without ".yaml"); a
// paper's scenario is named DIR/NAME (upb/upb-etcd).
func Read(name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".yaml") + ".yaml"
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q (built in: %s)", strings.TrimSuffix(name, ".yaml"), strings.Join(Names(), ", "))
	}
	return b, nil
}

// Names lists the embedded top-level scenarios without the .yaml suffix
// (the papers' directories are listed by In).
func Names() []string {
	return list(".")
}

// In lists the embedded scenarios of directory dir (a paper's: upb,
// nosql-failover, ...) as DIR/NAME, without the .yaml suffix; none for an
// unknown directory.
func In(dir string) []string {
	return list(dir)
}

func list(dir string) []string {
	es, _ := files.ReadDir(dir)
	out := make([]string, 0, len(es))
	for _, e := range es {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".yaml")
		if dir != "." {
			name = dir + "/" + name
		}
		out = append(out, name)
	}
	return out
}
