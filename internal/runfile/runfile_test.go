package runfile

import (
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeGz(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := io.WriteString(zw, text); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plain.csv"), []byte("p"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeGz(t, filepath.Join(dir, "packed.csv.gz"), "z")
	// both forms: the plain file wins
	if err := os.WriteFile(filepath.Join(dir, "both.csv"), []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeGz(t, filepath.Join(dir, "both.csv.gz"), "packed")
	if err := os.WriteFile(filepath.Join(dir, "broken.csv.gz"), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, want string
		notExist, fails  bool
	}{
		{name: "plain", file: "plain.csv", want: "p"},
		{name: "compressed", file: "packed.csv", want: "z"},
		{name: "named .gz", file: "packed.csv.gz", want: "z"},
		{name: "plain wins", file: "both.csv", want: "plain"},
		{name: "missing", file: "none.csv", notExist: true},
		{name: "not gzip", file: "broken.csv", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadFile(filepath.Join(dir, tc.file))
			switch {
			case tc.notExist:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("err %v, want not exist", err)
				}
			case tc.fails:
				if err == nil {
					t.Fatalf("read %q from a file that is not gzip", b)
				}
			case err != nil:
				t.Fatal(err)
			case string(b) != tc.want:
				t.Fatalf("read %q, want %q", b, tc.want)
			}
			if got := Exists(filepath.Join(dir, tc.file)); got == tc.notExist {
				t.Fatalf("Exists = %v", got)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.hlog", "b.hlog.gz", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeGz(t, filepath.Join(dir, "a.hlog.gz"), "")
	got, err := Glob(filepath.Join(dir, "*.hlog"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.hlog"), filepath.Join(dir, "b.hlog")}
	if !slices.Equal(got, want) {
		t.Fatalf("Glob = %v, want %v", got, want)
	}
}
