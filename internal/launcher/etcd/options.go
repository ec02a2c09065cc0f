package etcd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Option keys understood by the etcd launcher (launcher.Spec.Options). They
// are documented in docs/targets-etcd.md.
const (
	// OptElectionTimeout is the raft election timeout: milliseconds or a Go
	// duration (default 1000 ms, etcd's default). It must be at least 5x the
	// heartbeat interval.
	OptElectionTimeout = "etcd.election-timeout"
	// OptHeartbeatInterval is the raft heartbeat interval: milliseconds or a
	// Go duration (default 100 ms).
	OptHeartbeatInterval = "etcd.heartbeat-interval"
	// OptSnapshotCount is the number of committed entries between snapshots
	// (default 0: etcd's default, 10000).
	OptSnapshotCount = "etcd.snapshot-count"
	// OptQuotaBytes is the backend quota: bytes, or a size such as 4GiB
	// (default 0: etcd's default, 2 GiB).
	OptQuotaBytes = "etcd.quota-bytes"
	// OptAutoCompaction is the periodic auto-compaction retention as a Go
	// duration, "0" to switch it off (default 1m).
	OptAutoCompaction = "etcd.auto-compaction"
	// OptStartTimeout bounds how long Up and StartNode wait for members:
	// seconds or a Go duration (default 30s).
	OptStartTimeout = "etcd.start-timeout"
	// OptLogLevel is etcd's log level: debug, info, warn (default) or error.
	OptLogLevel = "etcd.log-level"
	// OptUnsafeNoFsync is etcd's --unsafe-no-fsync: true makes members
	// skip every fsync (default false), so that a power loss (power-loss,
	// docs/faults.md) loses acknowledged writes.
	OptUnsafeNoFsync = "etcd.unsafe-no-fsync"
)

// options are the resolved launcher options.
type options struct {
	electionMs     uint
	heartbeatMs    uint
	snapshotCount  uint64
	quotaBytes     int64
	autoCompaction time.Duration
	startTimeout   time.Duration
	logLevel       string
	unsafeNoFsync  bool
}

func defaultOptions() options {
	return options{
		electionMs:     1000,
		heartbeatMs:    100,
		autoCompaction: time.Minute,
		startTimeout:   30 * time.Second,
		logLevel:       "warn",
	}
}

// OptionNames returns every option key the launcher understands, sorted.
func OptionNames() []string {
	k := []string{OptElectionTimeout, OptHeartbeatInterval, OptSnapshotCount, OptQuotaBytes,
		OptAutoCompaction, OptStartTimeout, OptLogLevel, OptUnsafeNoFsync}
	sort.Strings(k)
	return k
}

// parseOptions reads m. Keys starting with "etcd." must be known; other keys
// are left to whoever set them.
func parseOptions(m map[string]string) (options, error) {
	o := defaultOptions()
	known := map[string]bool{}
	for _, k := range OptionNames() {
		known[k] = true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "etcd.") && !known[k] {
			return o, fmt.Errorf("unknown etcd option %q (known: %s)", k, strings.Join(OptionNames(), ", "))
		}
	}
	bad := func(k, v, want string) error {
		return fmt.Errorf("option %s=%q: %s", k, v, want)
	}
	if v, ok := m[OptElectionTimeout]; ok {
		d, err := parseMs(v)
		if err != nil {
			return o, bad(OptElectionTimeout, v, err.Error())
		}
		o.electionMs = d
	}
	if v, ok := m[OptHeartbeatInterval]; ok {
		d, err := parseMs(v)
		if err != nil {
			return o, bad(OptHeartbeatInterval, v, err.Error())
		}
		o.heartbeatMs = d
	}
	if 5*o.heartbeatMs > o.electionMs {
		return o, fmt.Errorf("option %s (%d ms) must be at least 5 times %s (%d ms)",
			OptElectionTimeout, o.electionMs, OptHeartbeatInterval, o.heartbeatMs)
	}
	if o.electionMs > 50000 {
		return o, fmt.Errorf("option %s (%d ms) must be at most 50000 ms", OptElectionTimeout, o.electionMs)
	}
	if v, ok := m[OptSnapshotCount]; ok {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return o, bad(OptSnapshotCount, v, "want a non-negative integer")
		}
		o.snapshotCount = n
	}
	if v, ok := m[OptQuotaBytes]; ok {
		n, err := humanize.ParseBytes(strings.TrimSpace(v))
		if err != nil || n > 1<<40 {
			return o, bad(OptQuotaBytes, v, "want a size in bytes such as 4294967296 or 4GiB")
		}
		o.quotaBytes = int64(n)
	}
	if v, ok := m[OptAutoCompaction]; ok {
		s := strings.TrimSpace(v)
		if s == "0" || s == "" {
			o.autoCompaction = 0
		} else {
			d, err := time.ParseDuration(s)
			if err != nil || d < time.Second {
				return o, bad(OptAutoCompaction, v, "want a Go duration of at least 1s (e.g. 1m), or 0 for none")
			}
			o.autoCompaction = d
		}
	}
	if v, ok := m[OptStartTimeout]; ok {
		s := strings.TrimSpace(v)
		var d time.Duration
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			d = time.Duration(f * float64(time.Second))
		} else if d, err = time.ParseDuration(s); err != nil {
			return o, bad(OptStartTimeout, v, "want seconds or a Go duration such as 45s")
		}
		if d <= 0 {
			return o, bad(OptStartTimeout, v, "must be positive")
		}
		o.startTimeout = d
	}
	if v, ok := m[OptUnsafeNoFsync]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return o, bad(OptUnsafeNoFsync, v, "want true or false")
		}
		o.unsafeNoFsync = b
	}
	if v, ok := m[OptLogLevel]; ok {
		switch s := strings.TrimSpace(v); s {
		case "debug", "info", "warn", "error":
			o.logLevel = s
		default:
			return o, bad(OptLogLevel, v, "want debug, info, warn or error")
		}
	}
	return o, nil
}

// parseMs reads milliseconds ("150") or a Go duration ("150ms", "1s").
func parseMs(s string) (uint, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if n == 0 {
			return 0, fmt.Errorf("must be positive")
		}
		return uint(n), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want milliseconds or a Go duration such as 150ms")
	}
	if d < time.Millisecond || d%time.Millisecond != 0 {
		return 0, fmt.Errorf("must be a positive whole number of milliseconds")
	}
	return uint(d / time.Millisecond), nil
}

// asMap renders o as the options recorded in the cluster state.
func (o options) asMap() map[string]string {
	return map[string]string{
		OptElectionTimeout:   strconv.FormatUint(uint64(o.electionMs), 10),
		OptHeartbeatInterval: strconv.FormatUint(uint64(o.heartbeatMs), 10),
		OptSnapshotCount:     strconv.FormatUint(o.snapshotCount, 10),
		OptQuotaBytes:        strconv.FormatInt(o.quotaBytes, 10),
		OptAutoCompaction:    durationOrZero(o.autoCompaction),
		OptStartTimeout:      o.startTimeout.String(),
		OptLogLevel:          o.logLevel,
		OptUnsafeNoFsync:     strconv.FormatBool(o.unsafeNoFsync),
	}
}

func durationOrZero(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}
