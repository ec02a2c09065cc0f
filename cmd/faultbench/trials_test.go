package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrialsBadInput: bad trials input is a usage error (exit 2) whose
// first line names the flag or field, the value and what is allowed,
// before anything starts; never a Go trace.
func TestTrialsBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FAULTBENCH_STATE_DIR", filepath.Join(dir, "state"))
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "name: t\ntarget: {kind: etcd, nodes: 3}\nworkload: {ycsb: workloada}\nload: {threads: 2, duration: 60s}\n"
	good := write("good.yaml", head+"schedule:\n  - {at: 30s..45s, fault: kill, node: \"random-of(followers)\", as: victim}\n  - {at: 50s, fault: start, node: victim}\n")
	backwards := write("backwards.yaml", head+"schedule:\n  - {at: 45s..30s, fault: kill, node: leader}\n")
	zeroN := write("zero.yaml", head+"trials: {n: 0}\n")
	badSel := write("badsel.yaml", head+"schedule:\n  - {at: 30s, fault: kill, node: \"random-of(n9)\"}\n")
	for _, tc := range []struct {
		name  string
		args  []string
		first string
	}{
		{"trials 0", []string{"scenario", good, "--trials", "0"}, "faultbench: --trials 0: allowed 1..1000"},
		{"trials negative", []string{"scenario", good, "--trials", "-3"}, "faultbench: --trials -3: allowed 1..1000"},
		{"trials too many", []string{"scenario", good, "--trials", "1001"}, "faultbench: --trials 1001: allowed 1..1000"},
		{"trials not a number", []string{"scenario", good, "--trials", "many"}, `faultbench: invalid value "many" for flag -trials`},
		{"trial beyond n", []string{"scenario", good, "--trials", "3", "--trial", "4"}, "faultbench: trial 4: allowed 1..3"},
		{"trial 0", []string{"scenario", good, "--trials", "3", "--trial", "0"}, "faultbench: --trial 0: allowed 1..N"},
		{"trial without trials", []string{"scenario", good, "--trial", "2", "--seed", "5"}, "faultbench: --trial and --seed need trials"},
		{"seed 0", []string{"scenario", good, "--trials", "3", "--seed", "0"}, "faultbench: --seed 0: allowed a positive number"},
		{"window backwards", []string{"scenario", backwards}, "faultbench: " + backwards + `: schedule (line 6): window "45s..30s" ends before it starts`},
		{"window backwards by --set", []string{"scenario", good, "--set", "schedule.0.at=45s..30s"}, `faultbench: --set schedule.0.at=45s..30s: window "45s..30s" ends before it starts`},
		{"trials.n 0 in the file", []string{"scenario", zeroN}, "faultbench: " + zeroN + ":5: field trials.n: 0: allowed 1..1000"},
		{"trials.mode bad", []string{"scenario", good, "--set", "trials.n=2", "--set", "trials.mode=again"}, `faultbench: --set trials.mode=again: field trials.mode: "again": allowed fresh`},
		{"random-of a node that is not there", []string{"scenario", badSel, "--trials", "2"}, "faultbench: " + badSel + `: schedule: schedule step 1 (at 30s: kill random-of(n9)): node "n9" in random-of(n9) is neither a node of cluster etcd`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runApp(tc.args...)
			for _, s := range []string{stdout, stderr} {
				if strings.Contains(s, "goroutine ") || strings.Contains(s, "panic:") {
					t.Fatalf("Go trace in the output:\n%s", s)
				}
			}
			if code != 2 {
				t.Fatalf("exit code %d, want 2\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			first, _, _ := strings.Cut(stderr, "\n")
			if !strings.HasPrefix(first, tc.first) {
				t.Errorf("first line\n  %q\nwant it to start with\n  %q", first, tc.first)
			}
		})
	}
	// a dry run of trials checks and plans without starting anything
	stdout, stderr, code := runApp("scenario", "--dry-run", good, "--trials", "3")
	if code != 0 || !strings.Contains(stdout, "valid; dry run") {
		t.Fatalf("dry run: code %d\n%s\n%s", code, stdout, stderr)
	}
	// --trials N is the trials section's n, so a --set of its mode validates
	stdout, stderr, code = runApp("scenario", "--dry-run", good, "--trials", "3", "--set", "trials.mode=reuse")
	if code != 0 || !strings.Contains(stdout, "valid; dry run") {
		t.Fatalf("dry run with --set trials.mode=reuse: code %d\n%s\n%s", code, stdout, stderr)
	}
}
