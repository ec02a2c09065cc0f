// Package runfile opens the files of a run directory whether they are
// stored plain or gzip-compressed: a reader asking for NAME gets NAME, or
// else NAME.gz decompressed. The result pages keep their inputs compressed
// (docs/results/data/.../windows.csv.gz, history.jsonl.gz, ...), and
// `faultbench report`, `compare`, `check` and the tests read them as they
// are, without unpacking (docs/output.md, "Compressed run directories").
package runfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Ext is the suffix of a compressed file.
const Ext = ".gz"

// Open opens path, or else path+".gz" through a gzip reader (a path named
// *.gz is read through one too). When neither exists the error is the
// plain path's (errors.Is(err, fs.ErrNotExist)).
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err == nil && strings.HasSuffix(path, Ext) {
		return gunzip(f, path) // a compressed file named as such
	}
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	gf, gerr := os.Open(path + Ext)
	if gerr != nil {
		return nil, err
	}
	return gunzip(gf, path+Ext)
}

func gunzip(gf *os.File, name string) (io.ReadCloser, error) {
	zr, zerr := gzip.NewReader(gf)
	if zerr != nil {
		gf.Close()
		return nil, fmt.Errorf("%s: %w", name, zerr)
	}
	return &gzFile{zr: zr, f: gf, name: name}, nil
}

type gzFile struct {
	zr   *gzip.Reader
	f    *os.File
	name string
}

func (g *gzFile) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: %w", g.name, err)
	}
	return n, err
}

func (g *gzFile) Close() error {
	zerr := g.zr.Close()
	if err := g.f.Close(); err != nil {
		return err
	}
	return zerr
}

// ReadFile reads the whole of path, or else of path+".gz" decompressed.
func ReadFile(path string) ([]byte, error) {
	rc, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, rc); err != nil {
		return nil, err
	}
	return b.Bytes(), rc.Close()
}

// Exists says whether path or path+".gz" exists.
func Exists(path string) bool {
	if _, err := os.Stat(path); err == nil {
		return true
	}
	_, err := os.Stat(path + Ext)
	return err == nil
}

// Glob is filepath.Glob over both forms: the plain names matching pattern
// and those whose compressed file matches it, each named without ".gz"
// (for Open), sorted, each once.
func Glob(pattern string) ([]string, error) {
	plain, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	gz, err := filepath.Glob(pattern + Ext)
	if err != nil {
		return nil, err
	}
	for _, g := range gz {
		plain = append(plain, strings.TrimSuffix(g, Ext))
	}
	slices.Sort(plain)
	return slices.Compact(plain), nil
}
