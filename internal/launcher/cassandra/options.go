package cassandra

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Version is the Cassandra release faultbench runs: the version of
// org.apache.cassandra:cassandra-all that scripts/setup.sh resolves from
// Maven Central (keep both equal).
const Version = "5.0.9"

// Option keys understood in launcher.Spec.Options (the "cassandra." prefix
// may be omitted). Cluster.Options records every option with its resolved
// value. They are documented in docs/targets-cassandra.md.
const (
	// OptRF is the replication factor of the keyspace the launcher creates
	// (default 3, or the number of nodes when fewer).
	OptRF = "cassandra.rf"
	// OptKeyspace is the keyspace the launcher creates (SimpleStrategy with
	// cassandra.rf replicas; default ycsb, the YCSB binding's keyspace).
	OptKeyspace = "cassandra.keyspace"
	// OptHeap is each node's maximum Java heap (-Xmx), e.g. 512m or 1g
	// (default 512m); the initial heap (-Xms) is half of it.
	OptHeap = "cassandra.heap"
	// OptJava is the java executable (default: java on PATH, 11 or 17).
	OptJava = "cassandra.java"
	// OptLib is the directory holding cassandra-all and its dependency jars
	// (default: the cache directory scripts/setup.sh --only cassandra fills).
	OptLib = "cassandra.lib"
	// OptNumTokens is num_tokens, the virtual nodes per node (default 16).
	OptNumTokens = "cassandra.num-tokens"
	// OptCommitlogSync is commitlog_sync: periodic (default, Cassandra's
	// default: acknowledged before the commit log is synced) or batch
	// (synced before acknowledging).
	OptCommitlogSync = "cassandra.commitlog-sync"
	// OptCommitlogSyncPeriod is commitlog_sync_period in milliseconds
	// (default 10000, Cassandra's default); only periodic sync uses it.
	OptCommitlogSyncPeriod = "cassandra.commitlog-sync-period"
	// OptWriteTimeout is write_request_timeout in milliseconds (default
	// 2000): how long a coordinator waits for the replicas a write's
	// consistency level needs before it answers WriteTimeout.
	OptWriteTimeout = "cassandra.write-request-timeout"
	// OptReadTimeout is read_request_timeout in milliseconds (default
	// 5000), and range_request_timeout is twice it.
	OptReadTimeout = "cassandra.read-request-timeout"
)

// OptionNames returns every option key the launcher understands, sorted.
func OptionNames() []string {
	k := []string{OptRF, OptKeyspace, OptHeap, OptJava, OptLib, OptNumTokens, OptCommitlogSync,
		OptCommitlogSyncPeriod, OptWriteTimeout, OptReadTimeout}
	sort.Strings(k)
	return k
}

// config is the resolved Spec.Options.
type config struct {
	rf             int // 0: default (min(3, nodes))
	keyspace       string
	heapMB         int
	java           string
	lib            string
	numTokens      int
	commitlogSync  string
	syncPeriodMS   int
	writeTimeoutMS int
	readTimeoutMS  int
}

func defaultConfig() config {
	return config{keyspace: "ycsb", heapMB: 512, numTokens: 16, commitlogSync: "periodic",
		syncPeriodMS: 10000, writeTimeoutMS: 2000, readTimeoutMS: 5000}
}

var identRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,47}$`)

// parseOptions validates opts (keys with or without the "cassandra."
// prefix) and fills in defaults; it does not look at the file system.
func parseOptions(opts map[string]string) (config, error) {
	cfg := defaultConfig()
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	intIn := func(k, v string, lo, hi int, unit string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("option %s=%q: want %s between %d and %d", k, v, unit, lo, hi)
		}
		return n, nil
	}
	for _, k := range keys {
		v := opts[k]
		key := k
		if !strings.HasPrefix(key, "cassandra.") {
			key = "cassandra." + key
		}
		var err error
		switch key {
		case OptRF:
			cfg.rf, err = intIn(k, v, 1, 64, "a replication factor")
		case OptKeyspace:
			s := strings.TrimSpace(v)
			if !identRE.MatchString(s) || strings.HasPrefix(strings.ToLower(s), "system") {
				err = fmt.Errorf("option %s=%q: want a keyspace name (letters, digits, _; at most 48; not system*)", k, v)
			}
			cfg.keyspace = s
		case OptHeap:
			cfg.heapMB, err = parseHeap(k, v)
		case OptJava:
			cfg.java = strings.TrimSpace(v)
		case OptLib:
			cfg.lib = strings.TrimSpace(v)
		case OptNumTokens:
			cfg.numTokens, err = intIn(k, v, 1, 256, "a number of tokens")
		case OptCommitlogSync:
			s := strings.ToLower(strings.TrimSpace(v))
			if s != "periodic" && s != "batch" {
				err = fmt.Errorf("option %s=%q: want periodic or batch", k, v)
			}
			cfg.commitlogSync = s
		case OptCommitlogSyncPeriod:
			cfg.syncPeriodMS, err = intIn(k, v, 1, 600_000, "milliseconds")
		case OptWriteTimeout:
			cfg.writeTimeoutMS, err = intIn(k, v, 10, 600_000, "milliseconds")
		case OptReadTimeout:
			cfg.readTimeoutMS, err = intIn(k, v, 10, 600_000, "milliseconds")
		default:
			err = fmt.Errorf("unknown option %q (the cassandra launcher knows: %s)", k, strings.Join(OptionNames(), ", "))
		}
		if err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// parseHeap reads a heap size: a number with suffix m or g (or M, G, MB,
// GB, MiB, GiB); a bare number is megabytes. 128 MB to 32 GB.
func parseHeap(k, v string) (int, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mult := 1
	for _, suf := range []struct {
		s string
		m int
	}{{"gib", 1024}, {"gb", 1024}, {"g", 1024}, {"mib", 1}, {"mb", 1}, {"m", 1}} {
		if t, ok := strings.CutSuffix(s, suf.s); ok {
			s, mult = t, suf.m
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n*mult < 128 || n*mult > 32*1024 {
		return 0, fmt.Errorf("option %s=%q: want a heap size between 128m and 32g (e.g. 512m, 1g)", k, v)
	}
	return n * mult, nil
}

// resolveRF fills in the default replication factor for nodes and checks
// that it fits.
func (cfg *config) resolveRF(nodes int) error {
	if cfg.rf == 0 {
		cfg.rf = min(3, nodes)
	}
	if cfg.rf > nodes {
		return fmt.Errorf("option %s=%d: more replicas than nodes (%d); Cassandra could not write at consistency ALL or QUORUM", OptRF, cfg.rf, nodes)
	}
	return nil
}

// DefaultLibDir is where scripts/setup.sh --only cassandra puts the jars:
// $XDG_CACHE_HOME/faultbench/cassandra-VERSION/lib, else
// ~/.cache/faultbench/cassandra-VERSION/lib.
func DefaultLibDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the user's cache dir: %w", err)
	}
	return filepath.Join(d, "faultbench", "cassandra-"+Version, "lib"), nil
}

// resolvePaths finds java and the jar directory, checking both exist.
func (cfg *config) resolvePaths() error {
	if cfg.java == "" {
		p, err := exec.LookPath("java")
		if err != nil {
			return errors.New("java not found on PATH: install Java 17 (apt-get install openjdk-17-jre-headless, or scripts/setup.sh --only cassandra), or set option " + OptJava)
		}
		cfg.java = p
	} else if p, err := exec.LookPath(cfg.java); err != nil {
		return fmt.Errorf("option %s=%q: %w", OptJava, cfg.java, err)
	} else {
		cfg.java = p
	}
	if abs, err := filepath.Abs(cfg.java); err == nil {
		cfg.java = abs
	}
	if cfg.lib == "" {
		d, err := DefaultLibDir()
		if err != nil {
			return err
		}
		cfg.lib = d
	}
	abs, err := filepath.Abs(cfg.lib)
	if err != nil {
		return fmt.Errorf("option %s=%q: %w", OptLib, cfg.lib, err)
	}
	cfg.lib = abs
	jar := filepath.Join(cfg.lib, "cassandra-all-"+Version+".jar")
	if _, err := os.Stat(jar); err != nil {
		return fmt.Errorf("cassandra %s is not installed (%s missing): run scripts/setup.sh --only cassandra, or set option %s to a directory with cassandra-all-%s.jar and its dependencies", Version, jar, OptLib, Version)
	}
	return nil
}

// options renders cfg for Cluster.Options.
func (cfg config) options() map[string]string {
	return map[string]string{
		OptRF:                  strconv.Itoa(cfg.rf),
		OptKeyspace:            cfg.keyspace,
		OptHeap:                strconv.Itoa(cfg.heapMB) + "m",
		OptJava:                cfg.java,
		OptLib:                 cfg.lib,
		OptNumTokens:           strconv.Itoa(cfg.numTokens),
		OptCommitlogSync:       cfg.commitlogSync,
		OptCommitlogSyncPeriod: strconv.Itoa(cfg.syncPeriodMS),
		OptWriteTimeout:        strconv.Itoa(cfg.writeTimeoutMS),
		OptReadTimeout:         strconv.Itoa(cfg.readTimeoutMS),
	}
}
