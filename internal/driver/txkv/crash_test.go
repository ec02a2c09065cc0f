package txkv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

func TestFindClientRecovery(t *testing.T) {
	at := time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)
	crashed := driver.CrashedClient{Name: "vm/1#1", ID: "6", At: at}
	rec := func(kind, name string, detected time.Duration, replayed int) wire.Recovery {
		return wire.Recovery{Kind: kind, Name: name, Detected: at.Add(detected), Done: at.Add(detected + 200*time.Millisecond), Replayed: replayed, From: 99}
	}
	cases := []struct {
		name     string
		recs     []wire.Recovery
		found    bool
		replayed int
	}{
		{"none", nil, false, 0},
		{"a server's", []wire.Recovery{rec("server", "vm/1#1", 3*time.Second, 5)}, false, 0},
		{"another client's", []wire.Recovery{rec("client", "vm/1#2", 3*time.Second, 5)}, false, 0},
		{"an earlier incarnation's", []wire.Recovery{rec("client", "vm/1#1", -time.Minute, 5)}, false, 0},
		{"its own", []wire.Recovery{rec("server", "s1", time.Second, 1), rec("client", "vm/1#1", 3*time.Second, 236)}, true, 236},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := findClientRecovery(wire.ClusterStatus{Recoveries: tc.recs}, crashed)
			if ok != tc.found || r.Replayed != tc.replayed {
				t.Fatalf("found %v replayed %d, want %v %d", ok, r.Replayed, tc.found, tc.replayed)
			}
			if ok && (!r.Detected.Equal(at.Add(3*time.Second)) || !strings.Contains(r.Detail, "T_F(c) 99")) {
				t.Errorf("recovery %+v", r)
			}
		})
	}
}

func TestClientState(t *testing.T) {
	c := driver.CrashedClient{Name: "c", ID: "6"}
	cases := []struct {
		clients []wire.ClientStatus
		want    string
	}{
		{[]wire.ClientStatus{{ID: 6}}, "not detected yet"},
		{[]wire.ClientStatus{{ID: 5}, {ID: 6, Dead: true}}, "being recovered"},
		{[]wire.ClientStatus{{ID: 5}}, "not in the client list"},
	}
	for _, tc := range cases {
		if got := clientState(wire.ClusterStatus{Clients: tc.clients}, c); !strings.Contains(got, tc.want) {
			t.Errorf("clientState(%+v) = %q, want %q", tc.clients, got, tc.want)
		}
	}
}

func TestCrashClientRejectsNegativeHold(t *testing.T) {
	var d Driver // no client needed: the hold is checked first
	if _, err := d.CrashClient(context.Background(), driver.ClientCrash{Hold: -time.Second}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("CrashClient(-1s): %v", err)
	}
}
