package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCPUTicks(t *testing.T) {
	// fields 14-17 (utime stime cutime cstime) are 250 30 7 3
	line := "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 30 7 3 20 0 3 0 12345 0 0"
	tests := []struct {
		name, stat string
		want       int64
		wantErr    bool
	}{
		{"command name with spaces and parentheses", line, 290, false},
		{"plain", "1 (init) S 0 1 1 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 9 0 0", 26, false},
		{"no command name", "1 init S 0 1 1 0 -1 0 0 0 0 0 5 6 7 8", 0, true},
		{"too few fields", "1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 6", 0, true},
		{"not a number", "1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 six 7 8 20", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cpuTicks(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("cpuTicks: err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("cpuTicks = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		argv     []string
		wantCode int
	}{
		{"success", []string{"true"}, 0},
		{"failure passes the exit code on", []string{"false"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cpu")
			code, err := run(out, tc.argv)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(string(b))
			if len(f) != 6 || f[0] != "cpu_seconds" || f[2] != "wall_seconds" || f[4] != "exit" {
				t.Fatalf("line %q: want cpu_seconds S wall_seconds S exit N", b)
			}
		})
	}
	if _, err := run(filepath.Join(t.TempDir(), "cpu"), []string{"/nonexistent/prog"}); err == nil {
		t.Error("run of a missing program: no error")
	}
}
