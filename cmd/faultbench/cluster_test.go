package main

import (
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/targets"
)

func TestClusterNodes(t *testing.T) {
	cases := []struct {
		kind           string
		nodes, servers int
		want           int
		err            string
	}{
		{"txkv", 0, 0, 0, ""}, // the launcher's default
		{"txkv", 0, 3, 3, ""},
		{"txkv", 3, 0, 3, ""},
		{"txkv", 3, 3, 3, ""},
		{"txkv", 2, 3, 0, "--nodes 2 and --servers 3 disagree"},
		{"txkv", 0, -2, 0, "--servers -2: allowed 1..64"},
		{"txkv", 0, 0, 0, ""}, // --servers not given
		{"etcd", 3, 0, 3, ""},
		{"etcd", 0, 3, 0, "--servers is for txkv (its region servers); use --nodes for etcd"},
		{"redis-cluster", 3, 3, 0, "use --nodes for redis-cluster"},
	}
	reg := targets.Builtin()
	txkv, err := reg.Get("txkv")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		tgt, err := reg.Get(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		servers := tc.servers
		got, err := clusterNodes(tgt, tc.nodes, map[string]nodesAlias{"servers": {owner: txkv, n: &servers}}, map[string]bool{"servers": servers != 0})
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("clusterNodes(%s, %d, %d) = %d, %v; want %d", tc.kind, tc.nodes, tc.servers, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("clusterNodes(%s, %d, %d) error %v, want %q", tc.kind, tc.nodes, tc.servers, err, tc.err)
		}
	}
}

func TestApplyOptionFlags(t *testing.T) {
	reg := targets.Builtin()
	cass, err := reg.Get("cassandra")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := reg.Get("etcd")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kind *targets.Target
		rf   string
		opts map[string]string
		want string // cassandra.rf afterwards
		err  string
	}{
		{"not given", cass, "", map[string]string{}, "", ""},
		{"given", cass, "2", map[string]string{}, "2", ""},
		{"agrees with -o", cass, "2", map[string]string{"cassandra.rf": "2"}, "2", ""},
		{"disagrees with -o", cass, "2", map[string]string{"cassandra.rf": "3"}, "", "--rf 2 and -o cassandra.rf=3 disagree"},
		{"other kind", etcd, "2", map[string]string{}, "", "--rf is for cassandra"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rf := tc.rf
			err := applyOptionFlags(tc.kind, map[string]optionFlag{"rf": {owner: cass, option: "cassandra.rf", v: &rf}}, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || tc.opts["cassandra.rf"] != tc.want {
				t.Fatalf("options %v, err %v; want cassandra.rf=%q", tc.opts, err, tc.want)
			}
		})
	}
}
