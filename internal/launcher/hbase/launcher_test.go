package hbase

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    map[string]string
		check   func(config) bool
		wantErr string
	}{
		{"defaults", nil, func(c config) bool {
			return c.table == "usertable" && c.family == "family" && c.heapMB == 384 && c.retries == 15 && c.pauseMS == 100 && c.opTimeoutMS == 30000
		}, ""},
		{"prefix optional", map[string]string{"heap": "1g", "hbase.client-retries": "3"}, func(c config) bool { return c.heapMB == 1024 && c.retries == 3 }, ""},
		{"unknown key", map[string]string{"hbase.nope": "1"}, nil, "unknown option"},
		{"heap too small", map[string]string{OptHeap: "64m"}, nil, "heap size"},
		{"bad table", map[string]string{OptTable: "a b"}, nil, "want a name"},
		{"session timeout too short", map[string]string{OptSessionTimeout: "100"}, nil, "milliseconds"},
		{"no regions", map[string]string{OptRegions: "0"}, nil, "regions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseOptions(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name          string
		nodes, repl   int
		wantRepl, reg int
		wantErr       bool
	}{
		{"three nodes", 3, 0, 3, 12, false},
		{"one node", 1, 0, 1, 4, false},
		{"more replicas than DataNodes", 2, 3, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			c.replication = tt.repl
			err := c.resolve(tt.nodes)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && (c.replication != tt.wantRepl || c.regions != tt.reg) {
				t.Errorf("replication %d regions %d, want %d %d", c.replication, c.regions, tt.wantRepl, tt.reg)
			}
		})
	}
}

// TestPlan checks the layout: every process named as NodeNames says, a
// node's region server and DataNode on one machine, the services on
// machines of their own, and the write-ahead log on HDFS.
func TestPlan(t *testing.T) {
	env, err := launcher.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ps, err := plan(env, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	c := &launcher.Cluster{Kind: Kind, Name: "t"}
	byName := map[string]*proc{}
	for _, p := range ps {
		names = append(names, p.name)
		byName[p.name] = p
		c.Nodes = append(c.Nodes, launcher.Node{Name: p.name, Addr: p.addr(), PeerAddr: p.httpAddr()})
	}
	if !slices.Equal(names, NodeNames(3)) {
		t.Fatalf("names %v, want %v", names, NodeNames(3))
	}
	of, machines := c.Machines()
	t.Run("machines", func(t *testing.T) {
		want := []string{"master", "n1", "n2", "n3", "nn", "thrift", "zk"}
		if !slices.Equal(machines, want) {
			t.Errorf("machines %v, want %v", machines, want)
		}
		if of["n2-dn"] != "n2" || of["n2"] != "n2" {
			t.Errorf("n2's processes on %q and %q, want both on n2", of["n2"], of["n2-dn"])
		}
	})
	cfg := defaultConfig()
	cfg.java, cfg.lib = "/usr/bin/java", "/lib"
	if err := cfg.resolve(3); err != nil {
		t.Fatal(err)
	}
	s := services{zk: byName[ZKNode], nn: byName[NNNode], nodes: 3}
	t.Run("wal on hdfs", func(t *testing.T) {
		m := byName["n1"].hbaseSite(s, cfg, byName[MasterNode])
		if !strings.HasPrefix(m["hbase.rootdir"], "hdfs://"+byName[NNNode].addr()+"/") {
			t.Errorf("hbase.rootdir %q is not on the NameNode", m["hbase.rootdir"])
		}
		if m["hbase.wal.provider"] != "filesystem" {
			t.Errorf("hbase.wal.provider %q", m["hbase.wal.provider"])
		}
		if m["hbase.unsafe.regionserver.hostname"] != byName["n1"].host {
			t.Errorf("region server hostname %q, want %s", m["hbase.unsafe.regionserver.hostname"], byName["n1"].host)
		}
	})
	t.Run("datanode names itself", func(t *testing.T) {
		m := byName["n2-dn"].hdfsSite(s, cfg)
		if m["dfs.datanode.hostname"] != byName["n2-dn"].host || m["dfs.datanode.address"] != byName["n2-dn"].addr() {
			t.Errorf("datanode config %v", m)
		}
		if m["dfs.client.use.datanode.hostname"] != "true" || m["dfs.replication"] != "3" {
			t.Errorf("client config %v", m)
		}
	})
	t.Run("argv", func(t *testing.T) {
		rs := strings.Join(byName["n3"].argv(cfg), " ")
		for _, want := range []string{"-Xmx384m", "HRegionServer start", byName["n3"].confDir + ":/lib/*"} {
			if !strings.Contains(rs, want) {
				t.Errorf("region server argv lacks %q: %s", want, rs)
			}
		}
		if !strings.Contains(rs, "UseSerialGC") {
			t.Errorf("argv %s", rs)
		}
		f := strings.Join(byName[NNNode].formatArgv(cfg), " ")
		if !strings.HasSuffix(f, "NameNode -format -force -nonInteractive") {
			t.Errorf("format argv %s", f)
		}
	})
	t.Run("site xml escapes", func(t *testing.T) {
		x := siteXML(map[string]string{"a": "<b>&"})
		if !strings.Contains(x, "<value>&lt;b&gt;&amp;</value>") {
			t.Error(x)
		}
	})
}

func TestWholeNode(t *testing.T) {
	c := &launcher.Cluster{}
	for _, n := range NodeNames(2) {
		c.Nodes = append(c.Nodes, launcher.Node{Name: n})
	}
	tests := []struct{ node, want string }{
		{"n1", "n1,n1-dn"},
		{"n2-dn", "n2,n2-dn"},
		{"master", "master"},
		{"zk", "zk"},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			if got := WholeNode(c, tt.node); got != tt.want {
				t.Errorf("WholeNode(%s) = %q, want %q", tt.node, got, tt.want)
			}
		})
	}
}

func TestSplitKeys(t *testing.T) {
	tests := []struct {
		name    string
		regions int
		want    []string
	}{
		{"one region", 1, nil},
		{"four", 4, []string{"user3249", "user5499", "user7749"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range SplitKeys(tt.regions) {
				got = append(got, string(k))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("SplitKeys(%d) = %v, want %v", tt.regions, got, tt.want)
			}
		})
	}
	t.Run("ascending", func(t *testing.T) {
		ks := SplitKeys(200)
		for i := 1; i < len(ks); i++ {
			if bytes.Compare(ks[i-1], ks[i]) >= 0 {
				t.Fatalf("split %d %q not above %q", i, ks[i], ks[i-1])
			}
		}
	})
}
