package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/reproduce"
)

func TestReproduceCommand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains []string // in stdout + stderr
	}{
		{"help names every paper by title", []string{"reproduce", "--help"}, 0, titles()},
		{"wrong paper lists the valid ones", []string{"reproduce", "hbase"}, 2, append([]string{`unknown paper "hbase"`}, titles()...)},
		{"no paper", []string{"reproduce"}, 2, []string{"reproduce needs exactly one PAPER: upb, nosql-failover"}},
		{"bad scale", []string{"reproduce", "upb", "--scale", "medium"}, 2, []string{`scale "medium"`}},
		{"unknown step", []string{"reproduce", "upb", "--only", "upb-voltdb", "--dry-run"}, 2, []string{`step "upb-voltdb": not a step of upb at scale small (its steps: upb-etcd)`}},
		{"one step", []string{"reproduce", "cumulonimbo", "--only", "two-nodes-4n", "--set", "load.duration=120s", "--dry-run"}, 0, []string{"1 steps, valid", "--set load.warmup=60s --set load.duration=240s --set schedule.0.at=90s --set load.duration=120s"}},
		{"a --set that breaks a step", []string{"reproduce", "cumulonimbo", "--only", "two-nodes-4n", "--set", "load.duration=60s", "--dry-run"}, 2, []string{"is not before the end of the measured run"}},
		{"dry run", []string{"reproduce", "txkv-recovery", "--dry-run"}, 0, []string{"valid; dry run, nothing started", "scenarios/txkv-recovery/server-crash.yaml"}},
		{"dry run full", []string{"reproduce", "nosql-failover", "--dry-run", "--scale", "full"}, 0, []string{"--trials 5", "workload.properties.recordcount=50000000"}},
		{"tables of no directory", []string{"reproduce", "tables", t.TempDir()}, 2, []string{"is not a reproduction directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runApp(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
			for _, w := range tc.contains {
				if !strings.Contains(out+errs, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errs)
				}
			}
		})
	}
}

func titles() []string {
	var out []string
	for _, p := range reproduce.Papers() {
		out = append(out, p.Title)
	}
	return out
}

// TestReproduceTablesCheck: `reproduce tables DIR --check PAGE` passes on
// a page generated from the directory and fails (exit 1, the differing
// line) on one edited by hand.
func TestReproduceTablesCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, reproduce.ManifestFile), []byte(`{"paper":"txkv-recovery","scale":"small","started":"2026-11-27T10:00:00Z","steps":[{"id":"server-crash","figure":"Figure 3","error":"cluster up: timed out"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "txkv-recovery.md")
	if err := os.WriteFile(page, []byte("# page\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := runApp("reproduce", "tables", dir, "--page", page); code != 0 {
		t.Fatalf("--page: exit %d: %s%s", code, out, errs)
	}
	if out, errs, code := runApp("reproduce", "tables", dir, "--check", page); code != 0 || !strings.Contains(out, "matches the runs") {
		t.Fatalf("--check of a generated page: exit %d: %s%s", code, out, errs)
	}
	b, _ := os.ReadFile(page)
	if err := os.WriteFile(page, []byte(strings.Replace(string(b), "failed: cluster up: timed out", "failed: nothing", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runApp("reproduce", "tables", dir, "--check", page)
	if code != 1 || !strings.Contains(errs, "disagrees with its runs") {
		t.Fatalf("--check of an edited page: exit %d: %s%s", code, out, errs)
	}
}
