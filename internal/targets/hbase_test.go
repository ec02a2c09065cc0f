package targets

import (
	"slices"
	"testing"

	hbasedriver "github.com/faultbench/faultbench/internal/driver/hbase"
	"github.com/faultbench/faultbench/internal/launcher"
	hbaselauncher "github.com/faultbench/faultbench/internal/launcher/hbase"
	"github.com/faultbench/faultbench/internal/properties"
)

// TestHBaseConnect checks that the driver is pointed at the gateway and
// given the gateway's client settings, which must be launcher options.
func TestHBaseConnect(t *testing.T) {
	for _, k := range hbasedriver.GatewayClientKeys {
		t.Run(k, func(t *testing.T) {
			if !slices.Contains(hbaselauncher.OptionNames(), k) {
				t.Errorf("%s is no option of the hbase launcher (%v)", k, hbaselauncher.OptionNames())
			}
		})
	}
	c := &launcher.Cluster{Name: "hb", Options: map[string]string{hbaselauncher.OptFamily: "cf", hbaselauncher.OptClientRetries: "7"}}
	for _, n := range hbaselauncher.NodeNames(1) {
		c.Nodes = append(c.Nodes, launcher.Node{Name: n, Addr: "127.0.0.9:" + n})
	}
	p := properties.New()
	t.Run("connect", func(t *testing.T) {
		connectHBase(p, c)
		for k, want := range map[string]string{hbasedriver.PropThrift: "127.0.0.9:thrift", hbasedriver.PropFamily: "cf", hbaselauncher.OptClientRetries: "7"} {
			if got := p.String(k, ""); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	})
}
