package wltest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/faultbench/faultbench/internal/history"
)

// WriteHistory writes ops to a history file in a temporary directory of
// the test and returns its path.
func WriteHistory(t testing.TB, ops []history.Op) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, history.FileName)
	hw, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if err := hw.Write(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Merge merges the histories of several client processes as the harness
// does (history.Merge: each part's process ids shifted past the previous
// parts'), writes the merged history to a file of the test and returns
// its path.
func Merge(t testing.TB, parts ...[]history.Op) string {
	t.Helper()
	var sources []history.Source
	for i, ops := range parts {
		p := WriteHistory(t, ops)
		renamed := filepath.Join(filepath.Dir(p), "client"+strconv.Itoa(i)+".jsonl")
		if err := os.Rename(p, renamed); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, history.Source{Path: renamed})
	}
	var b bytes.Buffer
	if _, err := history.Merge(context.Background(), &b, sources); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), history.FileName)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReadHistory reads the history file at path.
func ReadHistory(t testing.TB, path string) []history.Op {
	t.Helper()
	ops, _, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}
