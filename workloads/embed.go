// Package workloads ships the YCSB and APM workload property files inside
// the faultbench binary, so scenarios and the demo find them from any
// working directory. The files beside this one are the source of truth.
package workloads

import (
	"embed"
	"fmt"
	"io"
	"strings"
)

//go:embed workload* apm-* thumbtack txn tpcc register appendset list-append rw-register bank
var files embed.FS

// Open returns the embedded workload file name (e.g. "workloada").
func Open(name string) (io.Reader, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no built-in workload %q (built in: %s)", name, strings.Join(Names(), ", "))
	}
	return strings.NewReader(string(b)), nil
}

// Names lists the embedded workload files.
func Names() []string {
	es, _ := files.ReadDir(".")
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
