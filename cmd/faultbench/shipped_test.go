package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/scenarios"
)

// TestShippedScenariosPlan: every built-in scenario resolves and validates
// against its target (the plan of `--dry-run`, which starts nothing), so a
// shipped file with a wrong key, fault kind or option is caught here and
// not by the user who runs it. The last case is a negative control: a copy
// of a shipped scenario with an unknown fault kind must be refused.
func TestShippedScenariosPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the faultbench binary once per shipped scenario (-short skips it; make test runs it)")
	}
	c := newCLI(t)
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	b, err := scenarios.Read("failover-etcd")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), "fault: kill", "fault: no-such-fault", 1)
	if bad == string(b) {
		t.Fatal("failover-etcd has no `fault: kill` to break")
	}
	if err := os.WriteFile(broken, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name, arg string
		wantOK    bool
	}
	var cases []tc
	for _, n := range scenarios.Names() {
		cases = append(cases, tc{name: n, arg: n, wantOK: true})
	}
	cases = append(cases, tc{name: "negative-control-unknown-fault", arg: broken, wantOK: false})
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			sc, _, err := loadScenario(k.arg, nil)
			if err != nil {
				if k.wantOK {
					t.Fatalf("load: %v", err)
				}
				return
			}
			cmd := "scenario"
			switch {
			case sc.UPB != nil:
				return // `faultbench upb` has no dry run; loading validated it
			case sc.Sweep != nil:
				cmd = "sweep"
			}
			out, errOut, code := c.run(time.Minute, cmd, "--dry-run", k.arg)
			if k.wantOK && code != 0 {
				t.Fatalf("faultbench %s --dry-run %s: exit %d\n%s%s", cmd, k.arg, code, out, errOut)
			}
			if !k.wantOK && code == 0 {
				t.Fatalf("faultbench %s --dry-run %s accepted a broken scenario:\n%s", cmd, k.arg, out)
			}
		})
	}
}
