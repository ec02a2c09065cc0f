package sqldb

import (
	"database/sql"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/properties"
)

// Property suffixes; each dialect puts its prefix in front (postgres.hosts,
// galera.hosts).
const (
	propHosts       = "hosts"          // host:port[,host:port...]
	propDB          = "db"             // database name
	propUser        = "user"           // user name
	propPassword    = "password"       // password (empty: none)
	propPoolSize    = "poolsize"       // connections (default threads + 4)
	propConnTimeout = "connecttimeout" // ms per host (default 2000)
	propCreateTable = "createtable"    // create the YCSB table if missing (default true)
)

// PropIsolation is the isolation level of every SQL transaction (BeginSQL)
// in either dialect: read-committed, repeatable-read or serializable; unset,
// the server's default (PostgreSQL: read committed; MariaDB: repeatable
// read). A scenario sets it as target.driver.sqldb.isolation.
const PropIsolation = "sqldb.isolation"

// The isolation levels PropIsolation takes, in the order of their strength.
var isolationLevels = []struct {
	name  string
	level sql.IsolationLevel
}{
	{"read-committed", sql.LevelReadCommitted},
	{"repeatable-read", sql.LevelRepeatableRead},
	{"serializable", sql.LevelSerializable},
}

// Isolation returns the value of PropIsolation in p after checking it: ""
// when unset (the server's default), else one of read-committed,
// repeatable-read, serializable. It declares the key on p.
func Isolation(p *properties.Properties) (string, error) {
	v := strings.TrimSpace(p.String(PropIsolation, ""))
	if v == "" {
		return "", nil
	}
	if _, ok := isolationLevel(v); !ok {
		names := make([]string, len(isolationLevels))
		for i, l := range isolationLevels {
			names[i] = l.name
		}
		return "", p.Error(PropIsolation, "unknown isolation level (want %s; unset: the server's default)", strings.Join(names, ", "))
	}
	return v, nil
}

func isolationLevel(name string) (sql.IsolationLevel, bool) {
	for _, l := range isolationLevels {
		if l.name == name {
			return l.level, true
		}
	}
	return sql.LevelDefault, false
}

// PropertyNames returns the driver property keys of dialect d, sorted
// (sqldb.isolation, shared by both dialects, last).
func (d Dialect) PropertyNames() []string {
	var out []string
	for _, s := range []string{propConnTimeout, propCreateTable, propDB, propHosts, propPassword, propPoolSize, propUser} {
		out = append(out, d.prefix()+s)
	}
	return append(out, PropIsolation)
}

// config is the validated driver configuration.
type config struct {
	hosts       []string
	db, user    string
	password    string
	poolSize    int
	connTimeout time.Duration
	createTable bool
	// isolation is the level of every SQL transaction (PropIsolation);
	// "" the server's default.
	isolation   string
	fieldCount  int
	fieldPrefix string
}

// parseConfig validates the properties of dialect d. Keys under the
// dialect's prefix that the driver does not know are errors, unless the
// caller declared them exactly (the launcher's options, which the run
// warns about instead).
func parseConfig(d Dialect, p *properties.Properties) (config, error) {
	pre := d.prefix()
	p.DeclarePrefix(pre)
	known := map[string]bool{}
	for _, k := range d.PropertyNames() {
		known[k] = true
	}
	var unknown []string
	for _, k := range p.Keys() {
		if strings.HasPrefix(k, pre) && !known[k] && !p.DeclaredExactly(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return config{}, p.Error(unknown[0], "unknown %s property (the driver knows %s; launcher options go to `cluster up -o` or a scenario's target.options)",
			d.name(), strings.Join(d.PropertyNames(), ", "))
	}
	var c config
	raw := strings.TrimSpace(p.String(pre+propHosts, ""))
	if raw == "" {
		return config{}, fmt.Errorf("property %s%s is not set: start a cluster with `faultbench cluster up %s`, or set -p %s%s=host:port[,host:port...]",
			pre, propHosts, d.kind(), pre, propHosts)
	}
	for a := range strings.SplitSeq(raw, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return config{}, p.Error(pre+propHosts, "%q is not host:port", a)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return config{}, p.Error(pre+propHosts, "%q: port must be 1-65535", a)
		}
		c.hosts = append(c.hosts, a)
	}
	if len(c.hosts) == 0 {
		return config{}, p.Error(pre+propHosts, "no address given")
	}
	c.db = strings.TrimSpace(p.String(pre+propDB, d.defaultDB()))
	if !ident(c.db) {
		return config{}, p.Error(pre+propDB, "want a plain name (letters, digits, _)")
	}
	c.user = strings.TrimSpace(p.String(pre+propUser, d.defaultUser()))
	if c.user == "" {
		return config{}, p.Error(pre+propUser, "must not be empty")
	}
	c.password = p.String(pre+propPassword, "")
	threads := int64(0)
	for _, k := range []string{"threadcount", "threads"} {
		if p.Has(k) {
			var err error
			if threads, err = p.Int(k, 0); err != nil {
				return config{}, err
			}
			break
		}
	}
	defPool := int64(16)
	if threads > 0 {
		defPool = threads + 4
	}
	pool, err := p.Int(pre+propPoolSize, defPool)
	if err != nil {
		return config{}, err
	}
	if pool < 1 || pool > 10_000 {
		return config{}, p.Error(pre+propPoolSize, "must be between 1 and 10000")
	}
	c.poolSize = int(pool)
	if c.connTimeout, err = p.Duration(pre+propConnTimeout, 2*time.Second, time.Millisecond); err != nil {
		return config{}, err
	}
	if c.connTimeout < 100*time.Millisecond || c.connTimeout > 5*time.Minute {
		return config{}, p.Error(pre+propConnTimeout, "must be between 100 ms and 5 min")
	}
	if c.createTable, err = p.Bool(pre+propCreateTable, true); err != nil {
		return config{}, err
	}
	if c.isolation, err = Isolation(p); err != nil {
		return config{}, err
	}
	fc, err := p.Int("fieldcount", 10)
	if err != nil {
		return config{}, err
	}
	if fc < 1 || fc > 1000 {
		return config{}, p.Error("fieldcount", "must be between 1 and 1000 for a SQL table")
	}
	c.fieldCount = int(fc)
	c.fieldPrefix = p.String("fieldnameprefix", "field")
	if !ident(c.fieldPrefix) {
		return config{}, p.Error("fieldnameprefix", "want a plain name (letters, digits, _) for SQL column names")
	}
	return c, nil
}

// ident reports whether s is a plain SQL identifier: ASCII letters, digits
// and '_', not starting with a digit, at most 63 bytes.
func ident(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
