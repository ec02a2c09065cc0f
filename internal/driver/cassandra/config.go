package cassandra

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/properties"
)

// Properties the driver reads. Every key starting with "cassandra." is
// declared; a cassandra.* key that this driver does not know and nobody
// declared (the launcher's option keys are) is an error naming the key.
const (
	// PropHosts is a comma-separated list of host:port (required; set by
	// faultbench for a cluster it started). All must use the same port:
	// gocql reaches every node it discovers on that one port.
	PropHosts = "cassandra.hosts"
	// PropKeyspace is the keyspace (default ycsb). It must exist; the
	// launcher creates it.
	PropKeyspace = "cassandra.keyspace"
	// PropConsistency sets both the read and the write consistency level.
	PropConsistency = "cassandra.consistency"
	// PropReadConsistency is the consistency level of reads and scans
	// (default ONE, as in YCSB; ANY is not allowed for reads).
	PropReadConsistency = "cassandra.readconsistency"
	// PropWriteConsistency is the consistency level of inserts, updates
	// and deletes (default ONE, as in YCSB).
	PropWriteConsistency = "cassandra.writeconsistency"
	// PropTimeout is the client's timeout of one request (default 12s, above
	// the servers' own 2 s write and 5 s read timeouts so that their
	// WriteTimeout and ReadTimeout answers arrive; a bare number is
	// milliseconds). The operation's context deadline applies too.
	PropTimeout = "cassandra.timeout"
	// PropConnectTimeout bounds one connection attempt (default 5s).
	PropConnectTimeout = "cassandra.connecttimeout"
	// PropNumConns is the number of connections per node (default 2).
	PropNumConns = "cassandra.numconns"
	// PropCreateTable creates the table (y_id text key, one blob column per
	// field) when it is missing, and adds missing field columns (default
	// true).
	PropCreateTable = "cassandra.createtable"
	// PropTokenAware routes each request to a replica of its key (default
	// true, as the DataStax driver YCSB uses); false round-robins over
	// nodes, so that most requests go through a coordinator that is not a
	// replica.
	PropTokenAware = "cassandra.tokenaware"
)

// PropertyNames returns the driver's property keys, sorted.
func PropertyNames() []string {
	k := []string{PropHosts, PropKeyspace, PropConsistency, PropReadConsistency, PropWriteConsistency,
		PropTimeout, PropConnectTimeout, PropNumConns, PropCreateTable, PropTokenAware}
	sort.Strings(k)
	return k
}

// config is the validated driver configuration.
type config struct {
	hosts          []string // host parts
	port           int
	keyspace       string
	table          string
	fields         []string // field columns: fieldnameprefix + 0..fieldcount-1, and extra
	readCL         gocql.Consistency
	writeCL        gocql.Consistency
	timeout        time.Duration
	connectTimeout time.Duration
	numConns       int
	createTable    bool
	tokenAware     bool
}

var identRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// parseConsistency reads a consistency level name (case-insensitive).
func parseConsistency(p *properties.Properties, key, v string, read bool) (gocql.Consistency, error) {
	c, err := gocql.ParseConsistencyWrapper(strings.ToUpper(strings.TrimSpace(v)))
	if err != nil {
		return 0, p.Error(key, "%q is not a consistency level (ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, LOCAL_ONE)", v)
	}
	if read && c == gocql.Any {
		return 0, p.Error(key, "ANY applies to writes only; reads need at least ONE")
	}
	return c, nil
}

// parseConfig reads and validates the driver's properties. extra names
// columns the table needs besides the workload's fields (the lost-write
// check's tag field).
func parseConfig(p *properties.Properties, extra ...string) (config, error) {
	p.DeclarePrefix("cassandra.")
	known := map[string]bool{}
	for _, k := range PropertyNames() {
		known[k] = true
	}
	var unknown []string
	for _, k := range p.Keys() {
		// the launcher's option keys are declared by whoever set them
		// (properties.Declare); they are not the driver's to reject
		if strings.HasPrefix(k, "cassandra.") && !known[k] && !p.DeclaredExactly(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return config{}, p.Error(unknown[0], "unknown cassandra property (the cassandra driver knows %s; launcher options go to `cluster up -o` or a scenario's target.options)",
			strings.Join(PropertyNames(), ", "))
	}

	var c config
	raw := strings.TrimSpace(p.String(PropHosts, ""))
	if raw == "" {
		return config{}, fmt.Errorf("property %s is not set: start a cluster with `faultbench cluster up cassandra`, or set -p %s=host:port[,host:port...]", PropHosts, PropHosts)
	}
	for a := range strings.SplitSeq(raw, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		h, ps, err := net.SplitHostPort(a)
		if err != nil || h == "" {
			return config{}, p.Error(PropHosts, "%q is not host:port", a)
		}
		port, err := strconv.Atoi(ps)
		if err != nil || port < 1 || port > 65535 {
			return config{}, p.Error(PropHosts, "%q: port must be 1-65535", a)
		}
		if c.port != 0 && port != c.port {
			return config{}, p.Error(PropHosts, "%q: every node must use the same native port (%d before): gocql reaches every node on one port", a, c.port)
		}
		c.port = port
		c.hosts = append(c.hosts, h)
	}
	if len(c.hosts) == 0 {
		return config{}, p.Error(PropHosts, "no address given")
	}

	c.keyspace = strings.TrimSpace(p.String(PropKeyspace, "ycsb"))
	if !identRE.MatchString(c.keyspace) {
		return config{}, p.Error(PropKeyspace, "%q is not a keyspace name (letters, digits and _, starting with a letter)", c.keyspace)
	}
	c.table = strings.TrimSpace(p.String("table", "usertable"))
	if !identRE.MatchString(c.table) {
		return config{}, p.Error("table", "%q is not a Cassandra table name (letters, digits and _, starting with a letter)", c.table)
	}
	fc, err := p.Int("fieldcount", 10)
	if err != nil {
		return config{}, err
	}
	if fc < 0 || fc > 1000 {
		return config{}, p.Error("fieldcount", "must be between 0 and 1000 for the cassandra driver (one column per field)")
	}
	prefix := p.String("fieldnameprefix", "field")
	for i := range int(fc) {
		c.fields = append(c.fields, prefix+strconv.Itoa(i))
	}
	c.fields = append(c.fields, extra...)
	for _, f := range c.fields {
		if !identRE.MatchString(f) || strings.EqualFold(f, keyColumn) {
			return config{}, p.Error("fieldnameprefix", "field %q is not a usable Cassandra column name", f)
		}
	}

	def := "ONE"
	if p.Has(PropConsistency) {
		def = p.String(PropConsistency, def)
		if _, err := parseConsistency(p, PropConsistency, def, false); err != nil {
			return config{}, err
		}
	}
	if c.readCL, err = parseConsistency(p, PropReadConsistency, p.String(PropReadConsistency, def), true); err != nil {
		if !p.Has(PropReadConsistency) {
			return config{}, p.Error(PropConsistency, "%s for reads: ANY applies to writes only; set %s as well", def, PropReadConsistency)
		}
		return config{}, err
	}
	if c.writeCL, err = parseConsistency(p, PropWriteConsistency, p.String(PropWriteConsistency, def), false); err != nil {
		return config{}, err
	}

	if c.timeout, err = p.Duration(PropTimeout, 12*time.Second, time.Millisecond); err != nil {
		return config{}, err
	}
	if c.timeout <= 0 || c.timeout > time.Hour {
		return config{}, p.Error(PropTimeout, "must be positive and at most 1h")
	}
	if c.connectTimeout, err = p.Duration(PropConnectTimeout, 5*time.Second, time.Millisecond); err != nil {
		return config{}, err
	}
	if c.connectTimeout <= 0 || c.connectTimeout > time.Hour {
		return config{}, p.Error(PropConnectTimeout, "must be positive and at most 1h")
	}
	n, err := p.Int(PropNumConns, 2)
	if err != nil {
		return config{}, err
	}
	if n < 1 || n > 64 {
		return config{}, p.Error(PropNumConns, "must be between 1 and 64 connections per node")
	}
	c.numConns = int(n)
	if c.createTable, err = p.Bool(PropCreateTable, true); err != nil {
		return config{}, err
	}
	if c.tokenAware, err = p.Bool(PropTokenAware, true); err != nil {
		return config{}, err
	}
	return c, nil
}
