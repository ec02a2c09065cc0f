package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node.log")
	if got := LogTail(p, 15); !strings.Contains(got, "no log") {
		t.Errorf("missing log: %q", got)
	}
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(strings.Repeat("x", 40) + " line " + string(rune('a'+i%26)) + "\n")
	}
	b.WriteString("the last line\n")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := LogTail(p, 15)
	if !strings.HasSuffix(got, "the last line") || strings.Count(got, "\n") != 15 {
		t.Errorf("tail: %q", got)
	}
}
