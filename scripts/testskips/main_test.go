package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		code     int
		contains []string
		absent   []string
	}{
		{"skip is listed with its reason", `{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: no redis-server on PATH\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`, 0, []string{"ok  \tp", "1 tests SKIPPED", "p TestA: a_test.go:9: no redis-server on PATH"}, []string{"=== RUN"}},
		{"a failed test is printed and fails the run", `{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: boom\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p"}
`, 1, []string{"boom"}, []string{"SKIPPED"}},
		{"a build failure fails the run", `{"Action":"build-output","ImportPath":"p","Output":"x.go:1: syntax error\n"}
{"Action":"build-fail","ImportPath":"p"}
`, 1, []string{"syntax error"}, nil},
		{"passing output stays quiet", `{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:1: chatter\n"}
{"Action":"pass","Package":"p","Test":"TestC"}
`, 0, nil, []string{"chatter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if code := run(strings.NewReader(tc.in), &out); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, s := range tc.contains {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}
