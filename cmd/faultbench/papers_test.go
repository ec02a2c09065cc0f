package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// seedNumber matches the internal numbering of the source papers: the word
// seed (any case, optionally plural) then a space or hyphen and a number from
// 000 to 009. Users do not know those numbers: help, reports and docs name the
// method and cite the paper in docs/papers.md instead.
var seedNumber = regexp.MustCompile(`(?i)seeds?[ -]00[0-9]`)

// TestNoSeedNumbersInHelp runs the --help of every command (hidden ones
// included), of `upb summarize` and the top-level help, and fails if any
// output names a paper by its seed number.
func TestNoSeedNumbersInHelp(t *testing.T) {
	c := newCLI(t)
	invocations := [][]string{{"help"}, {"upb", "summarize", "--help"}}
	for _, cmd := range commands() {
		invocations = append(invocations, []string{cmd.name, "--help"})
	}
	for _, args := range invocations {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errs, code := c.run(10*time.Second, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if strings.TrimSpace(out) == "" {
				t.Fatalf("no help printed on stdout (stderr: %s)", errs)
			}
			for _, text := range []string{out, errs} {
				if m := seedNumber.FindString(text); m != "" {
					t.Errorf("help says %q; name the method and point to docs/papers.md instead:\n%s", m, text)
				}
			}
		})
	}
}

// TestNoSeedNumbersInDocs walks the user-facing text of the repository —
// README.md, docs/, scenarios/, workloads/, scripts/ and the Go sources of
// cmd/ and internal/ (help texts, report strings, package docs; testdata,
// which holds recorded runs, is skipped) — and fails on every line that names
// a paper by its seed number.
func TestNoSeedNumbersInDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	checked := 0
	check := func(t *testing.T, path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return // images and other binary files
		}
		checked++
		for _, h := range seedLines(b) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s:%d says %q; name the method (docs/papers.md) instead: %s", rel, h.line, h.match, h.text)
		}
	}
	for _, tc := range []struct {
		name  string
		dirs  []string
		files []string
		exts  []string // file name extensions to check; nil: every text file
	}{
		{name: "docs", dirs: []string{"docs", "scenarios", "workloads", "scripts"}, files: []string{"README.md"}},
		{name: "sources", dirs: []string{"cmd", "internal"}, exts: []string{".go", ".html", ".js"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked = 0
			for _, f := range tc.files {
				check(t, filepath.Join(root, f))
			}
			for _, d := range tc.dirs {
				err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					if e.IsDir() {
						if e.Name() == "testdata" {
							return filepath.SkipDir
						}
						return nil
					}
					if !e.Type().IsRegular() || tc.exts != nil && !slices.Contains(tc.exts, filepath.Ext(path)) {
						return nil
					}
					check(t, path)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if checked < 5 {
				t.Fatalf("only %d files checked: the walk missed the tree", checked)
			}
		})
	}
}

// seedHit is a line that names a paper by its seed number.
type seedHit struct {
	line        int // 1-based
	match, text string
}

// seedLines returns the lines of b that seedNumber matches. The regular
// expression runs only on lines holding "eed" in any case (every match
// does, whatever the case folding of its "s"): the docs hold megabytes of
// recorded runs, and matching each of their lines took a minute under
// -race.
func seedLines(b []byte) []seedHit {
	if !hasEED(b) {
		return nil
	}
	var hits []seedHit
	for line, start := 1, 0; start < len(b); line++ {
		end := bytes.IndexByte(b[start:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += start
		}
		if l := b[start:end]; hasEED(l) {
			if m := seedNumber.Find(l); m != nil {
				hits = append(hits, seedHit{line: line, match: string(m), text: strings.TrimSpace(string(l))})
			}
		}
		start = end + 1
	}
	return hits
}

// hasEED says whether b holds "eed" in any case: eight searches of the
// standard library's (uninstrumented) substring search, fast under -race.
func hasEED(b []byte) bool {
	for _, v := range []string{"eed", "eeD", "eEd", "eED", "Eed", "EeD", "EEd", "EED"} {
		if bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}

// TestSeedLines is the walk's negative control: the lines that name a
// seed number are found, in any case, on any line, and nothing else. (The
// texts write the number's "00" as "#", or this file would fail the walk.)
func TestSeedLines(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []int
	}{
		{"none", "a seed of 42\nseeded trials #3\n", nil},
		{"first line", "see seed #3 for it\nfine\n", []int{1}},
		{"hyphen, upper case, plural", "ok\nSEEDS-#7 and\n", []int{2}},
		{"last line without newline", "ok\n\nthe Seed #1", []int{3}},
		{"folded s (U+017F)", "x\n\u017feed #4\n", []int{2}},
		{"two lines", "seed #0\nseed-#9\n", []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, h := range seedLines([]byte(strings.ReplaceAll(tc.text, "#", "00"))) {
				got = append(got, h.line)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("lines %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPapersLinks checks that every link to a section of docs/papers.md from
// README.md and docs/ names a heading that page has (GitHub's anchor rule:
// lower case, punctuation dropped, spaces to hyphens), so that "the Under
// Pressure Benchmark" in a page leads to its citation.
func TestPapersLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "papers.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(page), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[anchor(h)] = true
		}
	}
	if len(anchors) != 8 {
		t.Fatalf("docs/papers.md has %d sections, want one per paper (5), per checker's source (Elle, porcupine) and the metastable-failure papers: %v", len(anchors), anchors)
	}
	link := regexp.MustCompile(`papers\.md#([^)\s]+)`)
	files := []string{filepath.Join(root, "README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	results, err := filepath.Glob(filepath.Join(root, "docs", "results", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, f := range append(append(files, docs...), results...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			links++
			if !anchors[m[1]] {
				t.Errorf("%s links to papers.md#%s, which is no heading of docs/papers.md (%v)", f, m[1], anchors)
			}
		}
	}
	if links == 0 {
		t.Error("no page links to a section of docs/papers.md")
	}
}

// anchor is GitHub's anchor for a Markdown heading.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
