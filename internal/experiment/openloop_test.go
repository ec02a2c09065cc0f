package experiment

import (
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/scenario"
)

func TestOpenThreads(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		open  string
		rate  float64
		p99   time.Duration
		want  int
		noted bool
	}{
		// the failover-compare case: etcd at 1,354 ops/s, p99 40 ms: 16
		// threads leave each worker 11.8 ms, less than one slow operation
		{"unset keeps load.threads (the old behaviour)", "", 1354, 40 * ms, 16, false},
		{"auto: rate × p99 × margin", scenario.OpenThreadsAuto, 1354, 40 * ms, 109, true},
		{"auto never below load.threads", scenario.OpenThreadsAuto, 100, ms, 16, true},
		{"auto bounded", scenario.OpenThreadsAuto, 22000, 50 * ms, MaxAutoOpenThreads, true},
		{"auto without a calibration keeps load.threads", scenario.OpenThreadsAuto, 1000, 0, 16, true},
		{"a number", "40", 1000, 0, 40, true},
		{"closed loop keeps load.threads", scenario.OpenThreadsAuto, 0, 40 * ms, 16, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ld := scenario.Load{Threads: 16, OpenThreads: tc.open}
			got, how := openThreads(ld, tc.rate, tc.p99)
			if got != tc.want || (how != "") != tc.noted {
				t.Fatalf("openThreads = %d, %q; want %d (noted %v)", got, how, tc.want, tc.noted)
			}
			if tc.open == scenario.OpenThreadsAuto && tc.p99 > 0 && tc.rate > 0 && got < MaxAutoOpenThreads {
				// the property auto exists for: each worker's interval is at
				// least the margin times the calibration's p99
				if interval := time.Duration(float64(got) / tc.rate * float64(time.Second)); interval < OpenThreadsMargin*tc.p99 && got > ld.Threads {
					t.Fatalf("interval %v < %d × p99 %v", interval, OpenThreadsMargin, tc.p99)
				}
			}
		})
	}
}

// TestRunPropertiesOpenThreads: the measured run gets the open loop's
// threads, the calibration keeps load.threads.
func TestRunPropertiesOpenThreads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		threads int
		want    string
	}{
		{"open loop sized", 109, "109"},
		{"load.threads", 16, "16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scenario.Scenario{Name: "x", Load: scenario.Load{Threads: 16, Duration: scenario.Duration(time.Second)}}
			r := &scenarioRun{s: &ScenarioSpec{}, sc: sc, threads: tc.threads}
			r.base = properties.New()
			r.base.Set("threadcount", "16")
			if got := r.runProperties(1000).String("threadcount", ""); got != tc.want {
				t.Fatalf("measured threadcount = %q, want %q", got, tc.want)
			}
			if got := r.base.String("threadcount", ""); got != "16" {
				t.Fatalf("base (calibration) threadcount = %q, want 16", got)
			}
		})
	}
}
