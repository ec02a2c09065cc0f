package remote

import (
	"strings"
	"testing"
)

func TestParseInventory(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr []string // substrings, all required; none = valid
	}{
		{"valid with defaults", `
ssh: {user: bench, key: /k, known_hosts: /kh}
hosts:
  - {name: c1, address: 10.0.0.1, roles: [client]}
  - {name: n1, address: db1.example.org, port: 2222, user: root, roles: [node, client]}
`, nil},
		{"unknown field", `
ssh: {user: bench, key: /k, known_hosts: /kh}
hosts:
  - {name: c1, address: 10.0.0.1, roles: [client], passwrd: x}
`, []string{"passwrd"}},
		{"no hosts", `ssh: {user: bench, key: /k, known_hosts: /kh}`, []string{"hosts: empty"}},
		{"every field wrong", `
ssh: {known_hosts: /kh}
hosts:
  - {name: "c 1", address: "10.0.0.1; rm -rf /", port: 70000, roles: [server]}
  - {name: c2, address: 10.0.0.2, roles: []}
  - {name: c2, address: 10.0.0.2, user: x, key: /k, roles: [client]}
`, []string{`name "c 1"`, `address "10.0.0.1; rm -rf /"`, "port 70000", "user: empty", "key: empty",
			`"server": allowed client, node`, "hosts[1] (c2).roles: empty", `name "c2": used twice`, "10.0.0.2:22 is also host c2"}},
		{"existing cluster", `
ssh: {user: bench, key: /k, known_hosts: /kh}
hosts: [{name: n1, address: 10.0.0.1, roles: [node, client]}, {name: n2, address: 10.0.0.2, roles: [node, client]}]
cluster:
  kind: redis
  nodes:
    - {name: r1, host: n1, endpoint: "10.0.0.1:6379", unit: redis-server.service}
    - {name: r2, host: n2, endpoint: "10.0.0.2:6379", pid_file: /run/redis.pid, start: [redis-server, /etc/redis/redis.conf]}
`, nil},
		{"existing cluster, every field wrong", `
ssh: {user: bench, key: /k, known_hosts: /kh}
hosts: [{name: n1, address: 10.0.0.1, roles: [node]}]
cluster:
  nodes:
    - {name: r1, host: n9, endpoint: "10.0.0.1", unit: "a b", pid_file: /p}
    - {name: r2, host: n1, endpoint: "10.0.0.1:6379", pid_file: run/redis.pid}
    - {name: r3, host: n1, endpoint: "10.0.0.1:6379", unit: u.service, start: [x]}
    - {name: r4, host: n1, endpoint: "10.0.0.1:6379", process: "(", start: [x]}
`, []string{"cluster.kind: empty", `cluster.nodes[0] (r1).host "n9"`, `cluster.nodes[0] (r1).endpoint "10.0.0.1": want host:port`,
			"cluster.nodes[0] (r1): set exactly one of unit, pid_file, process", `pid_file "run/redis.pid": want an absolute path`,
			"cluster.nodes[1] (r2).start: empty", "cluster.nodes[2] (r3).start: a unit is started with systemctl", `cluster.nodes[3] (r4).process "("`}},
		{"bad dir", `
ssh: {user: bench, key: /k, known_hosts: /kh, dir: "$(x)"}
hosts: [{name: c1, address: 10.0.0.1, roles: [client]}]
`, []string{`dir "$(x)"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := Parse([]byte(tt.yaml), "hosts.yaml")
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if h := inv.Hosts[0]; h.Port != 22 || h.User != "bench" || h.Key != "/k" || h.Dir != DefaultDir {
					t.Fatalf("defaults not filled: %+v", h)
				}
				if got := len(inv.WithRole(RoleClient)); got != 2 {
					t.Fatalf("clients: %d, want 2", got)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !strings.HasPrefix(err.Error(), "hosts.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"ls", "-l", "/tmp"}, "ls -l /tmp"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"echo", "a b", "$HOME", "it's"}, `echo 'a b' '$HOME' 'it'\''s'`},
		{[]string{"x", "; rm -rf /", "`id`", "a\nb"}, "x '; rm -rf /' '`id`' 'a\nb'"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := Quote(tt.argv); got != tt.want {
				t.Fatalf("Quote(%q) = %s, want %s", tt.argv, got, tt.want)
			}
		})
	}
}
