package cassandra

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/launcher"
)

func TestNodetoolArgv(t *testing.T) {
	cfg := config{java: "/usr/bin/java", lib: "/lib/cassandra"}
	wrap := []string{"/bin/faultbench", "netns-exec", "fb-x-1", "--"}
	tests := []struct {
		name string
		wrap []string
	}{
		{"loopback", nil},
		{"namespace", wrap},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := nodetoolArgv(cfg, "/c", "/c/lb.xml", tc.wrap, 7199, []string{"decommission", "--force"})
			if !slices.Equal(argv[:len(tc.wrap)], tc.wrap) {
				t.Fatalf("argv starts %q, want the wrapper %q", argv[:4], tc.wrap)
			}
			if argv[len(tc.wrap)] != cfg.java {
				t.Errorf("program %q after the wrapper, want %q", argv[len(tc.wrap)], cfg.java)
			}
			tail := strings.Join(argv[len(argv)-6:], " ")
			if tail != "-h 127.0.0.1 -p 7199 decommission --force" {
				t.Errorf("argv ends %q", tail)
			}
		})
	}
}

func TestAddNodesRefusesNamespaces(t *testing.T) {
	c := &launcher.Cluster{Name: "x", Kind: Kind, Nodes: []launcher.Node{
		{Name: "n1", Argv: []string{"/bin/faultbench", "netns-exec", "fb-x-1", "--", "java"}},
	}}
	if !inNamespaces(c) {
		t.Fatal("inNamespaces false for a netns-exec command line")
	}
	_, err := Launcher{}.AddNodes(context.Background(), nil, c, launcher.ScaleOptions{Count: 1})
	if err == nil || !strings.Contains(err.Error(), "network namespaces (--net)") {
		t.Fatalf("AddNodes: %v, want the --net refusal", err)
	}
	if inNamespaces(&launcher.Cluster{Nodes: []launcher.Node{{Name: "n1", Argv: []string{"java"}}}}) {
		t.Error("inNamespaces true for a plain command line")
	}
}
