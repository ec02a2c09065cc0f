package etcd

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil)
	if err != nil || o != defaultOptions() {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = parseOptions(map[string]string{
		OptElectionTimeout:   "2s",
		OptHeartbeatInterval: "200",
		OptSnapshotCount:     "5000",
		OptQuotaBytes:        "4GiB",
		OptAutoCompaction:    "0",
		OptStartTimeout:      "45",
		OptLogLevel:          "info",
		"redis.other":        "ignored: not ours",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := options{electionMs: 2000, heartbeatMs: 200, snapshotCount: 5000, quotaBytes: 4 << 30,
		autoCompaction: 0, startTimeout: 45 * time.Second, logLevel: "info"}
	if o != want {
		t.Errorf("got %+v, want %+v", o, want)
	}
	// asMap round-trips.
	back, err := parseOptions(o.asMap())
	if err != nil || back != o {
		t.Errorf("round trip: %+v %v", back, err)
	}
	for _, tc := range []struct {
		m    map[string]string
		want string
	}{
		{map[string]string{"etcd.electiontimeout": "1"}, "unknown etcd option"},
		{map[string]string{OptElectionTimeout: "abc"}, OptElectionTimeout},
		{map[string]string{OptElectionTimeout: "0"}, "positive"},
		{map[string]string{OptElectionTimeout: "1500us"}, "whole number of milliseconds"},
		{map[string]string{OptElectionTimeout: "400", OptHeartbeatInterval: "100ms"}, "at least 5 times"},
		{map[string]string{OptElectionTimeout: "60s"}, "at most 50000"},
		{map[string]string{OptSnapshotCount: "-1"}, OptSnapshotCount},
		{map[string]string{OptQuotaBytes: "lots"}, OptQuotaBytes},
		{map[string]string{OptAutoCompaction: "5ms"}, OptAutoCompaction},
		{map[string]string{OptStartTimeout: "-3"}, "positive"},
		{map[string]string{OptLogLevel: "loud"}, OptLogLevel},
	} {
		if _, err := parseOptions(tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseOptions(%v) = %v, want error containing %q", tc.m, err, tc.want)
		}
	}
}

func TestNodeFlags(t *testing.T) {
	o := defaultOptions()
	m := memberPlan{name: "n2", host: "127.0.0.1", clientPort: 2379, peerPort: 2380, dataDir: "/d/n2/data"}
	argv := nodeArgv("/bin/faultbench", m, "n1=http://127.0.0.1:1,n2=http://127.0.0.1:2380", "tok", "existing", o, 0)
	if !slices.Equal(argv[:3], []string{"/bin/faultbench", "node", "etcd"}) || slices.Contains(argv, "--ready-timeout") {
		t.Fatalf("argv %v", argv)
	}
	f, err := parseNodeFlags(argv[3:], io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.name != "n2" || f.clientURL != "http://127.0.0.1:2379" || f.peerURL != "http://127.0.0.1:2380" ||
		f.clusterState != "existing" || f.electionMs != 1000 || f.heartbeatMs != 100 || f.autoCompaction != time.Minute ||
		f.logLevel != "warn" || f.readyTimeout != 0 || f.clusterToken != "tok" {
		t.Errorf("flags %+v", f)
	}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AutoCompactionMode != "periodic" || cfg.AutoCompactionRetention != "1m0s" || cfg.EnableGRPCGateway || cfg.WarningApplyDuration != time.Second {
		t.Errorf("config: compaction %s %s gateway %v", cfg.AutoCompactionMode, cfg.AutoCompactionRetention, cfg.EnableGRPCGateway)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "n1"}, "--data-dir is required"},
		{append(argv[3:len(argv):len(argv)], "extra"), "unexpected arguments"},
		{append(argv[3:len(argv):len(argv)], "--initial-cluster-state", "old"), "new or existing"},
		{append(argv[3:len(argv):len(argv)], "--log-level", "chatty"), "--log-level"},
		{[]string{"--bogus"}, "bogus"},
	} {
		if _, err := parseNodeFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseNodeFlags(%v) = %v, want error containing %q", tc.args, err, tc.want)
		}
	}
}
