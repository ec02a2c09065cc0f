package fault

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
)

// Network fault actions. They need a cluster whose nodes run in network
// namespaces (cluster option net=netns, `cluster up --net`); see
// docs/faults.md.
const (
	ActionPartition Action = "partition" // drop traffic between groups of nodes
	ActionHeal      Action = "heal"      // remove network faults
	ActionLoss      Action = "loss"      // drop a fraction of the packets a node receives
	ActionBandwidth Action = "bandwidth" // limit what a node sends (tc tbf)
	ActionDelay     Action = "delay"     // hold what a node sends (userspace relay)
)

// Partition keywords (besides every node selector, which isolates the
// selected nodes from the rest).
const (
	PartHalves           = "halves"            // first ceil(n/2) nodes by name | the rest
	PartMajorityMinority = "majority-minority" // the leader/primary and floor((n-1)/2)-1 more | the majority
	PartBridge           = "bridge"            // two halves and one node that sees both
	OneWayPrefix         = "oneway:"           // only traffic from the first group to the second is dropped
)

// argFault is implemented by faults whose node argument is more than a
// node selector (partition groups, a loss percentage, a rate).
type argFault interface {
	// checkArg checks arg's syntax (schedule validation, before the run).
	checkArg(arg string) error
	// resolveArg resolves arg against c and remembers what the fault needs;
	// it returns the nodes the fault acts on.
	resolveArg(c *launcher.Cluster, r *Resolver, arg string) ([]string, error)
}

// resolveFault resolves a step's node argument for f: through the fault's
// own syntax for network faults, as a selector for every other fault.
func resolveFault(ctx context.Context, t *Cluster, r *Resolver, f Fault, arg string) ([]string, error) {
	af, ok := f.(argFault)
	if !ok {
		return resolveNow(ctx, t, r, arg)
	}
	rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	c, err := t.Refresh(rctx)
	cancel()
	if err != nil {
		t.emit(event.Note, "", fmt.Sprintf("resolving %q with the last known roles: %v", arg, err), "")
		c = t.Snapshot()
	}
	return af.resolveArg(c, r, arg)
}

// networkOf returns the cluster network of t's cluster.
func networkOf(t *Cluster) (*netns.Network, *netns.State, error) {
	c := t.Snapshot()
	p := c.Options[netns.OptNetState]
	if p == "" {
		return nil, nil, fmt.Errorf("network faults need every node in a network namespace of its own: start the cluster with `faultbench cluster up %s --net` (scenario: target options net: netns), as root", c.Kind)
	}
	nw, err := netns.Open(p)
	if err != nil {
		return nil, nil, err
	}
	st, err := nw.State()
	if err != nil {
		return nil, nil, err
	}
	return nw, st, nil
}

// newOwner returns a fresh id for the rules of one fault: a letter for the
// action and 6 random base-36 characters.
func newOwner(a Action) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(a)[:1] + string(b)
}

// splitArg splits "SELECTOR VALUE".
func splitArg(arg string) (string, string) {
	f := strings.Fields(arg)
	switch len(f) {
	case 0:
		return "", ""
	case 1:
		return f[0], ""
	}
	return f[0], strings.Join(f[1:], "")
}

// onMachines maps nodes (cluster node names) to the machines they run on,
// in order, each machine once: network faults act on a node's namespace,
// which postgres-ha's nK-keeper shares with nK (launcher.Cluster.Machines).
func onMachines(c *launcher.Cluster, nodes []string) []string {
	of, _ := c.Machines()
	seen := map[string]bool{}
	var out []string
	for _, n := range nodes {
		m, ok := of[n]
		if !ok {
			m = n
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// ---- partition ----

// block is one directed drop: packets from every node of from to every node of to.
type block struct{ from, to []string }

type partitionFault struct {
	noLifecycle
	groups  [][]string
	blocks  []block
	oneWay  bool
	owner   string
	applied bool
}

func (*partitionFault) Name() Action { return ActionPartition }

// parsePartition checks the syntax of a partition argument and returns it
// without the oneway: prefix.
func parsePartition(arg string) (spec string, oneWay bool, err error) {
	spec = strings.TrimSpace(arg)
	if s, ok := strings.CutPrefix(spec, OneWayPrefix); ok {
		spec, oneWay = s, true
	}
	switch {
	case spec == "":
		return "", false, fmt.Errorf("partition needs groups: a selector (isolated from the rest), %s, %s, %s, or explicit groups like 'n1,n2|n3,n4,n5'", PartHalves, PartMajorityMinority, PartBridge)
	case spec == PartHalves || spec == PartMajorityMinority:
		return spec, oneWay, nil
	case spec == PartBridge:
		if oneWay {
			return "", false, fmt.Errorf("partition %s: one direction is not defined for a bridge", PartBridge)
		}
		return spec, oneWay, nil
	case strings.ContainsAny(spec, "|>"):
		sep := "|"
		if strings.Contains(spec, ">") {
			sep, oneWay = ">", true
		}
		parts := strings.Split(spec, sep)
		if len(parts) != 2 {
			return "", false, fmt.Errorf("partition %q: want exactly two groups like 'n1,n2|n3,n4' (or 'n1,n2>n3,n4' for one direction)", arg)
		}
		for _, p := range parts {
			for _, n := range strings.Split(p, ",") {
				if !validName(strings.TrimSpace(n)) {
					return "", false, fmt.Errorf("partition %q: %q is not a node name", arg, n)
				}
			}
		}
		return spec, oneWay, nil
	}
	if _, err := parseSelector(spec); err != nil {
		return "", false, fmt.Errorf("partition %q: %w", arg, err)
	}
	return spec, oneWay, nil
}

func (f *partitionFault) checkArg(arg string) error {
	_, _, err := parsePartition(arg)
	return err
}

func (f *partitionFault) resolveArg(c *launcher.Cluster, r *Resolver, arg string) ([]string, error) {
	spec, oneWay, err := parsePartition(arg)
	if err != nil {
		return nil, err
	}
	// groups are made of machines (a node's namespace), not processes
	_, all := c.Machines()
	sortNames(all)
	resolve := func(sel string) ([]string, error) {
		ns, err := r.Resolve(c, sel)
		return onMachines(c, ns), err
	}
	rest := func(in []string) []string {
		set := map[string]bool{}
		for _, n := range in {
			set[n] = true
		}
		var out []string
		for _, n := range all {
			if !set[n] {
				out = append(out, n)
			}
		}
		return out
	}
	var a, b, bridge []string
	switch {
	case spec == PartHalves:
		h := (len(all) + 1) / 2
		a, b = all[:h], all[h:]
	case spec == PartMajorityMinority:
		// The minority holds the leader (or a primary) when there is one.
		lead := onMachines(c, c.WithRole(launcher.RoleLeader))
		if len(lead) == 0 {
			lead = onMachines(c, c.WithRole(launcher.RolePrimary))
		}
		size := max((len(all)-1)/2, 1)
		if len(lead) > 0 {
			a = []string{lead[0]}
		}
		for _, n := range all {
			if len(a) >= size {
				break
			}
			if len(a) == 0 || n != a[0] {
				a = append(a, n)
			}
		}
		sortNames(a)
		b = rest(a)
	case spec == PartBridge:
		if len(all) < 3 {
			return nil, fmt.Errorf("partition %s needs at least 3 nodes, the cluster has %d", PartBridge, len(all))
		}
		mid := len(all) / 2
		a, bridge, b = all[:mid], all[mid:mid+1], all[mid+1:]
	case strings.ContainsAny(spec, "|>"):
		sep := "|"
		if strings.Contains(spec, ">") {
			sep = ">"
		}
		parts := strings.Split(spec, sep)
		for i, p := range parts {
			var g []string
			for _, n := range strings.Split(p, ",") {
				ns, err := r.Resolve(c, strings.TrimSpace(n))
				if err != nil {
					return nil, fmt.Errorf("partition %q: %w", arg, err)
				}
				g = append(g, ns...)
			}
			g = onMachines(c, g)
			if i == 0 {
				a = g
			} else {
				b = g
			}
		}
	default:
		if a, err = resolve(spec); err != nil {
			return nil, fmt.Errorf("partition %q: %w", arg, err)
		}
		b = rest(a)
	}
	if len(a) == 0 || len(b) == 0 {
		return nil, fmt.Errorf("partition %q: one side is empty (%s | %s)", arg, joinNodes(a), joinNodes(b))
	}
	seen := map[string]bool{}
	for _, n := range append(append([]string(nil), a...), b...) {
		if seen[n] {
			return nil, fmt.Errorf("partition %q: node %s is on both sides", arg, n)
		}
		seen[n] = true
	}
	f.oneWay = oneWay
	f.groups = [][]string{a, b}
	f.blocks = []block{{from: a, to: b}}
	if !oneWay {
		f.blocks = append(f.blocks, block{from: b, to: a})
	}
	if bridge != nil {
		f.groups = [][]string{a, bridge, b}
	}
	// The nodes a partition acts on, in events: the side cut off (the
	// selected nodes, the first group).
	out := append([]string(nil), a...)
	sortNames(out)
	return out, nil
}

// describe renders the partition: "n1 | n2,n3 (both directions)".
func (f *partitionFault) describe() string {
	var gs []string
	for _, g := range f.groups {
		gs = append(gs, joinNodes(g))
	}
	dir := "both directions"
	if f.oneWay {
		dir = "one direction: " + joinNodes(f.groups[0]) + " cannot reach " + joinNodes(f.groups[len(f.groups)-1])
	}
	if len(f.groups) == 3 {
		dir = "bridge " + joinNodes(f.groups[1]) + " reaches both sides"
	}
	return strings.Join(gs, " | ") + " (" + dir + ")"
}

func (f *partitionFault) Prepare(_ context.Context, t *Cluster, _ []string) error {
	if len(f.blocks) == 0 {
		return errors.New("partition: no groups resolved")
	}
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		if _, err := hostDrops(hn, f.blocks); err != nil {
			return err
		}
		f.owner = newOwner(ActionPartition)
		return nil
	}
	_, st, err := networkOf(t)
	if err != nil {
		return err
	}
	for _, g := range f.groups {
		for _, n := range g {
			if _, err := st.Node(n); err != nil {
				return err
			}
		}
	}
	f.owner = newOwner(ActionPartition)
	return nil
}

// ipsOf returns the addresses of nodes.
func ipsOf(st *netns.State, nodes []string) ([]string, error) {
	var out []string
	for _, n := range nodes {
		nd, err := st.Node(n)
		if err != nil {
			return nil, err
		}
		out = append(out, nd.IP)
	}
	return out, nil
}

func (f *partitionFault) Inject(ctx context.Context, t *Cluster, _ []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		return f.injectOnHosts(ctx, t, hn)
	}
	nw, st, err := networkOf(t)
	if err != nil {
		return err
	}
	// one table per receiving node, dropping every blocked source
	drops := map[string][]string{}
	for _, b := range f.blocks {
		ips, err := ipsOf(st, b.from)
		if err != nil {
			return err
		}
		for _, to := range b.to {
			drops[to] = append(drops[to], ips...)
		}
	}
	t.emit(event.Note, joinNodes(f.allNodes()), "partition start: "+f.describe(), "")
	f.applied = true
	var errs []error
	for _, to := range sortedKeys(drops) {
		if err := nw.AddDrop(to, f.owner, drops[to]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", to, err))
		}
	}
	return errors.Join(errs...)
}

func (f *partitionFault) allNodes() []string {
	var out []string
	for _, g := range f.groups {
		out = append(out, g...)
	}
	sortNames(out)
	return out
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortNames(out)
	return out
}

// probeAddr is where a node is probed: its peer address, else its client address.
func probeAddr(t *Cluster, name string) (string, error) {
	n, err := t.Node(name)
	if err != nil {
		return "", err
	}
	if n.PeerAddr != "" {
		return n.PeerAddr, nil
	}
	return n.Addr, nil
}

// probeTimeout bounds one reachability probe.
const probeTimeout = 300 * time.Millisecond

// waitReach waits until, for every block, a node of from reaches (want
// true) or cannot reach (want false) a node of to, measured by TCP connects
// from inside the first node's namespace. A node that does not listen
// counts as reached when it refuses.
func waitReach(ctx context.Context, t *Cluster, blocks []block, want bool) error {
	_, st, err := networkOf(t)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		from, err := st.Node(b.from[0])
		if err != nil {
			return err
		}
		addr, err := probeAddr(t, b.to[0])
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%s to reach %s (%s)", from.Name, b.to[0], addr)
		if !want {
			what = fmt.Sprintf("%s to stop reaching %s (%s)", from.Name, b.to[0], addr)
		}
		if err := waitState(ctx, what, func() bool {
			ok, err := netns.Reach(ctx, from.NS, addr, probeTimeout)
			return err == nil && ok == want
		}); err != nil {
			return err
		}
	}
	return nil
}

// sideViews says which node each side sees as leader (roles as each
// node reports them), for the partition's events.
func sideViews(ctx context.Context, t *Cluster, groups [][]string) string {
	rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	c, err := t.Refresh(rctx)
	cancel()
	if err != nil {
		return "sides' views unknown: " + err.Error()
	}
	var out []string
	for _, g := range groups {
		var leaders []string
		for _, name := range g {
			if n, err := c.Node(name); err == nil && !n.Down && (n.Role == launcher.RoleLeader || n.Role == launcher.RolePrimary) {
				leaders = append(leaders, name)
			}
		}
		v := "no leader"
		if len(leaders) > 0 {
			v = "leader " + joinNodes(leaders)
		}
		out = append(out, joinNodes(g)+": "+v)
	}
	return strings.Join(out, "; ")
}

func (f *partitionFault) WaitEffective(ctx context.Context, t *Cluster, _ []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		// no probe from inside a remote node: the rules in place on every
		// receiving host is what is waited for
		if err := waitOwnerOnHosts(ctx, hn, f.receivers(), f.owner, true); err != nil {
			return err
		}
		t.emit(event.Note, joinNodes(f.allNodes()), "partition holds (rules in place on the hosts): "+sideViews(ctx, t, f.groups), "")
		return nil
	}
	if err := waitReach(ctx, t, f.blocks, false); err != nil {
		return err
	}
	t.emit(event.Note, joinNodes(f.allNodes()), "partition holds (measured): "+sideViews(ctx, t, f.groups), "")
	return nil
}

func (f *partitionFault) Restore(ctx context.Context, t *Cluster, _ []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		return f.restoreOnHosts(ctx, t, hn)
	}
	nw, _, err := networkOf(t)
	if err != nil {
		return err
	}
	if _, err := nw.RemoveRules(f.owner); err != nil {
		return err
	}
	t.emit(event.Note, joinNodes(f.allNodes()), "partition healed: "+f.describe(), "")
	return nil
}

func (f *partitionFault) WaitRestored(ctx context.Context, t *Cluster, _ []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		return waitOwnerOnHosts(ctx, hn, f.receivers(), f.owner, false)
	}
	return waitReach(ctx, t, f.blocks, true)
}

// ---- heal ----

// healFault removes network faults: every one (heal, heal all) or those on
// the selected nodes.
type healFault struct {
	noLifecycle
	nodes  map[string]bool // nil: all
	blocks []block
}

func (*healFault) Name() Action  { return ActionHeal }
func (*healFault) Repairs() bool { return true }

func (f *healFault) checkArg(arg string) error {
	if s := strings.TrimSpace(arg); s == "" || s == SelectAll {
		return nil
	}
	_, err := parseSelector(strings.TrimSpace(arg))
	return err
}

func (f *healFault) resolveArg(c *launcher.Cluster, r *Resolver, arg string) ([]string, error) {
	s := strings.TrimSpace(arg)
	if s == "" || s == SelectAll {
		out := c.NodeNames()
		sortNames(out)
		return out, nil
	}
	nodes, err := r.Resolve(c, s)
	if err != nil {
		return nil, err
	}
	nodes = onMachines(c, nodes)
	f.nodes = map[string]bool{}
	for _, n := range nodes {
		f.nodes[n] = true
	}
	return nodes, nil
}

func (f *healFault) Inject(ctx context.Context, t *Cluster, _ []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		return f.healOnHosts(ctx, t, hn)
	}
	nw, st, err := networkOf(t)
	if err != nil {
		return err
	}
	owners := map[string]bool{}
	for _, r := range st.Rules {
		if f.nodes == nil || f.nodes[r.Node] {
			owners[r.Owner] = true
		}
	}
	// Probe afterwards: every pair that a removed drop rule blocked.
	for _, r := range st.Rules {
		if r.Kind != netns.RuleNFTable || !owners[r.Owner] || !strings.HasPrefix(r.What, "drop from ") {
			continue
		}
		for _, ip := range strings.Split(strings.TrimPrefix(r.What, "drop from "), ",") {
			if from, ok := st.NodeByIP(ip); ok {
				f.blocks = append(f.blocks, block{from: []string{from.Name}, to: []string{r.Node}})
				break
			}
		}
	}
	var errs []error
	var removed []string
	for _, o := range sortedOwners(owners) {
		rs, err := nw.RemoveRules(o)
		errs = append(errs, err)
		for _, r := range rs {
			removed = append(removed, r.Node+": "+r.What)
		}
	}
	detail := "nothing to heal"
	if len(removed) > 0 {
		detail = "healed " + strings.Join(removed, "; ")
	}
	t.emit(event.Note, "", detail, "")
	return errors.Join(errs...)
}

func sortedOwners(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (f *healFault) WaitEffective(ctx context.Context, t *Cluster, _ []string) error {
	if len(f.blocks) == 0 {
		return nil // nothing was healed, or on inventory hosts: the rules removed is the effect
	}
	return waitReach(ctx, t, f.blocks, true)
}

func (*healFault) Restore(context.Context, *Cluster, []string) error      { return nil }
func (*healFault) WaitRestored(context.Context, *Cluster, []string) error { return nil }

// healNetwork removes every network fault of t's cluster, if it has a
// network (for RestoreAll).
func healNetwork(ctx context.Context, t *Cluster, label string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return nil // no network fault could have been put on these hosts
		}
		found, err := hostsHaveFaults(ctx, hn)
		if err != nil {
			t.emit(event.Note, "", "could not look for network faults on the hosts: "+err.Error(), label)
		}
		if !found {
			return nil
		}
		_, err = execute(ctx, t, &healFault{}, builtinKind(ActionHeal), t.Snapshot().NodeNames(), "heal all", label)
		return err
	}
	if t.Snapshot().Options[netns.OptNetState] == "" {
		return nil
	}
	_, st, err := networkOf(t)
	if err != nil || len(st.Rules) == 0 {
		return err
	}
	_, err = execute(ctx, t, &healFault{}, builtinKind(ActionHeal), t.Snapshot().NodeNames(), "heal all", label)
	return err
}

// ---- loss and bandwidth ----

// linkFault is loss or bandwidth on the selected nodes.
type linkFault struct {
	noLifecycle
	action Action
	loss   float64 // loss: fraction
	rate   uint64  // bandwidth: bytes per second
	delay  netns.DelaySpec
	owner  string
}

func (f *linkFault) Name() Action { return f.action }

// ParseLoss reads a loss: "20%" or a fraction "0.2".
func ParseLoss(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("loss %q: want a percentage like 20%% or a fraction like 0.2", s)
	}
	if pct || v > 1 {
		v /= 100
	}
	if !(v > 0 && v <= 1) {
		return 0, fmt.Errorf("loss %q: want more than 0 and at most 100%%", s)
	}
	return v, nil
}

// ParseRate reads a rate in tc's units: bit, kbit, mbit, gbit (bits per
// second) or bps, kbps, mbps (bytes per second); it returns bytes per second.
func ParseRate(s string) (uint64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   float64
	}{
		{"gbit", 1e9 / 8}, {"mbit", 1e6 / 8}, {"kbit", 1e3 / 8}, {"bit", 1.0 / 8},
		{"gbps", 1e9}, {"mbps", 1e6}, {"kbps", 1e3}, {"bps", 1},
	}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v <= 0 {
				break
			}
			return uint64(v * u.mult), nil
		}
	}
	return 0, fmt.Errorf("rate %q: want a number with a unit: kbit, mbit, gbit (bits/s) or kbps, mbps (bytes/s), e.g. 1mbit", s)
}

func (f *linkFault) parseValue(v string) error {
	if v == "" {
		switch f.action {
		case ActionLoss:
			return errors.New("loss needs a node and a percentage, e.g. `loss n2 20%`")
		case ActionDelay:
			return errors.New("delay needs a node and a duration, e.g. `delay n1 200ms±20ms`")
		}
		return errors.New("bandwidth needs a node and a rate, e.g. `bandwidth n3 1mbit`")
	}
	var err error
	switch f.action {
	case ActionLoss:
		f.loss, err = ParseLoss(v)
	case ActionDelay:
		f.delay, err = netns.ParseDelay(v)
	default:
		f.rate, err = ParseRate(v)
		if err == nil && f.rate < 1000 {
			err = fmt.Errorf("rate %q: at least 8kbit", v)
		}
	}
	return err
}

func (f *linkFault) checkArg(arg string) error {
	sel, v := splitArg(arg)
	if _, err := parseSelector(sel); err != nil {
		return err
	}
	return f.parseValue(v)
}

func (f *linkFault) resolveArg(c *launcher.Cluster, r *Resolver, arg string) ([]string, error) {
	sel, v := splitArg(arg)
	if err := f.parseValue(v); err != nil {
		return nil, err
	}
	nodes, err := r.Resolve(c, sel)
	return onMachines(c, nodes), err
}

func (f *linkFault) Prepare(_ context.Context, t *Cluster, nodes []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if _, ok := hn[n]; !ok {
				return fmt.Errorf("no node %s on the inventory hosts", n)
			}
		}
		f.owner = newOwner(f.action)
		return nil
	}
	_, st, err := networkOf(t)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if _, err := st.Node(n); err != nil {
			return err
		}
	}
	f.owner = newOwner(f.action)
	return nil
}

func (f *linkFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		return f.injectOnHosts(ctx, t, hn, nodes)
	}
	nw, _, err := networkOf(t)
	if err != nil {
		return err
	}
	c := t.Snapshot()
	var errs []error
	for _, n := range nodes {
		switch f.action {
		case ActionLoss:
			err = nw.AddLoss(n, f.owner, f.loss)
		case ActionDelay:
			if t.Env == nil {
				err = errors.New("delay needs an Env to start its relay")
				break
			}
			logFile := filepath.Join(c.Dir, n, "delay-"+f.owner+".log")
			spawn := func(argv []string, log string) (int, error) { return t.Env.Spawn(argv, log, c.Detached) }
			err = nw.AddDelay(ctx, n, f.owner, t.Env.Self, logFile, f.delay, spawn)
		default:
			err = nw.AddBandwidth(n, f.owner, f.rate)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	detail := fmt.Sprintf("loss %.2f%% of the packets arriving", f.loss*100)
	switch f.action {
	case ActionBandwidth:
		detail = "bandwidth limited to " + humanize.Bytes(f.rate) + "/s (" + strconv.FormatUint(f.rate*8/1000, 10) + " kbit/s) sent"
	case ActionDelay:
		detail = "data sent delayed by " + f.delay.String() + " (relay)"
	}
	t.emit(event.Note, joinNodes(nodes), detail, "")
	return errors.Join(errs...)
}

// WaitEffective checks the rules are in place (loss and rate limits cannot
// be proven by one probe).
func (f *linkFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		return waitOwnerOnHosts(ctx, hn, nodes, f.owner, true)
	}
	_, st, err := networkOf(t)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range st.Rules {
		if r.Owner == f.owner {
			have[r.Node] = true
		}
	}
	for _, n := range nodes {
		if !have[n] {
			return fmt.Errorf("%s on %s is not recorded in place", f.action, n)
		}
	}
	return nil
}

func (f *linkFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	if hn, remote, err := hostNet(t); remote {
		if err != nil {
			return err
		}
		var errs []error
		for _, n := range nodes {
			if _, err := hn[n].nf.RemoveNet(ctx, f.owner); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n, err))
			}
		}
		return errors.Join(errs...)
	}
	nw, _, err := networkOf(t)
	if err != nil {
		return err
	}
	_, err = nw.RemoveRules(f.owner)
	return err
}

func (f *linkFault) WaitRestored(context.Context, *Cluster, []string) error { return nil }
