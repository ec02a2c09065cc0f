package cassandra

import (
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    map[string]string
		wantErr string // substring; "" means valid
		check   func(t *testing.T, c config)
	}{
		{"defaults", nil, "", func(t *testing.T, c config) {
			if c.keyspace != "ycsb" || c.heapMB != 512 || c.numTokens != 16 || c.commitlogSync != "periodic" || c.rf != 0 {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{"prefix optional", map[string]string{"rf": "2", "cassandra.keyspace": "ks1"}, "", func(t *testing.T, c config) {
			if c.rf != 2 || c.keyspace != "ks1" {
				t.Errorf("rf %d keyspace %s", c.rf, c.keyspace)
			}
		}},
		{"heap in g", map[string]string{"cassandra.heap": "1g"}, "", func(t *testing.T, c config) {
			if c.heapMB != 1024 {
				t.Errorf("heap = %d MB, want 1024", c.heapMB)
			}
		}},
		{"heap bare megabytes", map[string]string{"heap": "384"}, "", func(t *testing.T, c config) {
			if c.heapMB != 384 {
				t.Errorf("heap = %d MB, want 384", c.heapMB)
			}
		}},
		{"batch sync", map[string]string{"commitlog-sync": "BATCH"}, "", func(t *testing.T, c config) {
			if c.commitlogSync != "batch" {
				t.Errorf("commitlog sync = %s", c.commitlogSync)
			}
		}},
		{"unknown option", map[string]string{"cassandra.rff": "2"}, `unknown option "cassandra.rff"`, nil},
		{"rf zero", map[string]string{"rf": "0"}, "option rf=\"0\"", nil},
		{"rf not a number", map[string]string{"cassandra.rf": "three"}, "cassandra.rf", nil},
		{"heap too small", map[string]string{"heap": "64m"}, "between 128m and 32g", nil},
		{"heap garbage", map[string]string{"heap": "lots"}, "option heap=\"lots\"", nil},
		{"system keyspace", map[string]string{"keyspace": "system_auth"}, "not system", nil},
		{"keyspace with quote", map[string]string{"keyspace": "a'b"}, "keyspace name", nil},
		{"bad sync", map[string]string{"commitlog-sync": "group"}, "periodic or batch", nil},
		{"tokens too many", map[string]string{"num-tokens": "1000"}, "option num-tokens=\"1000\"", nil},
		{"write timeout", map[string]string{"write-request-timeout": "5"}, "between 10 and", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseOptions(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestResolveRF(t *testing.T) {
	tests := []struct {
		name      string
		rf, nodes int
		want      int
		wantErr   bool
	}{
		{"default three", 0, 5, 3, false},
		{"default fewer nodes", 0, 2, 2, false},
		{"explicit", 1, 3, 1, false},
		{"more than nodes", 4, 3, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := defaultConfig()
			c.rf = tc.rf
			err := c.resolveRF(tc.nodes)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && c.rf != tc.want {
				t.Errorf("rf = %d, want %d", c.rf, tc.want)
			}
		})
	}
}

func TestJavaMajor(t *testing.T) {
	tests := []struct {
		name, out string
		want      int
		wantErr   bool
	}{
		{"openjdk 17", `openjdk version "17.0.15" 2025-04-15`, 17, false},
		{"java 8", `java version "1.8.0_392"`, 8, false},
		{"early access", `openjdk version "21-ea" 2023-09-19`, 21, false},
		{"garbage", `command not found`, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := javaMajor(tc.out)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("javaMajor = %d, %v; want %d (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestYAMLConfig(t *testing.T) {
	c := defaultConfig()
	c.rf = 3
	c.commitlogSync = "batch"
	p := nodePlan{name: "n2", host: "127.0.0.2", nativePort: 9142, storagePort: 7100, dbDir: "/d/n2/db", confDir: "/d/n2/conf"}
	y := p.yamlConfig(c, []string{"127.0.0.1:7100"})
	for _, want := range []string{
		"listen_address: 127.0.0.2", "rpc_address: 127.0.0.2", "storage_port: 7100",
		"native_transport_port: 9142", `seeds: "127.0.0.1:7100"`, `commitlog_directory: "/d/n2/db/commitlog"`,
		"commitlog_sync: batch", "allocate_tokens_for_local_replication_factor: 3",
	} {
		if !strings.Contains(y, want+"\n") {
			t.Errorf("cassandra.yaml lacks %q:\n%s", want, y)
		}
	}
	if strings.Contains(y, "commitlog_sync_period") {
		t.Errorf("batch sync must not set commitlog_sync_period:\n%s", y)
	}
}
