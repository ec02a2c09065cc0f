package txkv

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/wire"
)

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil)
	if err != nil || o != defaultOptions() {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = parseOptions(map[string]string{OptPersistence: "sync", OptHeartbeat: "50ms", OptRegions: "4",
		OptWALSyncInterval: "0.1", OptMemstoreFlushSize: "1MiB", "etcd.other": "not ours"})
	if err != nil {
		t.Fatal(err)
	}
	if o.persistence != wire.Sync || o.heartbeat != 50*time.Millisecond || o.sessionTimeout != 3*time.Second ||
		o.regions != 4 || o.walSync != 100*time.Millisecond || o.memstore != 1<<20 {
		t.Errorf("parsed %+v", o)
	}
	// detection does not follow the heartbeat (a session of its own)...
	if o, _ := parseOptions(map[string]string{OptHeartbeat: "250ms"}); o.sessionTimeout != 3*time.Second {
		t.Errorf("session timeout for a 250ms heartbeat: %v, want 3s", o.sessionTimeout)
	}
	// ...unless two heartbeats do not fit in it
	if o, _ := parseOptions(map[string]string{OptHeartbeat: "10s"}); o.sessionTimeout != 20*time.Second {
		t.Errorf("session timeout for a 10s heartbeat: %v, want 20s", o.sessionTimeout)
	}
	back, err := parseOptions(o.asMap())
	if err != nil || back != o {
		t.Errorf("round trip: %+v %v", back, err)
	}
	for _, bad := range []map[string]string{
		{OptPersistence: "maybe"}, {OptHeartbeat: "-1s"}, {OptRegions: "0"}, {"txkv.nope": "1"},
		{OptHeartbeat: "1s", OptSessionTimeout: "1500ms"}, {OptMemstoreFlushSize: "12"},
	} {
		if _, err := parseOptions(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestNodeFlags(t *testing.T) {
	f, err := parseCoordFlags([]string{"--addr", "127.0.0.1:1", "--dir", "d", "--storage", "s", "--persistence", "sync", "--heartbeat", "250ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c := f.cluster(); c.Persistence != wire.Sync || c.Heartbeat != 250*time.Millisecond || c.Validate() != nil {
		t.Errorf("cluster config %+v (%v)", c, c.Validate())
	}
	if _, err := parseCoordFlags([]string{"--addr", "x"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--dir") {
		t.Errorf("missing --dir: %v", err)
	}
	if _, err := parseServerFlags([]string{"--name", "s1", "--addr", "a", "--coordinator", "c"}, io.Discard); err == nil {
		t.Error("missing --storage accepted")
	}
	argv := coordArgv("/fb", "127.0.0.1:1", "d", "s", 2, defaultOptions())
	if _, err := parseCoordFlags(argv[3:], io.Discard); err != nil {
		t.Errorf("the launcher's own command line does not parse: %v", err)
	}
	if _, err := parseServerFlags(serverArgv("/fb", "s1", "a", "c", "s")[3:], io.Discard); err != nil {
		t.Errorf("server command line: %v", err)
	}
}

func TestServerNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  map[string]string
		nodes int
		want  []string
	}{
		{"flat", nil, 3, []string{"s1", "s2", "s3"}},
		{"groups", map[string]string{OptServersPerNode: "2"}, 3, []string{"n1-s1", "n1-s2", "n2-s1", "n2-s2", "n3-s1", "n3-s2"}},
		{"one per node", map[string]string{OptServersPerNode: "1"}, 2, []string{"n1-s1", "n2-s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := o.serverNames(tc.nodes)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("servers %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"-1", "65", "two"} {
		if _, err := parseOptions(map[string]string{OptServersPerNode: bad}); err == nil {
			t.Errorf("%s=%s accepted", OptServersPerNode, bad)
		}
	}
}
