package redis

import "testing"

func TestClientSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props []string
		want  map[string]string
	}{
		{"defaults", []string{PropAddr, "127.0.0.1:7000"}, map[string]string{PropMaxRetries: "0", PropMaxRedirects: "3", PropReadTimeout: "none", PropWait: "0", PropWaitTimeout: "1s", PropDialTimeout: "5s", PropMode: ModeStandalone}},
		{"set", []string{PropAddr, "127.0.0.1:7000", PropMaxRetries, "2", PropReadTimeout, "3000", PropWait, "1"}, map[string]string{PropMaxRetries: "2", PropReadTimeout: "3s", PropWait: "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(props(tc.props...))
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
