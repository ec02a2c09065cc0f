package hbase

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/faultbench/faultbench/internal/hbasethrift"
	"github.com/faultbench/faultbench/internal/launcher"
)

// gateway is one connection to the Thrift2 gateway.
type gateway struct {
	trans  thrift.TTransport
	client *hbasethrift.THBaseServiceClient
}

// dialGateway connects to the cluster's Thrift2 gateway.
func dialGateway(ctx context.Context, c *launcher.Cluster, timeout time.Duration) (*gateway, error) {
	n, err := c.Node(ThriftNode)
	if err != nil {
		return nil, err
	}
	conf := &thrift.TConfiguration{ConnectTimeout: timeout, SocketTimeout: timeout}
	sock := thrift.NewTSocketConf(n.Addr, conf)
	trans := thrift.NewTBufferedTransport(sock, 64<<10)
	if err := trans.Open(); err != nil {
		return nil, fmt.Errorf("connecting to the thrift gateway %s: %w", n.Addr, err)
	}
	proto := thrift.NewTBinaryProtocolConf(trans, conf)
	return &gateway{trans: trans, client: hbasethrift.NewTHBaseServiceClient(thrift.NewTStandardClient(proto, proto))}, nil
}

func (g *gateway) Close() { _ = g.trans.Close() }

// tableName is a table of the default namespace.
func tableName(table string) *hbasethrift.TTableName {
	return &hbasethrift.TTableName{Ns: []byte("default"), Qualifier: []byte(table)}
}

// SplitKeys returns the keys that split YCSB's key space ("user" and a
// number) into regions parts, the way YCSB's HBase instructions pre-split
// usertable: user1000 ... user9999 in equal steps.
func SplitKeys(regions int) [][]byte {
	var out [][]byte
	for i := 1; i < regions; i++ {
		out = append(out, []byte("user"+strconv.Itoa(1000+i*8999/regions)))
	}
	return out
}

// createTable creates the table with its one column family, pre-split,
// unless it exists; the gateway's client retries while the master settles.
func createTable(ctx context.Context, c *launcher.Cluster, cfg config) error {
	return poll(ctx, "the table "+cfg.table+" to be created", func(ctx context.Context) error {
		g, err := dialGateway(ctx, c, 60*time.Second)
		if err != nil {
			return err
		}
		defer g.Close()
		tn := tableName(cfg.table)
		exists, err := g.client.TableExists(ctx, tn)
		if err != nil {
			return fmt.Errorf("tableExists: %w", err)
		}
		if exists {
			ok, err := g.client.IsTableAvailable(ctx, tn)
			if err != nil {
				return fmt.Errorf("isTableAvailable: %w", err)
			}
			if !ok {
				return errors.New("table not available yet")
			}
			return nil
		}
		desc := &hbasethrift.TTableDescriptor{TableName: tn,
			Columns: []*hbasethrift.TColumnFamilyDescriptor{{Name: []byte(cfg.family)}}}
		if err := g.client.CreateTable(ctx, desc, SplitKeys(cfg.regions)); err != nil {
			return fmt.Errorf("createTable: %w", err)
		}
		return errors.New("created, checking it is available")
	})
}

// region is one region of the table and where it is.
type region struct {
	start, end string
	server     string // host:port of its region server
}

// regionsOf lists the table's regions with their locations, from hbase:meta
// through the gateway.
func regionsOf(ctx context.Context, c *launcher.Cluster, table string) ([]region, error) {
	g, err := dialGateway(ctx, c, queryTimeout*3)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	locs, err := g.client.GetAllRegionLocations(ctx, []byte(table))
	if err != nil {
		return nil, fmt.Errorf("getAllRegionLocations: %w", err)
	}
	out := make([]region, 0, len(locs))
	for _, l := range locs {
		r := region{}
		if l.RegionInfo != nil {
			r.start, r.end = string(l.RegionInfo.StartKey), string(l.RegionInfo.EndKey)
		}
		if l.ServerName != nil && l.ServerName.Port != nil {
			r.server = net.JoinHostPort(l.ServerName.HostName, strconv.Itoa(int(*l.ServerName.Port)))
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, nil
}

// DescribeStatus implements launcher.StatusDescriber: the active master
// and its live and dead region servers, the table's region assignment,
// HDFS's live DataNodes, and every process of each machine with its kind
// and resident set size.
func (Launcher) DescribeStatus(ctx context.Context, c *launcher.Cluster) (string, error) {
	var b strings.Builder
	var errs []error
	cfg, _ := parseOptions(launcher.OwnOptions(c.Options))
	if m, err := c.Node(MasterNode); err == nil {
		if st, err := askMaster(ctx, m); err != nil {
			errs = append(errs, fmt.Errorf("master: %w", err))
		} else {
			active := "standby"
			if st.active {
				active = "active"
			}
			fmt.Fprintf(&b, "master %s (%s): %d live region servers [%s], %d dead, %d regions in transition\n",
				m.Addr, active, len(st.live), strings.Join(st.live, " "), st.dead, st.rit)
		}
	}
	if nn, err := c.Node(NNNode); err == nil {
		if live, sm, err := hdfsState(ctx, nn); err != nil {
			errs = append(errs, fmt.Errorf("namenode: %w", err))
		} else {
			if sm == "" {
				sm = "off"
			}
			fmt.Fprintf(&b, "hdfs %s: %d live DataNodes, safe mode %s, replication %s\n", nn.Addr, live, sm, c.Options[OptReplication])
		}
	}
	if regs, err := regionsOf(ctx, c, cfg.table); err != nil {
		errs = append(errs, fmt.Errorf("regions of %s: %w", cfg.table, err))
	} else {
		per := map[string][]string{}
		for _, r := range regs {
			per[r.server] = append(per[r.server], strconv.Quote(r.start))
		}
		servers := make([]string, 0, len(per))
		for s := range per {
			servers = append(servers, s)
		}
		sort.Strings(servers)
		fmt.Fprintf(&b, "table %s (family %s): %d regions\n", cfg.table, cfg.family, len(regs))
		for _, s := range servers {
			fmt.Fprintf(&b, "  %s %s: %d regions, start keys %s\n", nodeAt(c, s), s, len(per[s]), strings.Join(per[s], " "))
		}
	}
	of, machines := c.Machines()
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tPROCESS\tKIND\tPID\tRSS MiB")
	totalKiB := 0
	for _, m := range machines {
		for _, n := range c.Nodes {
			if of[n.Name] != m {
				continue
			}
			rss := "-"
			if n.PID > 0 && launcher.Alive(n.PID) {
				k := rssKiB(n.PID)
				totalKiB += k
				rss = strconv.Itoa(k / 1024)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", m, n.Name, kindOf(n.Name), n.PID, rss)
		}
	}
	fmt.Fprintf(tw, "total\t\t\t\t%d\n", totalKiB/1024)
	_ = tw.Flush()
	return b.String(), errors.Join(errs...)
}

// nodeAt names the node whose client address is addr ("?" when none).
func nodeAt(c *launcher.Cluster, addr string) string {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n.Name
		}
	}
	return "?"
}
