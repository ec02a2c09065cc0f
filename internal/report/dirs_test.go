package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderDirDispatch: a kind that claims a directory draws it, before
// the sweep and run renderers; a directory with only a measured load
// phase says where it is.
func TestRenderDirDispatch(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "load"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "load", "windows.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	drawn := ""
	kind := func(name string, claims bool) DirKind {
		return DirKind{Name: name, Is: func(string) bool { return claims }, Render: func(context.Context, string) (*Output, error) {
			drawn = name
			return &Output{HTML: name}, nil
		}}
	}
	out, err := RenderDir(context.Background(), dir, kind("no", false), kind("first", true), kind("second", true))
	if err != nil || out.HTML != "first" || drawn != "first" {
		t.Errorf("RenderDir = %v, %v (drew %q), want the first kind that claims it", out, err, drawn)
	}
	_, err = RenderDir(context.Background(), dir, kind("no", false))
	if err == nil || !strings.Contains(err.Error(), "has no measured run: it was interrupted in its load phase") {
		t.Errorf("RenderDir of an interrupted run = %v, want where its load phase is", err)
	}
	if got := Comparability([]string{dir, t.TempDir()}, kind("UPB run", true)); len(got) != 0 {
		t.Errorf("two runs of one kind: %v, want comparable", got)
	}
}
