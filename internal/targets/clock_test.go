package targets

import (
	"strings"
	"testing"
)

// TestCheckClock: clock faults are refused, with the reason, on the kinds
// whose nodes are Go programs, and taken by the C and JVM kinds.
func TestCheckClock(t *testing.T) {
	reg := Builtin()
	tests := []struct {
		kind, value string
		want        string // "" for no error
	}{
		{"redis", "faketime", ""},
		{"redis-cluster", "faketime", ""},
		{"postgres-ha", "faketime", ""},
		{"galera", "faketime", ""},
		{"cassandra", "faketime", ""},
		{"etcd", "faketime", "vDSO"},
		{"txkv", "faketime", "vDSO"},
		{"etcd", "", ""},
		{"redis", "on", "want faketime"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"="+tc.value, func(t *testing.T) {
			tg, err := reg.Get(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			err = tg.CheckOptionValues(map[string]string{"clock": tc.value})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckOptionValues: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckOptionValues = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
