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
