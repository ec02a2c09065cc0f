package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lostAppend is one lost acknowledged append the lost-appends check named.
type lostAppend struct {
	key   string
	value int64
	acked time.Time
}

var lostRE = regexp.MustCompile(`lost (\S+) (\d+) acknowledged [0-9.]+ s wall (\S+?)(?:;|$)`)

// TestAppendsLostRedisCluster is the lost-appends check's control on a
// real Redis Cluster (3 masters, one replica each, every node in its own
// network namespace, cluster-node-timeout 1 s): appends of unique values
// to 16 lists at 400/s. With the first master cut off from the other
// nodes (clients still reach it) and healed, the check fails and names
// each lost acknowledged append; every one was acknowledged after the
// partition began (less a replication lag) and before the heal, and the
// test logs each one's time relative to the partition and to the
// promotion of the master's replica. Without a partition none is lost.
func TestAppendsLostRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Redis Cluster in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creates network namespaces: needs root")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH: run scripts/setup.sh --only redis (make test does)")
	}
	c := newCLI(t)
	for _, tt := range []struct {
		name      string
		duration  string
		partition bool
	}{
		{"partitioned master loses appends", "16s", true},
		{"no partition loses none", "6s", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "appendset-redis-" + strconv.FormatBool(tt.partition)
			sc := "name: " + name + `
target:
  kind: redis-cluster
  nodes: 3
  replicas: 1
  options: {net: netns, redis.cluster-node-timeout: "1000"}
workload:
  ycsb: appendset
  properties: {appendset.lists: "16"}
load: {threads: 8, rate: "400", warmup: 1s, duration: ` + tt.duration + `, window: 1s, skip_load: true}
checks: [lost-appends]
`
			if tt.partition {
				sc += `schedule:
  - {at: 5s, fault: partition, node: primary, label: split}
  - {at: 10s, fault: heal, node: all, label: split}
`
			}
			file := filepath.Join(c.dir, name+".yaml")
			if err := os.WriteFile(file, []byte(sc), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, code := c.run(3*time.Minute, "scenario", file)
			if code != 0 {
				t.Fatalf("scenario: exit %d\n%s\n%s", code, out, errs)
			}
			runs, _ := filepath.Glob(filepath.Join(c.dir, "runs", "*-"+name))
			if len(runs) != 1 {
				t.Fatalf("run directories %v", runs)
			}
			var sum struct {
				Checks map[string]bool `json:"checks_passed"`
				Errors []string        `json:"errors"`
			}
			b, err := os.ReadFile(filepath.Join(runs[0], "summary.json"))
			if err != nil || json.Unmarshal(b, &sum) != nil {
				t.Fatalf("summary.json: %v", err)
			}
			passed, ok := sum.Checks["lost-appends"]
			if !ok || passed == tt.partition {
				t.Fatalf("checks_passed.lost-appends = %v (present %v), want %v\n%s", passed, ok, !tt.partition, errs)
			}
			lost := parseLost(t, errs)
			if !tt.partition {
				if len(lost) != 0 || !strings.Contains(errs, "lost-appends: set: valid=true") {
					t.Fatalf("%d appends lost without a partition:\n%s", len(lost), errs)
				}
				return
			}
			if len(lost) == 0 {
				t.Fatalf("the check failed but named no lost append:\n%s", errs)
			}
			inject, promoted, healed := runEvents(t, runs[0])
			t.Logf("partition began %s, replica promoted %s (%+.3f s), heal began %s (%+.3f s)",
				inject.Format("15:04:05.000"), promoted.Format("15:04:05.000"), promoted.Sub(inject).Seconds(),
				healed.Format("15:04:05.000"), healed.Sub(inject).Seconds())
			for _, l := range lost {
				// an append acknowledged just before the cut may not have
				// reached the replica yet; none after the heal can be lost
				if l.acked.Before(inject.Add(-time.Second)) || l.acked.After(healed) {
					t.Errorf("lost %s %d acknowledged %s: outside the partition (%s .. %s)", l.key, l.value, l.acked.Format("15:04:05.000"),
						inject.Format("15:04:05.000"), healed.Format("15:04:05.000"))
				}
			}
			first, last := lost[0].acked, lost[len(lost)-1].acked
			t.Logf("%d acknowledged appends lost, acknowledged from %+.3f s to %+.3f s after the partition began, %+.3f s to %+.3f s relative to the promotion",
				len(lost), first.Sub(inject).Seconds(), last.Sub(inject).Seconds(), first.Sub(promoted).Seconds(), last.Sub(promoted).Seconds())
		})
	}
}

// parseLost reads the lost appends the check's line named.
func parseLost(t *testing.T, text string) []lostAppend {
	t.Helper()
	var out []lostAppend
	for _, m := range lostRE.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		at, err := time.Parse(time.RFC3339Nano, m[3])
		if err != nil {
			t.Fatalf("lost append %q: %v", m[0], err)
		}
		out = append(out, lostAppend{key: m[1], value: v, acked: at})
	}
	// the line is printed twice (the check's line and the summary's error)
	seen := map[int64]bool{}
	uniq := out[:0]
	for _, l := range out {
		if !seen[l.value] {
			seen[l.value] = true
			uniq = append(uniq, l)
		}
	}
	return uniq
}

// runEvents returns the wall times of the partition's start, the first
// promotion of a replica after it, and the heal's start.
func runEvents(t *testing.T, dir string) (inject, promoted, healed time.Time) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Wall   time.Time `json:"wall"`
			Kind   string    `json:"kind"`
			Detail string    `json:"detail"`
			Action string    `json:"action"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch {
		case e.Kind == "fault-inject" && e.Action == "partition" && inject.IsZero():
			inject = e.Wall
		case e.Kind == "role-change" && strings.HasSuffix(e.Detail, "replica -> primary") && !inject.IsZero() && promoted.IsZero():
			promoted = e.Wall
		case e.Kind == "fault-restore" && e.Action == "heal" && healed.IsZero():
			healed = e.Wall
		}
	}
	if inject.IsZero() || promoted.IsZero() || healed.IsZero() {
		t.Fatalf("events.jsonl: partition %v, promotion %v, heal %v: one is missing", inject, promoted, healed)
	}
	return inject, promoted, healed
}
