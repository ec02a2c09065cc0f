package postgresha

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Option keys understood in Spec.Options (the "postgres." prefix may be
// omitted). Cluster.Options records every option with its resolved value.
const (
	// OptBinDir is the PostgreSQL bin directory (postgres, pg_ctl, initdb);
	// default /usr/lib/postgresql/15/bin.
	OptBinDir = "postgres.bin-dir"
	// OptAutoctl is the pg_autoctl executable; default pg_autoctl on PATH.
	OptAutoctl = "postgres.pg-autoctl"
	// OptTiming is the failover timing preset: "fast" (default; seconds,
	// for a benchmark) or "pgaf" (pg_auto_failover's own defaults).
	OptTiming = "postgres.timing"
	// OptHealthCheckPeriod is the monitor's health_check_period in
	// milliseconds (fast: 1000, pgaf: 5000).
	OptHealthCheckPeriod = "postgres.health-check-period-ms"
	// OptUnhealthyTimeout is the monitor's node_considered_unhealthy_timeout
	// in milliseconds (fast: 2000, pgaf: 20000).
	OptUnhealthyTimeout = "postgres.unhealthy-timeout-ms"
	// OptUser is the operating-system user every postgres and pg_autoctl
	// process runs as; default postgres (PostgreSQL refuses to run as root).
	OptUser = "postgres.os-user"
	// OptSyncCommit is every data node's synchronous_commit: on (default,
	// PostgreSQL's), off, local, remote_write or remote_apply.
	OptSyncCommit = "postgres.synchronous-commit"
	// OptSyncStandby says whether the standbys are synchronous: on
	// (default, pg_auto_failover's: every standby is in the replication
	// quorum and a commit waits for one of them) or off (standbys are
	// created with --replication-quorum false: commits wait for none).
	OptSyncStandby = "postgres.synchronous-standby"
)

// SyncCommitValues are synchronous_commit's values.
var SyncCommitValues = []string{"on", "off", "local", "remote_write", "remote_apply"}

// OptionNames returns every option key the launcher understands, sorted.
func OptionNames() []string {
	return []string{OptBinDir, OptHealthCheckPeriod, OptUser, OptAutoctl, OptSyncCommit, OptSyncStandby, OptTiming, OptUnhealthyTimeout}
}

// Timing presets.
const (
	TimingFast = "fast"
	TimingPGAF = "pgaf"
)

// timing is the set of failover timeouts the launcher sets.
type timing struct {
	// monitor GUCs (milliseconds)
	healthCheckPeriod, healthCheckTimeout, healthCheckMaxRetries, healthCheckRetryDelay int
	unhealthyTimeout, startupGracePeriod, primaryDemoteTimeout                          int
	// keeper settings (seconds)
	networkPartitionTimeout, restartFailureTimeout int
}

func presetTiming(name string) timing {
	if name == TimingPGAF {
		return timing{
			healthCheckPeriod: 5000, healthCheckTimeout: 5000, healthCheckMaxRetries: 2, healthCheckRetryDelay: 2000,
			unhealthyTimeout: 20000, startupGracePeriod: 10000, primaryDemoteTimeout: 30000,
			networkPartitionTimeout: 20, restartFailureTimeout: 20,
		}
	}
	return timing{
		healthCheckPeriod: 1000, healthCheckTimeout: 1000, healthCheckMaxRetries: 1, healthCheckRetryDelay: 500,
		unhealthyTimeout: 2000, startupGracePeriod: 2000, primaryDemoteTimeout: 5000,
		networkPartitionTimeout: 5, restartFailureTimeout: 5,
	}
}

// monitorSettings returns the monitor's GUCs for t, sorted by name.
func (t timing) monitorSettings() [][2]string {
	return [][2]string{
		{"pgautofailover.health_check_max_retries", strconv.Itoa(t.healthCheckMaxRetries)},
		{"pgautofailover.health_check_period", strconv.Itoa(t.healthCheckPeriod)},
		{"pgautofailover.health_check_retry_delay", strconv.Itoa(t.healthCheckRetryDelay)},
		{"pgautofailover.health_check_timeout", strconv.Itoa(t.healthCheckTimeout)},
		{"pgautofailover.node_considered_unhealthy_timeout", strconv.Itoa(t.unhealthyTimeout)},
		{"pgautofailover.primary_demote_timeout", strconv.Itoa(t.primaryDemoteTimeout)},
		{"pgautofailover.startup_grace_period", strconv.Itoa(t.startupGracePeriod)},
	}
}

// keeperSettings returns the keepers' pg_autoctl settings for t.
func (t timing) keeperSettings() [][2]string {
	return [][2]string{
		{"timeout.network_partition_timeout", strconv.Itoa(t.networkPartitionTimeout)},
		{"timeout.postgresql_restart_failure_timeout", strconv.Itoa(t.restartFailureTimeout)},
	}
}

// config is the resolved Spec.Options.
type config struct {
	binDir  string
	autoctl string
	preset  string
	timing  timing
	osUser  string
	// syncCommit is synchronous_commit, syncStandby whether standbys
	// are in the replication quorum
	syncCommit  string
	syncStandby bool
	uid         uint32
	gid         uint32
}

// DefaultBinDir is where Debian's postgresql-15 installs its programs.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

func msOption(k, v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("option %s=%q: want milliseconds between %d and %d", k, v, lo, hi)
	}
	return n, nil
}

// parseOptions validates opts and fills in defaults. It does not look at
// the file system or the user database (see resolve).
func parseOptions(opts map[string]string) (config, error) {
	cfg := config{binDir: DefaultBinDir, preset: TimingFast, osUser: "postgres", syncCommit: "on", syncStandby: true}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var period, unhealthy int
	for _, k := range keys {
		v := strings.TrimSpace(opts[k])
		key := k
		if !strings.HasPrefix(key, "postgres.") {
			key = "postgres." + key
		}
		var err error
		switch key {
		case OptBinDir:
			cfg.binDir = v
		case OptAutoctl:
			cfg.autoctl = v
		case OptTiming:
			if v != TimingFast && v != TimingPGAF {
				err = fmt.Errorf("option %s=%q: want %s (benchmark timings) or %s (pg_auto_failover's defaults)", k, v, TimingFast, TimingPGAF)
			}
			cfg.preset = v
		case OptHealthCheckPeriod:
			period, err = msOption(k, v, 100, 600_000)
		case OptUnhealthyTimeout:
			unhealthy, err = msOption(k, v, 500, 3_600_000)
		case OptUser:
			if v == "" || v == "root" {
				err = fmt.Errorf("option %s=%q: want a user other than root (PostgreSQL refuses to run as root)", k, v)
			}
			cfg.osUser = v
		case OptSyncCommit:
			if !slices.Contains(SyncCommitValues, v) {
				err = fmt.Errorf("option %s=%q: want %s", k, v, strings.Join(SyncCommitValues, ", "))
			}
			cfg.syncCommit = v
		case OptSyncStandby:
			switch v {
			case "on", "true", "yes":
				cfg.syncStandby = true
			case "off", "false", "no":
				cfg.syncStandby = false
			default:
				err = fmt.Errorf("option %s=%q: want on (standbys in the replication quorum) or off", k, v)
			}
		default:
			err = fmt.Errorf("unknown option %q (postgres-ha knows: %s)", k, strings.Join(OptionNames(), ", "))
		}
		if err != nil {
			return config{}, err
		}
	}
	if cfg.binDir == "" {
		return config{}, fmt.Errorf("option %s is empty", OptBinDir)
	}
	cfg.timing = presetTiming(cfg.preset)
	if period > 0 {
		cfg.timing.healthCheckPeriod = period
	}
	if unhealthy > 0 {
		cfg.timing.unhealthyTimeout = unhealthy
	}
	return cfg, nil
}

// resolve finds the programs and the operating-system user.
func (cfg *config) resolve() error {
	for _, prog := range []string{"postgres", "pg_ctl", "initdb", "pg_basebackup"} {
		p := filepath.Join(cfg.binDir, prog)
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return fmt.Errorf("%s not found (option %s=%s): run scripts/setup.sh --only postgres (Debian's postgresql-15)", p, OptBinDir, cfg.binDir)
		}
	}
	if cfg.autoctl == "" {
		p, err := exec.LookPath("pg_autoctl")
		if err != nil {
			return errors.New("pg_autoctl not found on PATH: run scripts/setup.sh --only postgres (Debian's postgresql-15-auto-failover and pg-auto-failover-cli), or set option " + OptAutoctl)
		}
		cfg.autoctl = p
	} else if p, err := exec.LookPath(cfg.autoctl); err != nil {
		return fmt.Errorf("option %s=%q: %w", OptAutoctl, cfg.autoctl, err)
	} else {
		cfg.autoctl = p
	}
	if abs, err := filepath.Abs(cfg.autoctl); err == nil {
		cfg.autoctl = abs
	}
	uid, gid, err := lookupUser(cfg.osUser)
	if err != nil {
		return fmt.Errorf("option %s: %w", OptUser, err)
	}
	cfg.uid, cfg.gid = uid, gid
	return nil
}

// options renders cfg for Cluster.Options.
func (cfg config) options() map[string]string {
	return map[string]string{
		OptBinDir:            cfg.binDir,
		OptAutoctl:           cfg.autoctl,
		OptTiming:            cfg.preset,
		OptHealthCheckPeriod: strconv.Itoa(cfg.timing.healthCheckPeriod),
		OptUnhealthyTimeout:  strconv.Itoa(cfg.timing.unhealthyTimeout),
		OptUser:              cfg.osUser,
		OptSyncCommit:        cfg.syncCommit,
		OptSyncStandby:       onOff(cfg.syncStandby),
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// fromCluster reads back the options a cluster was started with.
func fromCluster(opts map[string]string) (config, error) {
	cfg, err := parseOptions(launcher.OwnOptions(opts)) // a cluster network's keys are not ours
	if err != nil {
		return cfg, fmt.Errorf("recorded options: %w", err)
	}
	if err := cfg.resolve(); err != nil {
		return cfg, err
	}
	return cfg, nil
}
