package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultParams: `faultbench fault --param` is checked by the fault
// kind's declaration before any cluster is looked for.
func TestFaultParams(t *testing.T) {
	t.Setenv("FAULTBENCH_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	for _, tc := range []struct {
		name string
		args []string
		want string // first line of stderr; "" = past the check (no cluster runs)
	}{
		{"not a parameter", []string{"fault", "kill", "n1", "--param", "level=3"}, "faultbench: kill: level is not a parameter of kill"},
		{"another kind's", []string{"fault", "kill", "n1", "--param", "count=2"}, "faultbench: kill: count is a parameter of add-node only, not of kill"},
		{"out of range", []string{"fault", "add-node", "--param", "count=9"}, "faultbench: add-node: count 9: allowed 1..8"},
		{"not NAME=VALUE", []string{"fault", "add-node", "--param", "count"}, `faultbench: add-node: --param "count": want NAME=VALUE`},
		{"valid", []string{"fault", "add-node", "--param", "count=2"}, "faultbench: no cluster is running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runApp(tc.args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code == 0 || !strings.HasPrefix(first, tc.want) {
				t.Fatalf("code %d, first line %q, want %q", code, first, tc.want)
			}
		})
	}
}
