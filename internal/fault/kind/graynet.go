package kind

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The gray network kinds (docs/faults.md, "Gray network faults"): one-way
// drops, partial partitions, duplicated, reordered and corrupted packets,
// TCP resets. They act in the nodes' network namespaces (internal/netns).

// Shapes of partial-partition besides explicit pairs (Jepsen's partition
// targets; docs/faults.md defines each for faultbench's node sets).
var PartitionShapes = []string{"majority", "majorities-ring", "bridge", "minority-third", "primaries"}

// GrayNetKinds are the names of the gray network kinds.
var GrayNetKinds = []string{"blackhole-send", "blackhole-recv", "partial-partition", "duplicate", "reorder", "corrupt", "tcp-reset"}

// MaxReorderGap is the longest delay reorder and corrupt hold the packets
// they do not pick.
const MaxReorderGap = 10 * time.Second

// selectorText is what a node selector may be made of (internal/fault
// checks the grammar when the step is validated against the cluster).
var selectorText = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:,()-]*$`)

func peersParam() Param {
	return Param{Name: "peers", Type: String, Doc: "the nodes it acts towards: a node selector (n2, followers' names, 'n2,n3', all); default every other node",
		Validate: func(v any) error {
			if s := strings.TrimSpace(v.(string)); !selectorText.MatchString(s) {
				return fmt.Errorf("peers %q: want a node selector such as n2, leader or n2,n3", s)
			}
			return nil
		}}
}

func clientParam() Param {
	return Param{Name: "client", Type: Bool, Doc: "also towards the load's client (the root namespace's address); default false"}
}

func percentParam(doc string) Param {
	return Param{Name: "percent", Type: Int, Doc: doc, Validate: func(v any) error {
		if n := v.(int); n < 1 || n > 100 {
			return fmt.Errorf("percent %d: allowed 1..100", n)
		}
		return nil
	}}
}

// ParseShape checks a partial-partition shape.
func ParseShape(s string) error {
	if !slices.Contains(PartitionShapes, s) {
		return fmt.Errorf("shape %q: want %s", s, strings.Join(PartitionShapes, ", "))
	}
	return nil
}

func grayNetKinds() []Kind {
	heal := []string{"heal"}
	gap := Param{Name: "delay", Type: Duration, Doc: "netem's delay the other packets get (reorder needs one; default 10ms)",
		Validate: func(v any) error {
			if d := v.(time.Duration); d <= 0 || d > MaxReorderGap {
				return fmt.Errorf("delay %v: allowed more than 0 up to %v", d, MaxReorderGap)
			}
			return nil
		}}
	return []Kind{
		{Name: "blackhole-send", Family: Network, Restores: heal, Color: colNetwork, Params: []Param{peersParam(), clientParam()}},
		{Name: "blackhole-recv", Family: Network, Restores: heal, Color: colNetwork, Params: []Param{peersParam(), clientParam()}},
		{Name: "partial-partition", Family: Network, Restores: heal, Color: colNetwork},
		{Name: "duplicate", Family: Network, Restores: heal, Color: colNetwork, Params: []Param{
			percentParam("the share of the packets the node sends that go out twice, in percent (1..100, default 10)"), peersParam()}},
		{Name: "reorder", Family: Network, Restores: heal, Color: colNetwork, Params: []Param{
			percentParam("the share of the packets the node sends that jump the queue, in percent (1..100, default 25)"), gap}},
		{Name: "corrupt", Family: Network, Restores: heal, Color: colNetwork, Params: []Param{
			percentParam("the share of the packets the node sends with one bit flipped, in percent (1..100, default 5)")}},
		{Name: "tcp-reset", Family: Network, Color: colNetwork, Params: []Param{peersParam(), clientParam()}},
	}
}
