package cassandra

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// nodePlan is where one node lives: its address, ports and files.
type nodePlan struct {
	name        string
	host        string
	nativePort  int // CQL native protocol (every node of a cluster uses the same)
	storagePort int // internode messaging (the same on every node)
	dir         string
	dbDir       string // data, commitlog, hints, saved_caches, cdc_raw: removed on down
	confDir     string
	logFile     string
	jmxPort     int // local JMX on 127.0.0.1 for nodetool (decommission, stream throttle); 0: off
	// wrap runs the JVM inside the node's network namespace (the
	// netns-exec prefix of launcher.ArgvWrapper); nil on 127.0.0.x.
	wrap []string
}

func (p *nodePlan) addr() string     { return net.JoinHostPort(p.host, strconv.Itoa(p.nativePort)) }
func (p *nodePlan) peerAddr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.storagePort)) }
func (p *nodePlan) yamlPath() string { return filepath.Join(p.confDir, "cassandra.yaml") }

// jvmModuleFlags open the JDK internals Cassandra reaches into on Java 17,
// as Cassandra's own conf/jvm17-server.options does (written out here
// because faultbench runs the jars from Maven Central, which come without
// conf/).
var jvmModuleFlags = []string{
	"-Djdk.attach.allowAttachSelf=true",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
	"--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
}

// jvmFlags are the garbage collector, Netty and start-up settings, after
// Cassandra's jvm-server.options and jvm17-server.options, sized for small
// heaps on a shared machine.
var jvmFlags = []string{
	"-Xss256k",
	"-XX:+UseG1GC",
	"-XX:+ParallelRefProcEnabled",
	"-XX:MaxTenuringThreshold=1",
	"-XX:G1RSetUpdatingPauseTimePercent=5",
	"-XX:MaxGCPauseMillis=300",
	"-XX:+PerfDisableSharedMem",
	"-XX:+ExitOnOutOfMemoryError",
	"-XX:ReservedCodeCacheSize=96m",
	"-XX:CICompilerCount=2",
	"-XX:ParallelGCThreads=2",
	"-XX:ConcGCThreads=1",
	"-Djava.net.preferIPv4Stack=true",
	"-Dio.netty.tryReflectionSetAccessible=true",
	"-Dio.netty.allocator.useCacheForAllThreads=true",
	"-Dio.netty.allocator.maxOrder=11",
	"-Dcassandra-foreground=yes",
	// a test cluster on one machine: no waiting for gossip to settle, and
	// a ring delay of 5 s instead of 30. It bounds a node's first gossip
	// round (the shadow round) and how long a joining node waits for ring
	// information before it picks its tokens and the ranges it streams, and
	// every bootstrap and decommission sleeps it once. At 1 s, nodes that a
	// JVM pause of 20+ s kept from gossiping on a machine at load 30-60
	// failed to start ("Unable to gossip with any peers") or, joining
	// together, picked tokens before they knew the ring and streamed
	// nothing (CS-5 in docs/results/elasticity-cassandra.md); the gossip
	// there arrived 2.9-3.6 s into the wait. Cost: 4 s more per join.
	"-Dcassandra.skip_wait_for_gossip_to_settle=0",
	"-Dcassandra.ring_delay_ms=" + strconv.Itoa(ringDelayMS),
	"-Dcassandra.superuser_setup_delay_ms=0",
}

// ringDelayMS is the nodes' cassandra.ring_delay_ms (see jvmFlags).
const ringDelayMS = 5000

// mainClass is Cassandra's daemon.
const mainClass = "org.apache.cassandra.service.CassandraDaemon"

// argv is the command line of a node; it is recorded in Node.Argv and
// reused verbatim by StartNode. JMX listens on 127.0.0.1 only (see
// jmxArgs), for the nodetool commands of scaling; everything else goes
// through the native protocol. In a cluster network the JVM runs in the
// node's namespace (p.wrap first).
func (p *nodePlan) argv(cfg config) []string {
	a := append([]string(nil), p.wrap...)
	a = append(a,
		cfg.java,
		"-Xms"+strconv.Itoa(cfg.heapMB/2)+"m",
		"-Xmx"+strconv.Itoa(cfg.heapMB)+"m",
		"-XX:MaxDirectMemorySize="+strconv.Itoa(cfg.heapMB)+"m",
	)
	a = append(a, jvmFlags...)
	a = append(a, jvmModuleFlags...)
	a = append(a,
		"-javaagent:"+filepath.Join(cfg.lib, jammJar(cfg.lib)),
		"-Dcassandra.config=file://"+p.yamlPath(),
		"-Dlogback.configurationFile=file://"+filepath.Join(p.confDir, "logback.xml"),
		"-Dcassandra.logdir="+p.dir,
		"-Dcassandra.storagedir="+p.dbDir,
		"-Dcassandra.triggers_dir="+filepath.Join(p.confDir, "triggers"),
		"-Dfaultbench.node="+p.name,
	)
	a = append(a, p.jmxArgs()...)
	a = append(a,
		"-cp", filepath.Join(cfg.lib, "*"),
		mainClass,
	)
	return a
}

// jammJar names the jamm agent jar in lib (jamm-0.4.0.jar for 5.0.x).
func jammJar(lib string) string {
	m, _ := filepath.Glob(filepath.Join(lib, "jamm-*.jar"))
	if len(m) > 0 {
		return filepath.Base(m[0])
	}
	return "jamm-0.4.0.jar"
}

// yamlConfig renders cassandra.yaml for p. seeds are storage addresses
// (host:port). Settings not written keep Cassandra's defaults.
func (p *nodePlan) yamlConfig(cfg config, seeds []string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	q := strconv.Quote
	w("# written by faultbench for node %s; see docs/targets-cassandra.md", p.name)
	w("cluster_name: faultbench")
	w("num_tokens: %d", cfg.numTokens)
	w("allocate_tokens_for_local_replication_factor: %d", cfg.rf)
	w("partitioner: org.apache.cassandra.dht.Murmur3Partitioner")
	w("endpoint_snitch: SimpleSnitch")
	w("data_file_directories:")
	w("  - %s", q(filepath.Join(p.dbDir, "data")))
	w("commitlog_directory: %s", q(filepath.Join(p.dbDir, "commitlog")))
	w("hints_directory: %s", q(filepath.Join(p.dbDir, "hints")))
	w("saved_caches_directory: %s", q(filepath.Join(p.dbDir, "saved_caches")))
	w("cdc_raw_directory: %s", q(filepath.Join(p.dbDir, "cdc_raw")))
	w("commitlog_sync: %s", cfg.commitlogSync)
	if cfg.commitlogSync == "periodic" {
		w("commitlog_sync_period: %dms", cfg.syncPeriodMS)
	}
	w("seed_provider:")
	w("  - class_name: org.apache.cassandra.locator.SimpleSeedProvider")
	w("    parameters:")
	w("      - seeds: %s", q(strings.Join(seeds, ",")))
	w("listen_address: %s", p.host)
	w("rpc_address: %s", p.host)
	w("storage_port: %d", p.storagePort)
	w("native_transport_port: %d", p.nativePort)
	w("start_native_transport: true")
	w("auto_snapshot: false")
	w("snapshot_before_compaction: false")
	w("concurrent_reads: 8")
	w("concurrent_writes: 8")
	w("concurrent_counter_writes: 4")
	w("concurrent_materialized_view_writes: 4")
	w("concurrent_compactors: 1")
	w("memtable_flush_writers: 1")
	w("file_cache_size: 32MiB")
	w("key_cache_size: 16MiB")
	w("write_request_timeout: %dms", cfg.writeTimeoutMS)
	w("counter_write_request_timeout: %dms", cfg.writeTimeoutMS)
	w("read_request_timeout: %dms", cfg.readTimeoutMS)
	w("range_request_timeout: %dms", 2*cfg.readTimeoutMS)
	// every stream goes through stream_throughput_outbound (the scaling
	// scenarios' throttle), as in the Cassandra versions the elasticity
	// study measured: no zero-copy entire-SSTable streaming
	w("stream_entire_sstables: false")
	w("hinted_handoff_enabled: true")
	w("max_hint_window: 3h")
	return b.String()
}

// logbackXML sends Cassandra's log (INFO and above) to standard output,
// which the launcher appends to the node's log file.
const logbackXML = `<configuration scan="false">
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0} %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
`

// writeConfig creates p's directories and writes its cassandra.yaml and
// logback.xml.
func (p *nodePlan) writeConfig(cfg config, seeds []string) error {
	for _, d := range []string{p.confDir, filepath.Join(p.confDir, "triggers"), p.dbDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	if err := os.WriteFile(p.yamlPath(), []byte(p.yamlConfig(cfg, seeds)), 0o644); err != nil {
		return fmt.Errorf("%s: writing cassandra.yaml: %w", p.name, err)
	}
	if err := os.WriteFile(filepath.Join(p.confDir, "logback.xml"), []byte(logbackXML), 0o644); err != nil {
		return fmt.Errorf("%s: writing logback.xml: %w", p.name, err)
	}
	return nil
}
