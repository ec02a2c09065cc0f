package launcher

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProcsOf(t *testing.T) {
	self := os.Getpid()
	tests := []struct {
		name      string
		node      Node
		wantAlive bool
	}{
		{"local node: this machine's process", Node{Name: "n1", PID: self}, true},
		{"remote node without an inventory: not this machine's pid", Node{Name: "n2", PID: self, Host: "h2"}, false},
	}
	c := &Cluster{Name: "c", Inventory: "/nowhere/hosts.yaml"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := c.ProcsOf(&tc.node)
			if got := p.Alive(context.Background(), tc.node.PID); got != tc.wantAlive {
				t.Errorf("Alive = %v, want %v", got, tc.wantAlive)
			}
		})
	}
}

func TestDownKeepsUnreachableNodes(t *testing.T) {
	c := &Cluster{Name: "c", Inventory: "/nowhere/hosts.yaml", Nodes: []Node{{Name: "n1", PID: 4242, Host: "h1", DataDir: "/x/nodes/c/n1/data"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Down(ctx, c, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no inventory to reach it") {
		t.Fatalf("Down of a node on an unreachable host: %v", err)
	}
	if c.Nodes[0].PID != 4242 {
		t.Errorf("the node's pid was forgotten (%d): cleanup could not find it again", c.Nodes[0].PID)
	}
}

func TestSpecHosts(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		error string
	}{
		{"one node per host", Spec{Nodes: 3, Hosts: []string{"a", "b", "c"}}, ""},
		{"fewer hosts", Spec{Nodes: 3, Hosts: []string{"a", "b"}}, "3 nodes on 2 hosts"},
		{"a host per replica", Spec{Nodes: 2, Replicas: 1, Hosts: []string{"a", "b", "c", "d"}}, ""},
		{"no host for a replica", Spec{Nodes: 2, Replicas: 1, Hosts: []string{"a", "b"}}, "4 nodes (2 with 1 replicas each) on 2 hosts"},
		{"local", Spec{Nodes: 3}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if (err == nil) != (tc.error == "") || (err != nil && !strings.Contains(err.Error(), tc.error)) {
				t.Errorf("Validate() = %v, want %q", err, tc.error)
			}
		})
	}
}
