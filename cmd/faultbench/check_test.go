package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/history"
)

// TestCheckCommand: `faultbench check` judges a run directory's history,
// writes the verdict, and exits 3 (exitAnomaly) on anomalies only with --fail-on-anomaly.
func TestCheckCommand(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	w, err := history.Create(filepath.Join(dir, history.FileName))
	if err != nil {
		t.Fatal(err)
	}
	list := func(k string, v ...int64) history.Mop {
		return history.Mop{F: history.Read, Key: k, IsList: true, List: append([]int64{}, v...)}
	}
	for _, op := range []history.Op{
		{Process: 0, Invoke: 0, Complete: 10, Mops: []history.Mop{list("x"), list("y"), {F: history.Append, Key: "x", Value: 1}}},
		{Process: 1, Invoke: 0, Complete: 10, Mops: []history.Mop{list("x"), list("y"), {F: history.Append, Key: "y", Value: 1}}},
		{Process: 2, Invoke: 20, Complete: 30, Mops: []history.Mop{list("x", 1), list("y", 1)}},
	} {
		if err := w.Write(&op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"write skew under serializable", []string{"check", dir, "--checker", "isolation"}, 0, "valid=false"},
		{"fail on anomaly", []string{"check", dir, "--checker", "isolation", "--fail-on-anomaly"}, exitAnomaly, "G2-item 1"},
		{"allowed under snapshot isolation", []string{"check", dir, "--checker", "isolation", "--model", "snapshot-isolation", "--fail-on-anomaly"}, 0, "valid=true"},
		{"unknown checker", []string{"check", dir, "--checker", "knossos"}, 2, ""},
		{"unknown model", []string{"check", dir, "--checker", "isolation", "--model", "si"}, 2, ""},
		{"no checker", []string{"check", dir}, 2, ""},
		{"no history", []string{"check", t.TempDir(), "--checker", "isolation"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := c.run(time.Minute, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tt.code, out, errs)
			}
			if strings.Contains(errs, "panic") {
				t.Fatalf("panic: %s", errs)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "checks", "isolation.json")); err != nil {
		t.Fatalf("no verdict file: %v", err)
	}
}
