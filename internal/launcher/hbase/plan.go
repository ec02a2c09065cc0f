package hbase

import (
	"fmt"
	"html"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
)

// The kinds of process a cluster runs.
const (
	procZK     = "zookeeper"
	procNN     = "namenode"
	procDN     = "datanode"
	procMaster = "master"
	procRS     = "regionserver"
	procThrift = "thrift"
)

// Names of the service processes (one each) and the suffix of a node's
// DataNode: node nK is the region server nK and the DataNode nK-dn.
const (
	ZKNode     = "zk"
	NNNode     = "nn"
	MasterNode = "master"
	ThriftNode = "thrift"
	DNSuffix   = "-dn"
)

// mainClasses are the JVM entry points of each kind of process.
var mainClasses = map[string][]string{
	procZK:     {"org.apache.zookeeper.server.ZooKeeperServerMain"},
	procNN:     {"org.apache.hadoop.hdfs.server.namenode.NameNode"},
	procDN:     {"org.apache.hadoop.hdfs.server.datanode.DataNode"},
	procMaster: {"org.apache.hadoop.hbase.master.HMaster", "start"},
	procRS:     {"org.apache.hadoop.hbase.regionserver.HRegionServer", "start"},
}

// proc is where one process lives: its addresses and files.
type proc struct {
	name, kind string
	idx        int // host index (env.Addrs.Host)
	host       string
	port       int // the client port: ZooKeeper's, NameNode and master RPC, DataNode transfer, region server RPC, Thrift
	httpPort   int // the HTTP (JMX) port: NameNode, DataNode, master and region server; 0 for none
	ipcPort    int // the DataNode's IPC port
	dir        string
	dataDir    string
	confDir    string
	logFile    string
	wrap       []string
}

func (p *proc) addr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }
func (p *proc) httpAddr() string {
	if p.httpPort == 0 {
		return ""
	}
	return net.JoinHostPort(p.host, strconv.Itoa(p.httpPort))
}

// host returns host index i's address: env.Addrs decides, except that the
// loopback addresser's single 127.0.0.1 is spread over 127.0.0.1, .2, ...
// so that every node (region server and DataNode) has an address of its
// own and a machine of its own (launcher.Cluster.Machines).
func host(env *launcher.Env, i int) string {
	h := env.Addrs.Host(i)
	if h == "127.0.0.1" && i < 254 {
		return "127.0.0." + strconv.Itoa(i+1)
	}
	return h
}

// plan lays out the processes of a cluster of n nodes under dir: the
// services zk, nn, master and thrift on host indexes 0-3, node K's
// DataNode nK-dn and region server nK on host index 3+K (one machine).
// The DataNode comes first so that the machine is named after the region
// server (launcher.Cluster.HostNames).
func plan(env *launcher.Env, dir string, n int) ([]*proc, error) {
	var ps []*proc
	add := func(name, kind string, idx int) {
		ps = append(ps, &proc{name: name, kind: kind, idx: idx})
	}
	add(ZKNode, procZK, 0)
	add(NNNode, procNN, 1)
	add(MasterNode, procMaster, 2)
	add(ThriftNode, procThrift, 3)
	for k := 1; k <= n; k++ {
		add("n"+strconv.Itoa(k)+DNSuffix, procDN, 3+k)
		add("n"+strconv.Itoa(k), procRS, 3+k)
	}
	for _, p := range ps {
		p.host = host(env, p.idx)
		port := func() (int, error) { return env.Addrs.Port(p.host) }
		var err error
		if p.port, err = port(); err != nil {
			return nil, err
		}
		switch p.kind {
		case procNN, procDN, procMaster, procRS:
			if p.httpPort, err = port(); err != nil {
				return nil, err
			}
		}
		if p.kind == procDN {
			if p.ipcPort, err = port(); err != nil {
				return nil, err
			}
		}
		p.dir = filepath.Join(dir, p.name)
		p.dataDir = filepath.Join(p.dir, "data")
		p.confDir = filepath.Join(p.dir, "conf")
		p.logFile = filepath.Join(p.dir, "node.log")
		p.wrap, _ = launcher.SplitWrapper(env.NodeArgv(p.idx, []string{"java"}))
	}
	return ps, nil
}

// dataDirs lists every process's data directory relative to the cluster
// directory, for launcher.ClusterDir.
func dataDirs(n int) []string {
	out := []string{filepath.Join(ZKNode, "data"), filepath.Join(NNNode, "data"), filepath.Join(MasterNode, "data"), filepath.Join(ThriftNode, "data")}
	for k := 1; k <= n; k++ {
		out = append(out, filepath.Join("n"+strconv.Itoa(k)+DNSuffix, "data"), filepath.Join("n"+strconv.Itoa(k), "data"))
	}
	return out
}

// jvmFlags are every JVM's flags after the heap: HBase's own bin/hbase
// opens these JDK internals on Java 11 and later (written out here because
// the jars from Maven Central come without bin/).
var jvmFlags = []string{
	"-XX:+UseSerialGC",
	"-Xss512k",
	"-Djava.net.preferIPv4Stack=true",
	"-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
	"--add-modules", "jdk.unsupported",
	"--add-opens", "java.base/java.nio=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
	"--add-exports", "java.base/sun.net.dns=ALL-UNNAMED",
	"--add-exports", "java.base/sun.net.util=ALL-UNNAMED",
}

// argv is p's command line, recorded in Node.Argv and reused verbatim to
// restart it. The configuration directory comes first on the class path:
// Hadoop and HBase read core-site.xml, hdfs-site.xml and hbase-site.xml
// from there.
func (p *proc) argv(cfg config) []string {
	heap := cfg.serviceHeapMB
	if p.kind == procRS {
		heap = cfg.heapMB
	}
	a := append([]string(nil), p.wrap...)
	a = append(a, cfg.java, "-Xms"+strconv.Itoa(heap/2)+"m", "-Xmx"+strconv.Itoa(heap)+"m")
	if p.kind == procRS {
		a = append(a, "-XX:MaxDirectMemorySize="+strconv.Itoa(heap)+"m")
	}
	a = append(a, jvmFlags...)
	a = append(a,
		"-Dlog4j.configuration=file:"+filepath.Join(p.confDir, "log4j.properties"),
		"-Dhadoop.log.dir="+p.dir,
		"-Dhbase.log.dir="+p.dir,
		"-Dzookeeper.log.dir="+p.dir,
		"-Dfaultbench.node="+p.name,
		"-cp", p.confDir+string(os.PathListSeparator)+filepath.Join(cfg.lib, "*"),
	)
	switch p.kind {
	case procZK:
		a = append(a, mainClasses[procZK][0], filepath.Join(p.confDir, "zoo.cfg"))
	case procThrift:
		// the Thrift2 gateway: a thread pool of blocking connections,
		// binary protocol, unframed (its defaults)
		a = append(a, "org.apache.hadoop.hbase.thrift2.ThriftServer", "-b", p.host, "-p", strconv.Itoa(p.port), "start")
	default:
		a = append(a, mainClasses[p.kind]...)
	}
	return a
}

// formatArgv is the one-shot command that formats the NameNode's storage.
func (p *proc) formatArgv(cfg config) []string {
	a := p.argv(cfg)
	return append(a[:len(a)-len(mainClasses[procNN])], mainClasses[procNN][0], "-format", "-force", "-nonInteractive")
}

// siteXML renders a Hadoop configuration file.
func siteXML(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- written by faultbench; see docs/targets.md -->\n<configuration>\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", html.EscapeString(k), html.EscapeString(props[k]))
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

// log4jProperties sends every process's log (INFO and above) to standard
// output, which the launcher appends to its log file.
const log4jProperties = `log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.metrics2=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop.hbase.zookeeper=WARN
`

// cluster is the services every process's configuration points at.
type services struct {
	zk, nn *proc
	nodes  int
}

// coreSite is core-site.xml: HDFS is the default file system.
func (p *proc) coreSite(s services) map[string]string {
	return map[string]string{
		"fs.defaultFS":   "hdfs://" + s.nn.addr(),
		"hadoop.tmp.dir": filepath.Join(p.dir, "tmp"),
	}
}

// hdfsSite is hdfs-site.xml. Clients and DataNodes reach DataNodes by the
// address each DataNode names itself with (dfs.datanode.hostname: its own
// 127.0.0.x), not by the address its connection to the NameNode came from.
// Heartbeats every second and a recheck every 5 s declare a DataNode stale
// after 5 s (reads and writes avoid it) and dead after 20 s (its blocks
// re-replicated), instead of HDFS's 30 s and 10.5 minutes. A write pipeline
// that loses a DataNode goes on with the rest when no spare is left
// (best-effort), as a three-node cluster must.
func (p *proc) hdfsSite(s services, cfg config) map[string]string {
	m := map[string]string{
		"dfs.replication":                                                strconv.Itoa(cfg.replication),
		"dfs.namenode.rpc-address":                                       s.nn.addr(),
		"dfs.namenode.http-address":                                      s.nn.httpAddr(),
		"dfs.permissions.enabled":                                        "false",
		"dfs.namenode.safemode.extension":                                "0",
		"dfs.heartbeat.interval":                                         "1",
		"dfs.namenode.heartbeat.recheck-interval":                        "5000",
		"dfs.namenode.stale.datanode.interval":                           "5000",
		"dfs.namenode.avoid.read.stale.datanode":                         "true",
		"dfs.namenode.avoid.write.stale.datanode":                        "true",
		"dfs.client.use.datanode.hostname":                               "true",
		"dfs.datanode.use.datanode.hostname":                             "true",
		"dfs.namenode.datanode.registration.ip-hostname-check":           "false",
		"dfs.client.block.write.replace-datanode-on-failure.best-effort": "true",
		"dfs.datanode.synconclose":                                       "true",
		"dfs.namenode.handler.count":                                     "10",
		"dfs.datanode.handler.count":                                     "5",
		"dfs.namenode.name.dir":                                          filepath.Join(s.nn.dataDir, "name"),
	}
	if p.kind == procDN {
		m["dfs.datanode.address"] = p.addr()
		m["dfs.datanode.http.address"] = p.httpAddr()
		m["dfs.datanode.ipc.address"] = net.JoinHostPort(p.host, strconv.Itoa(p.ipcPort))
		m["dfs.datanode.hostname"] = p.host
		m["dfs.datanode.data.dir"] = filepath.Join(p.dataDir, "blocks")
	}
	return m
}

// hbaseSite is hbase-site.xml. The write-ahead log is the classic
// FSHLog on HDFS (hflush before a write is acknowledged). The Thrift
// gateway's HBase client takes the retry, pause and timeout options.
func (p *proc) hbaseSite(s services, cfg config, master *proc) map[string]string {
	m := map[string]string{
		"hbase.cluster.distributed":                     "true",
		"hbase.rootdir":                                 "hdfs://" + s.nn.addr() + "/hbase",
		"hbase.tmp.dir":                                 filepath.Join(p.dir, "tmp"),
		"hbase.zookeeper.quorum":                        s.zk.host,
		"hbase.zookeeper.property.clientPort":           strconv.Itoa(s.zk.port),
		"zookeeper.session.timeout":                     strconv.Itoa(cfg.sessionTimeoutMS),
		"hbase.wal.provider":                            "filesystem",
		"hbase.master.wait.on.regionservers.mintostart": strconv.Itoa(s.nodes),
		"hbase.master.wait.on.regionservers.timeout":    "5000",
		"hbase.regionserver.handler.count":              "16",
		"hbase.regionserver.info.port.auto":             "false",
		"hbase.client.retries.number":                   strconv.Itoa(cfg.retries),
		"hbase.client.pause":                            strconv.Itoa(cfg.pauseMS),
		"hbase.client.operation.timeout":                strconv.Itoa(cfg.opTimeoutMS),
		"hbase.rpc.timeout":                             strconv.Itoa(cfg.rpcTimeoutMS),
		"hbase.thrift.info.port":                        "-1",
		"hbase.regionserver.thrift.server.type":         "threadpool",
		"hbase.master.info.port":                        strconv.Itoa(master.httpPort),
		"hbase.master.info.bindAddress":                 master.host,
		"hbase.master.port":                             strconv.Itoa(master.port),
		"hbase.master.hostname":                         master.host,
		"hbase.master.ipc.address":                      master.host,
	}
	if p.kind == procRS {
		m["hbase.unsafe.regionserver.hostname"] = p.host
		m["hbase.regionserver.ipc.address"] = p.host
		m["hbase.regionserver.port"] = strconv.Itoa(p.port)
		m["hbase.regionserver.info.port"] = strconv.Itoa(p.httpPort)
		m["hbase.regionserver.info.bindAddress"] = p.host
	}
	return m
}

// zooCfg is ZooKeeper's configuration: standalone, a tick of one second
// (sessions of 2 to 20 s).
func (p *proc) zooCfg() string {
	return fmt.Sprintf("# written by faultbench\ntickTime=1000\ndataDir=%s\nclientPort=%d\nclientPortAddress=%s\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,mntr\n",
		p.dataDir, p.port, p.host)
}

// writeConfig creates p's directories and writes its configuration files.
func (p *proc) writeConfig(s services, cfg config, master *proc) error {
	// Hadoop's HTTP servers (the JMX servlet the launcher asks) look for
	// their web applications as class-path directories, which the jars
	// from Maven Central do not carry: empty ones in the configuration
	// directory (first on the class path) serve
	dirs := []string{p.confDir, p.dataDir, filepath.Join(p.dir, "tmp")}
	for _, app := range []string{"hdfs", "datanode", "static"} {
		dirs = append(dirs, filepath.Join(p.confDir, "webapps", app))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	files := map[string]string{
		"log4j.properties": log4jProperties,
		"core-site.xml":    siteXML(p.coreSite(s)),
		"hdfs-site.xml":    siteXML(p.hdfsSite(s, cfg)),
		"hbase-site.xml":   siteXML(p.hbaseSite(s, cfg, master)),
	}
	if p.kind == procZK {
		files["zoo.cfg"] = p.zooCfg()
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(p.confDir, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("%s: writing %s: %w", p.name, name, err)
		}
	}
	return nil
}
