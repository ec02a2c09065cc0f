package experiment

import (
	"strconv"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher/postgresha"
	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/workload"
	"github.com/faultbench/faultbench/scenarios"
)

func TestPoolShortfall(t *testing.T) {
	tests := []struct {
		name     string
		settings map[string]string
		threads  int
		warn     bool
	}{
		{"pool under the open loop's threads", map[string]string{"postgres.poolsize": "64", "postgres.connecttimeout": "2s"}, 110, true},
		{"galera pool under the threads", map[string]string{"galera.poolsize": "8"}, 16, true},
		{"redis pool under the threads", map[string]string{"redis.poolsize": "20"}, 21, true},
		{"pool of threads + 4", map[string]string{"postgres.poolsize": "114"}, 110, false},
		{"pool equal to the threads", map[string]string{"postgres.poolsize": "110"}, 110, false},
		{"no pool setting", map[string]string{"etcd.requireleader": "true"}, 256, false},
		{"no settings", nil, 16, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := poolShortfall(tt.settings, tt.threads)
			if (w != "") != tt.warn {
				t.Fatalf("poolShortfall(%v, %d) = %q, want a warning: %v", tt.settings, tt.threads, w, tt.warn)
			}
			if tt.warn && !strings.Contains(w, strconv.Itoa(tt.threads)+" threads") {
				t.Errorf("warning %q does not name the threads", w)
			}
		})
	}
}

// maxThreads is the most threads a scenario's measured run or
// calibration can have.
func maxThreads(sc *scenario.Scenario) int {
	ld := sc.Load
	switch {
	case ld.OpenThreads == scenario.OpenThreadsAuto:
		return max(MaxAutoOpenThreads, ld.Threads)
	case ld.OpenThreads != "":
		n, _ := strconv.Atoi(ld.OpenThreads)
		return max(n, ld.Threads)
	}
	return ld.Threads
}

// TestShippedScenariosPoolFitsThreads: no shipped scenario fixes a
// driver's connection pool below the threads its run can have (the
// failover-postgres-ha scenarios had postgres.poolsize 64 under
// load.open_threads auto, up to 256 threads: 4 of 5 trials invalid).
func TestShippedScenariosPoolFitsThreads(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			b, err := scenarios.Read(name)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scenario.ParseWith(b, name+".yaml", nil, workload.Builtin())
			if err != nil {
				t.Skipf("not a plain scenario: %v", err)
			}
			for k, v := range sc.Target.Driver {
				if !strings.HasSuffix(k, ".poolsize") {
					continue
				}
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%s %q: %v", k, v, err)
				}
				if m := maxThreads(sc); n < m {
					t.Errorf("target.driver.%s is %d, under the %d threads the run can have (load.threads %d, load.open_threads %q): unset it, the driver sizes the pool from the threads", k, n, m, sc.Load.Threads, sc.Load.OpenThreads)
				}
			}
		})
	}
}

// TestPostgresHAMaxConnectionsFitPool: every postgres-ha node allows the
// largest pool the driver sizes from the threads (threads + 4, threads at
// most MaxAutoOpenThreads) besides pg_autoctl's, the monitor's and
// faultbench's own connections.
func TestPostgresHAMaxConnectionsFitPool(t *testing.T) {
	if pool := MaxAutoOpenThreads + 4; pool+postgresha.OtherConnections > postgresha.MaxConnections {
		t.Errorf("postgres-ha max_connections %d < the largest pool %d + %d other connections", postgresha.MaxConnections, pool, postgresha.OtherConnections)
	}
}
