package cassandra

import (
	"context"
	"os"
	"path/filepath"
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

func TestAnnouncedTokens(t *testing.T) {
	tests := []struct {
		name, log string
		want      bool
	}{
		{"bootstrap sleeping", "INFO [main] StorageService JOINING: sleeping 5000 ms for pending range setup\n", true},
		{"self normal", "INFO [GossipStage:1] StorageService Node /127.0.0.3:7000 state jump to NORMAL\n", true},
		{"other node normal", "INFO [GossipStage:1] StorageService Node /127.0.0.1:7000 state jump to NORMAL\n", false},
		{"still choosing", "INFO [main] StorageService JOINING: getting bootstrap token\n", false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "node.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := announcedTokens(path, "/127.0.0.3:"); got != tc.want {
				t.Errorf("announcedTokens = %v, want %v", got, tc.want)
			}
		})
	}
	if announcedTokens(filepath.Join(t.TempDir(), "missing.log"), "/127.0.0.3:") {
		t.Error("a missing log announced tokens")
	}
}
