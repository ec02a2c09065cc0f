package cassandra

import (
	"testing"

	"github.com/faultbench/faultbench/internal/properties"
)

func TestClientSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  map[string]string
	}{
		{"defaults", map[string]string{PropHosts: "h:9042"}, map[string]string{PropReadConsistency: "ONE", PropWriteConsistency: "ONE", PropTimeout: "12s", PropTokenAware: "true"}},
		{"quorum", map[string]string{PropHosts: "h:9042", PropConsistency: "quorum", PropTimeout: "2000"}, map[string]string{PropReadConsistency: "QUORUM", PropWriteConsistency: "QUORUM", PropTimeout: "2s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			for k, v := range tc.props {
				p.Set(k, v)
			}
			c, err := parseConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			got := (&Driver{settings: c.clientSettings()}).ClientSettings()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
