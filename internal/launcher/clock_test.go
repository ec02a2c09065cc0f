package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSpawnClock: an Env for clock faults starts node programs with
// libfaketime preloaded and their control file, created at +0; faultbench's
// own processes and an Env without clock faults get nothing.
func TestSpawnClock(t *testing.T) {
	if _, err := FaketimeLibrary(); err != nil {
		t.Skip(err)
	}
	envProg := "/usr/bin/env"
	if _, err := os.Stat(envProg); err != nil {
		t.Skip("no /usr/bin/env")
	}
	base, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	self := base.WithClock()
	self.Self = envProg // env stands for the faultbench binary
	tests := []struct {
		name    string
		env     *Env
		argv    []string
		preload bool
	}{
		{"clock faults: a node program runs under libfaketime", base.WithClock(), []string{envProg}, true},
		{"clock faults: faultbench's own process does not", self, []string{envProg}, false},
		{"no clock faults: nothing changes", base, []string{envProg}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "n1.log")
			pid, err := tc.env.Spawn(tc.argv, log, false)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := WaitExit(ctx, pid); err != nil {
				t.Fatal(err)
			}
			out, _ := os.ReadFile(log)
			hasFile := strings.Contains(string(out), "FAKETIME_TIMESTAMP_FILE="+ClockFile(log)+"\n")
			hasLib := strings.Contains(string(out), "libfaketime.so.1")
			ctl, cerr := os.ReadFile(ClockFile(log))
			if tc.preload {
				if !hasFile || !hasLib || !strings.Contains(string(out), "FAKETIME_NO_CACHE=1") {
					t.Errorf("environment lacks libfaketime or its control file:\n%s", out)
				}
				if cerr != nil || strings.TrimSpace(string(ctl)) != "+0" {
					t.Errorf("control file: %q, %v; want +0", ctl, cerr)
				}
				return
			}
			if hasFile || hasLib {
				t.Errorf("libfaketime in the environment:\n%s", out)
			}
			if cerr == nil {
				t.Errorf("a control file was made: %q", ctl)
			}
		})
	}
}

func TestCheckClockOption(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"", true}, {"faketime", true}, {"libfaketime", false}, {"on", false}} {
		if err := CheckClockOption(tc.v); (err == nil) != tc.ok {
			t.Errorf("CheckClockOption(%q) = %v, want ok %v", tc.v, err, tc.ok)
		}
	}
}
