package hbase

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

// Version is the HBase release faultbench runs: the version of
// org.apache.hbase:hbase-server (its -hadoop3 artifact) and hbase-thrift
// that scripts/setup.sh resolves from Maven Central (keep both equal).
const Version = "2.6.1"

// HadoopVersion is the Hadoop (HDFS) release of the jars scripts/setup.sh
// resolves beside HBase: the one HBase 2.6.1's -hadoop3 artifacts are
// built against.
const HadoopVersion = "3.3.5"

// Option keys understood in launcher.Spec.Options (the "hbase." prefix may
// be omitted). Cluster.Options records every option with its resolved
// value (env.json shows them). They are documented in docs/targets.md.
const (
	// OptTable is the table the launcher creates (default usertable, YCSB's).
	OptTable = "hbase.table"
	// OptFamily is its one column family (default family, YCSB's HBase
	// binding's usual columnfamily=family).
	OptFamily = "hbase.family"
	// OptRegions is the number of regions the table is pre-split into
	// (default 4 per region server), split on YCSB's key space.
	OptRegions = "hbase.regions"
	// OptHeap is each region server's maximum Java heap (default 384m).
	OptHeap = "hbase.heap"
	// OptServiceHeap is the heap of every other process: ZooKeeper, the
	// NameNode, the DataNodes, the HMaster and the Thrift gateway
	// (default 160m).
	OptServiceHeap = "hbase.service-heap"
	// OptReplication is dfs.replication, the HDFS replicas of every block
	// (HFiles and write-ahead logs; default min(3, nodes)).
	OptReplication = "hbase.dfs-replication"
	// OptSessionTimeout is zookeeper.session.timeout in milliseconds
	// (default 10000): how long after a region server stops heartbeating
	// its ZooKeeper session expires and the master reassigns its regions.
	OptSessionTimeout = "hbase.zk-session-timeout"
	// OptClientRetries is hbase.client.retries.number of the Thrift
	// gateway's HBase client (default 15, HBase's default).
	OptClientRetries = "hbase.client-retries"
	// OptClientPause is hbase.client.pause in milliseconds (default 100,
	// HBase's): the base of the client's back-off between retries.
	OptClientPause = "hbase.client-pause"
	// OptOperationTimeout is hbase.client.operation.timeout in
	// milliseconds (default 30000; HBase's 1200000 would hold an operation
	// for 20 minutes): the bound on one operation with all its retries.
	OptOperationTimeout = "hbase.client-operation-timeout"
	// OptRPCTimeout is hbase.rpc.timeout in milliseconds (default 10000;
	// HBase's is 60000): the bound on one RPC of an operation.
	OptRPCTimeout = "hbase.rpc-timeout"
	// OptJava is the java executable (default: java on PATH, 11 to 17).
	OptJava = "hbase.java"
	// OptLib is the directory holding the jars (default: the cache
	// directory scripts/setup.sh --only hbase fills).
	OptLib = "hbase.lib"
)

// OptionNames returns every option key the launcher understands, sorted.
func OptionNames() []string {
	k := []string{OptTable, OptFamily, OptRegions, OptHeap, OptServiceHeap, OptReplication, OptSessionTimeout,
		OptClientRetries, OptClientPause, OptOperationTimeout, OptRPCTimeout, OptJava, OptLib}
	sort.Strings(k)
	return k
}

// config is the resolved Spec.Options.
type config struct {
	table, family    string
	regions          int // 0: 4 per region server
	heapMB           int
	serviceHeapMB    int
	replication      int // 0: min(3, nodes)
	sessionTimeoutMS int
	retries          int
	pauseMS          int
	opTimeoutMS      int
	rpcTimeoutMS     int
	java, lib        string
}

func defaultConfig() config {
	return config{table: "usertable", family: "family", heapMB: 384, serviceHeapMB: 160,
		sessionTimeoutMS: 10000, retries: 15, pauseMS: 100, opTimeoutMS: 30000, rpcTimeoutMS: 10000}
}

var identRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`)

// parseOptions validates opts (keys with or without the "hbase." prefix)
// and fills in defaults; it does not look at the file system.
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
		if !strings.HasPrefix(key, "hbase.") {
			key = "hbase." + key
		}
		var err error
		switch key {
		case OptTable, OptFamily:
			s := strings.TrimSpace(v)
			if !identRE.MatchString(s) {
				err = fmt.Errorf("option %s=%q: want a name of letters, digits, _ . - (at most 64)", k, v)
			}
			if key == OptTable {
				cfg.table = s
			} else {
				cfg.family = s
			}
		case OptRegions:
			cfg.regions, err = intIn(k, v, 1, 1000, "a number of regions")
		case OptHeap:
			cfg.heapMB, err = parseHeap(k, v, 128)
		case OptServiceHeap:
			cfg.serviceHeapMB, err = parseHeap(k, v, 64)
		case OptReplication:
			cfg.replication, err = intIn(k, v, 1, 16, "a number of replicas")
		case OptSessionTimeout:
			cfg.sessionTimeoutMS, err = intIn(k, v, 2000, 600_000, "milliseconds")
		case OptClientRetries:
			cfg.retries, err = intIn(k, v, 0, 100, "a number of retries")
		case OptClientPause:
			cfg.pauseMS, err = intIn(k, v, 1, 60_000, "milliseconds")
		case OptOperationTimeout:
			cfg.opTimeoutMS, err = intIn(k, v, 100, 3_600_000, "milliseconds")
		case OptRPCTimeout:
			cfg.rpcTimeoutMS, err = intIn(k, v, 100, 3_600_000, "milliseconds")
		case OptJava:
			cfg.java = strings.TrimSpace(v)
		case OptLib:
			cfg.lib = strings.TrimSpace(v)
		default:
			err = fmt.Errorf("unknown option %q (the hbase launcher knows: %s)", k, strings.Join(OptionNames(), ", "))
		}
		if err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// parseHeap reads a heap size: a number with suffix m or g (or M, G, MB,
// GB, MiB, GiB); a bare number is megabytes. minMB to 32 GB.
func parseHeap(k, v string, minMB int) (int, error) {
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
	if err != nil || n*mult < minMB || n*mult > 32*1024 {
		return 0, fmt.Errorf("option %s=%q: want a heap size between %dm and 32g (e.g. 384m, 1g)", k, v, minMB)
	}
	return n * mult, nil
}

// resolve fills in the defaults that depend on the number of region
// servers and checks that they fit.
func (cfg *config) resolve(nodes int) error {
	if cfg.replication == 0 {
		cfg.replication = min(3, nodes)
	}
	if cfg.replication > nodes {
		return fmt.Errorf("option %s=%d: more replicas than DataNodes (%d)", OptReplication, cfg.replication, nodes)
	}
	if cfg.regions == 0 {
		cfg.regions = 4 * nodes
	}
	return nil
}

// DefaultLibDir is where scripts/setup.sh --only hbase puts the jars:
// $XDG_CACHE_HOME/faultbench/hbase-VERSION/lib, else
// ~/.cache/faultbench/hbase-VERSION/lib.
func DefaultLibDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the user's cache dir: %w", err)
	}
	return filepath.Join(d, "faultbench", "hbase-"+Version, "lib"), nil
}

// resolvePaths finds java and the jar directory, checking both exist.
func (cfg *config) resolvePaths() error {
	if cfg.java == "" {
		p, err := exec.LookPath("java")
		if err != nil {
			return errors.New("java not found on PATH: install Java 17 (apt-get install openjdk-17-jre-headless), or set option " + OptJava)
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
	for _, jar := range []string{"hbase-server-" + Version + "-hadoop3.jar", "hbase-thrift-" + Version + ".jar", "hadoop-hdfs-" + HadoopVersion + ".jar"} {
		if _, err := os.Stat(filepath.Join(cfg.lib, jar)); err != nil {
			return fmt.Errorf("hbase %s is not installed (%s missing in %s): run scripts/setup.sh --only hbase, or set option %s", Version, jar, cfg.lib, OptLib)
		}
	}
	return nil
}

// options renders cfg for Cluster.Options.
func (cfg config) options() map[string]string {
	return map[string]string{
		OptTable:            cfg.table,
		OptFamily:           cfg.family,
		OptRegions:          strconv.Itoa(cfg.regions),
		OptHeap:             strconv.Itoa(cfg.heapMB) + "m",
		OptServiceHeap:      strconv.Itoa(cfg.serviceHeapMB) + "m",
		OptReplication:      strconv.Itoa(cfg.replication),
		OptSessionTimeout:   strconv.Itoa(cfg.sessionTimeoutMS),
		OptClientRetries:    strconv.Itoa(cfg.retries),
		OptClientPause:      strconv.Itoa(cfg.pauseMS),
		OptOperationTimeout: strconv.Itoa(cfg.opTimeoutMS),
		OptRPCTimeout:       strconv.Itoa(cfg.rpcTimeoutMS),
		OptJava:             cfg.java,
		OptLib:              cfg.lib,
	}
}

// CheckOptions checks option values as Up would read them, without
// starting anything (launcher.OptionChecker).
func (Launcher) CheckOptions(opts map[string]string) error {
	_, err := parseOptions(opts)
	return err
}

// CheckDiskLayer implements launcher.DiskLayered: every process's data
// directory (ZooKeeper's snapshots and log, the NameNode's image and edits,
// each DataNode's blocks, the region servers' and master's local files) goes
// on the disk layer, with any options; configuration and logs stay off it.
// The DataNodes' blocks are where HBase's HFiles and write-ahead logs live,
// so a power loss of a node drops what its DataNode had not synced.
func (Launcher) CheckDiskLayer(map[string]string) error { return nil }
