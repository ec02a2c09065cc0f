// Package scenarios ships the built-in scenario files inside the faultbench
// binary (for `faultbench demo` and `faultbench scenario NAME`). The YAML
// files beside this one are the source of truth.
package scenarios

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Read returns the embedded scenario name (with or without ".yaml").
func Read(name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".yaml") + ".yaml"
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q (built in: %s)", strings.TrimSuffix(name, ".yaml"), strings.Join(Names(), ", "))
	}
	return b, nil
}

// Names lists the embedded scenarios without the .yaml suffix.
func Names() []string {
	es, _ := files.ReadDir(".")
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return out
}
