package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/netns"
)

// Gray network fault actions (docs/faults.md, "Gray network faults"): they
// need every node in a network namespace of its own, as the other network
// faults, and root.
const (
	ActionBlackholeSend    Action = "blackhole-send"    // what the node sends to its peers is dropped silently
	ActionBlackholeRecv    Action = "blackhole-recv"    // what the node receives from its peers is dropped
	ActionPartialPartition Action = "partial-partition" // pairs of nodes cut off from each other, or a Jepsen shape
	ActionDuplicate        Action = "duplicate"         // a share of what the node sends goes out twice
	ActionReorder          Action = "reorder"           // a share of what the node sends jumps the queue (netem)
	ActionCorrupt          Action = "corrupt"           // a share of what the node sends has a bit flipped (netem)
	ActionTCPReset         Action = "tcp-reset"         // the node's established TCP connections are aborted with RST
)

// registerGray adds the gray network kinds' constructors to r.
func registerGray(r *Registry) {
	for _, a := range []Action{ActionBlackholeSend, ActionBlackholeRecv, ActionDuplicate, ActionReorder, ActionCorrupt, ActionTCPReset} {
		r.m[a] = func() Fault { return &grayFault{action: a} }
	}
	r.m[ActionPartialPartition] = func() Fault { return &partialPartitionFault{} }
}

// isGrayAction reports whether a is a gray network kind.
func isGrayAction(a Action) bool { return slices.Contains(kind.GrayNetKinds, string(a)) }

// CheckGray refuses, before a run, the gray network faults of sched that
// cannot work on it: without a network namespace per node (opts: net:
// netns), without root, reorder and corrupt on a kernel without netem
// (saying how that was found out), tcp-reset on a kernel that cannot
// destroy sockets, and partial-partition primaries on a target without
// primaries. victim is the target's natural victim selector (the targets
// registry's DefaultVictim): a target whose victim is leader or primary
// has nodes of that role; the others (txkv, cassandra: random) have none.
func CheckGray(sched Schedule, opts map[string]string, victim string) error {
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("schedule step %d (%s): %s", i+1, sched[i], fmt.Sprintf(format, args...)))
	}
	var netem *netns.KernelFeature
	for i, st := range sched {
		if !isGrayAction(st.Action) {
			continue
		}
		if !netns.Wanted(opts) {
			bad(i, "%s needs every node in a network namespace of its own: set target options net: netns (`faultbench cluster up --net`; docs/faults.md)", st.Action)
		}
		if err := netns.RequireRoot(); err != nil {
			bad(i, "%s changes nftables rules and qdiscs in the nodes' namespaces: it needs root", st.Action)
		}
		switch st.Action {
		case ActionReorder, ActionCorrupt:
			if netem == nil {
				f := netns.Netem()
				netem = &f
			}
			if !netem.Have {
				bad(i, "%s needs the kernel's netem qdisc (tc netem), which this kernel lacks: %s; duplicate works without it (nftables dup)", st.Action, netem.Why)
			}
		case ActionTCPReset:
			if f := netns.SockDestroy(); !f.Have {
				bad(i, "tcp-reset destroys sockets through sock_diag, which this kernel cannot: %s", f.Why)
			}
		case ActionPartialPartition:
			if strings.TrimSpace(st.Node) == shapePrimaries && victim != SelectLeader && victim != SelectPrimary {
				bad(i, "partial-partition primaries isolates the nodes with role leader or primary, and this target has no such role (its nodes are all alike: its natural victim is %q)", victim)
			}
		}
	}
	return errors.Join(errs...)
}

// grayNet returns the cluster network of t for a gray fault: local
// namespaces only, as root.
func grayNet(t *Cluster, a Action) (*netns.Network, *netns.State, error) {
	if _, remote, _ := hostNet(t); remote {
		return nil, nil, fmt.Errorf("%s on nodes on inventory hosts is not supported: it acts in this machine's network namespaces", a)
	}
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("%s changes nftables rules in the nodes' network namespaces: it needs root", a)
	}
	return networkOf(t)
}

// ---- blackhole-send, blackhole-recv, duplicate, reorder, corrupt, tcp-reset ----

// grayFault acts on the selected nodes towards their peers (the other
// nodes, or those of the peers parameter, and the client if asked).
type grayFault struct {
	noLifecycle
	action  Action
	peerSel string // peers parameter; "" = every other node
	client  bool
	percent int
	delay   time.Duration

	c       *launcher.Cluster // as the node argument was resolved against
	r       *Resolver
	targets map[string][]string // node -> peer addresses
	peers   map[string][]string // node -> peer machines (no client)
	owner   string
	reset   int // tcp-reset: connections reset
}

func (f *grayFault) Name() Action { return f.action }

// ConfigureStep implements StepConfigurer.
func (f *grayFault) ConfigureStep(st Step, _ string) error {
	v := st.Values
	f.peerSel = strings.TrimSpace(v.String("peers"))
	f.client, _ = v.Bool("client")
	f.percent = v.Int("percent")
	f.delay = v.Duration("delay")
	if f.peerSel != "" {
		if _, err := parseSelector(f.peerSel); err != nil {
			return fmt.Errorf("peers: %w", err)
		}
	}
	return nil
}

func (f *grayFault) checkArg(arg string) error {
	_, err := parseSelector(strings.TrimSpace(arg))
	return err
}

func (f *grayFault) resolveArg(c *launcher.Cluster, r *Resolver, arg string) ([]string, error) {
	nodes, err := r.Resolve(c, strings.TrimSpace(arg))
	if err != nil {
		return nil, err
	}
	f.c, f.r = c, r
	return onMachines(c, nodes), nil
}

// percentOr is the percent parameter, def when not given.
func (f *grayFault) percentOr(def int) int {
	if f.percent > 0 {
		return f.percent
	}
	return def
}

func (f *grayFault) Prepare(_ context.Context, t *Cluster, nodes []string) error {
	_, st, err := grayNet(t, f.action)
	if err != nil {
		return err
	}
	switch f.action {
	case ActionReorder, ActionCorrupt:
		if nf := netns.Netem(); !nf.Have {
			return fmt.Errorf("%s needs the kernel's netem qdisc: %s", f.action, nf.Why)
		}
	}
	c, r := f.c, f.r
	if c == nil {
		c = t.Snapshot()
	}
	if r == nil {
		r = NewResolver(nil)
	}
	_, all := c.Machines()
	var sel []string
	if f.peerSel != "" {
		ns, err := r.Resolve(c, f.peerSel)
		if err != nil {
			return fmt.Errorf("peers %q: %w", f.peerSel, err)
		}
		sel = onMachines(c, ns)
	}
	f.targets, f.peers = map[string][]string{}, map[string][]string{}
	for _, n := range nodes {
		if _, err := st.Node(n); err != nil {
			return err
		}
		cand := sel
		if f.peerSel == "" {
			cand = all
		}
		var ps []string
		for _, p := range cand {
			if p != n {
				ps = append(ps, p)
			}
		}
		sortNames(ps)
		ips, err := ipsOf(st, ps)
		if err != nil {
			return err
		}
		if f.client {
			ips = append(ips, st.HostIP)
		}
		if len(ips) == 0 && f.action != ActionReorder && f.action != ActionCorrupt {
			return fmt.Errorf("%s on %s: no peer to act towards (peers %q)", f.action, n, f.peerSel)
		}
		f.targets[n], f.peers[n] = ips, ps
	}
	f.owner = newOwner(f.action)
	return nil
}

func (f *grayFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	nw, _, err := grayNet(t, f.action)
	if err != nil {
		return err
	}
	var errs []error
	var details []string
	for _, n := range nodes {
		ips := f.targets[n]
		var err error
		switch f.action {
		case ActionBlackholeSend:
			err = nw.AddBlackholeSend(n, f.owner, ips)
		case ActionBlackholeRecv:
			err = nw.AddBlackholeRecv(n, f.owner, ips)
		case ActionDuplicate:
			err = nw.AddDuplicate(n, f.owner, float64(f.percentOr(10))/100, ips)
		case ActionReorder:
			err = nw.AddNetem(n, f.owner, netns.NetemSpec{Reorder: float64(f.percentOr(25)) / 100, Delay: f.delayOr(10 * time.Millisecond)})
		case ActionCorrupt:
			err = nw.AddNetem(n, f.owner, netns.NetemSpec{Corrupt: float64(f.percentOr(5)) / 100})
		case ActionTCPReset:
			var conns []netns.Conn
			conns, err = nw.ResetTCP(ctx, n, ips)
			f.reset += len(conns)
			details = append(details, fmt.Sprintf("%s: %d connections reset", n, len(conns)))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
	}
	t.emit(event.Note, joinNodes(nodes), f.describe(nodes, details), "")
	return errors.Join(errs...)
}

func (f *grayFault) delayOr(def time.Duration) time.Duration {
	if f.delay > 0 {
		return f.delay
	}
	return def
}

// describe renders what the fault does, for its note event.
func (f *grayFault) describe(nodes []string, details []string) string {
	towards := "every other node"
	if f.peerSel != "" {
		towards = "peers " + f.peerSel
	}
	if f.client {
		towards += " and the client"
	}
	switch f.action {
	case ActionBlackholeSend:
		return "blackhole-send: what " + joinNodes(nodes) + " sends to " + towards + " is dropped (nftables netdev egress); it still receives"
	case ActionBlackholeRecv:
		return "blackhole-recv: what " + joinNodes(nodes) + " receives from " + towards + " is dropped (nftables input); it still sends"
	case ActionDuplicate:
		return fmt.Sprintf("duplicate: %d%% of what %s sends to %s goes out twice (nftables dup)", f.percentOr(10), joinNodes(nodes), towards)
	case ActionReorder:
		return fmt.Sprintf("reorder: %d%% of what %s sends goes out at once, the rest %v later (netem)", f.percentOr(25), joinNodes(nodes), f.delayOr(10*time.Millisecond))
	case ActionCorrupt:
		return fmt.Sprintf("corrupt: %d%% of what %s sends has a bit flipped (netem)", f.percentOr(5), joinNodes(nodes))
	}
	return "tcp-reset towards " + towards + ": " + strings.Join(details, "; ")
}

// blocks are the directed pairs a blackhole cuts, for probes: one per node.
func (f *grayFault) blocks(nodes []string) []block {
	var out []block
	for _, n := range nodes {
		ps := f.peers[n]
		if len(ps) == 0 {
			continue
		}
		switch f.action {
		case ActionBlackholeSend: // a connect from n gets no SYN-ACK back... its SYN is dropped
			out = append(out, block{from: []string{n}, to: ps[:1]})
		case ActionBlackholeRecv: // a connect to n is dropped on arrival
			out = append(out, block{from: ps[:1], to: []string{n}})
		}
	}
	return out
}

// WaitEffective measures a blackhole (a TCP connect across it times out)
// and checks the rules of the others are recorded in place; tcp-reset is
// done once its connections are aborted.
func (f *grayFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	if f.action == ActionTCPReset {
		return nil
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
	if bs := f.blocks(nodes); len(bs) > 0 {
		return waitReach(ctx, t, bs, false)
	}
	return nil
}

func (f *grayFault) Restore(_ context.Context, t *Cluster, _ []string) error {
	if f.action == ActionTCPReset {
		return nil
	}
	nw, _, err := networkOf(t)
	if err != nil {
		return err
	}
	_, err = nw.RemoveRules(f.owner)
	return err
}

func (f *grayFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	if bs := f.blocks(nodes); len(bs) > 0 && f.action != ActionTCPReset {
		return waitReach(ctx, t, bs, true)
	}
	return nil
}

// ---- partial-partition ----

// Shapes of partial-partition (kind.PartitionShapes).
const (
	shapeMajority      = "majority"
	shapeMajoritiesRng = "majorities-ring"
	shapeBridge        = "bridge"
	shapeMinorityThird = "minority-third"
	shapePrimaries     = "primaries"
)

// partialPartitionFault cuts chosen pairs of nodes, or the pairs of a
// shape, off from each other: every node drops what arrives from the
// nodes it must not hear (drops: receiver -> senders).
type partialPartitionFault struct {
	noLifecycle
	drops map[string][]string
	desc  string
	owner string
}

func (*partialPartitionFault) Name() Action { return ActionPartialPartition }

// parsePairs reads "[[n1,n2],[n2,n3]]" (spaces allowed).
func parsePairs(s string) ([][2]string, error) {
	in := strings.Join(strings.Fields(s), "")
	inner, ok := strings.CutPrefix(in, "[[")
	if ok {
		inner, ok = strings.CutSuffix(inner, "]]")
	}
	if !ok || inner == "" {
		return nil, fmt.Errorf("partial-partition %q: want a shape (%s) or pairs like [[n1,n2],[n2,n3]]", s, strings.Join(kind.PartitionShapes, ", "))
	}
	var out [][2]string
	for _, p := range strings.Split(inner, "],[") {
		ab := strings.Split(p, ",")
		if len(ab) != 2 || !validName(ab[0]) || !validName(ab[1]) {
			return nil, fmt.Errorf("partial-partition %q: pair [%s]: want two node names", s, p)
		}
		if ab[0] == ab[1] {
			return nil, fmt.Errorf("partial-partition %q: pair [%s] names one node twice", s, p)
		}
		out = append(out, [2]string{ab[0], ab[1]})
	}
	return out, nil
}

func (f *partialPartitionFault) checkArg(arg string) error {
	s := strings.TrimSpace(arg)
	if kind.ParseShape(s) == nil {
		return nil
	}
	_, err := parsePairs(s)
	return err
}

func (f *partialPartitionFault) resolveArg(c *launcher.Cluster, r *Resolver, arg string) ([]string, error) {
	s := strings.TrimSpace(arg)
	_, all := c.Machines()
	sortNames(all)
	var leaders []string // leader or primary machines, leader first
	leaders = append(leaders, onMachines(c, c.WithRole(launcher.RoleLeader))...)
	for _, p := range onMachines(c, c.WithRole(launcher.RolePrimary)) {
		if !slices.Contains(leaders, p) {
			leaders = append(leaders, p)
		}
	}
	var cut [][2]string // undirected pairs
	var oneway [][2]string
	var err error
	if kind.ParseShape(s) == nil {
		cut, oneway, f.desc, err = shapePairs(s, all, leaders)
	} else {
		var ps [][2]string
		if ps, err = parsePairs(s); err == nil {
			for _, p := range ps {
				a, aerr := r.Resolve(c, p[0])
				b, berr := r.Resolve(c, p[1])
				if err = errors.Join(aerr, berr); err != nil {
					break
				}
				ma, mb := onMachines(c, a), onMachines(c, b)
				if len(ma) != 1 || len(mb) != 1 || ma[0] == mb[0] {
					err = fmt.Errorf("pair [%s,%s]: want two distinct nodes", p[0], p[1])
					break
				}
				cut = append(cut, [2]string{ma[0], mb[0]})
			}
			f.desc = "pairs cut: " + pairsText(cut)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("partial-partition %s: %w", s, err)
	}
	f.drops = map[string][]string{}
	add := func(to, from string) {
		if !slices.Contains(f.drops[to], from) {
			f.drops[to] = append(f.drops[to], from)
		}
	}
	for _, p := range cut {
		add(p[0], p[1])
		add(p[1], p[0])
	}
	for _, p := range oneway { // p[0] does not hear p[1]
		add(p[0], p[1])
	}
	if len(f.drops) == 0 {
		return nil, fmt.Errorf("partial-partition %s: cuts nothing on %d nodes", s, len(all))
	}
	out := sortedKeys(f.drops)
	return out, nil
}

// pairsText renders pairs as "n1-n2, n2-n3".
func pairsText(ps [][2]string) string {
	var out []string
	for _, p := range ps {
		out = append(out, p[0]+"-"+p[1])
	}
	return strings.Join(out, ", ")
}

// shapePairs computes the pairs a shape cuts on the machines all (sorted
// by name) with the leaders (leader or primary machines, leader first):
// cut are pairs cut both ways, oneway pairs [a,b] where only a does not
// hear b. docs/faults.md defines every shape.
func shapePairs(shape string, all, leaders []string) (cut, oneway [][2]string, desc string, err error) {
	n := len(all)
	cutGroups := func(groups ...[]string) {
		for i := range groups {
			for j := i + 1; j < len(groups); j++ {
				for _, a := range groups[i] {
					for _, b := range groups[j] {
						cut = append(cut, [2]string{a, b})
					}
				}
			}
		}
	}
	// leaderFirst orders all with the leaders first, the rest by name
	leaderFirst := func() []string {
		out := append([]string(nil), leaders...)
		for _, m := range all {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
		return out
	}
	switch shape {
	case shapeMajority:
		if n < 2 {
			return nil, nil, "", fmt.Errorf("needs at least 2 nodes, the cluster has %d", n)
		}
		o := leaderFirst()
		minority, majority := sorted(o[:n/2]), sorted(o[n/2:])
		cutGroups(minority, majority)
		desc = "majority: " + joinNodes(minority) + " | " + joinNodes(majority)
	case shapeMinorityThird:
		k := (n - 1) / 3
		if k < 1 {
			return nil, nil, "", fmt.Errorf("needs at least 4 nodes (it cuts off floor((n-1)/3) of them), the cluster has %d", n)
		}
		o := leaderFirst()
		minority, rest := sorted(o[:k]), sorted(o[k:])
		cutGroups(minority, rest)
		desc = "minority-third: " + joinNodes(minority) + " | " + joinNodes(rest)
	case shapeBridge:
		if n < 3 {
			return nil, nil, "", fmt.Errorf("needs at least 3 nodes, the cluster has %d", n)
		}
		mid := n / 2
		a, b := all[:mid], all[mid+1:]
		cutGroups(a, b)
		desc = "bridge: " + joinNodes(a) + " | " + all[mid] + " | " + joinNodes(b) + " (" + all[mid] + " reaches both sides)"
	case shapeMajoritiesRng:
		if n < 3 {
			return nil, nil, "", fmt.Errorf("needs at least 3 nodes, the cluster has %d", n)
		}
		m := n/2 + 1
		hears := make([]map[string]bool, n)
		for i := range all {
			hears[i] = map[string]bool{}
			for j := 0; j < m; j++ {
				hears[i][all[((i-m/2+j)%n+n)%n]] = true
			}
		}
		var views []string
		for i, a := range all {
			var v []string
			for j, b := range all {
				if hears[i][b] {
					v = append(v, b)
					continue
				}
				if hears[j][a] {
					oneway = append(oneway, [2]string{a, b})
				} else if i < j {
					cut = append(cut, [2]string{a, b})
				}
			}
			views = append(views, a+" hears "+joinNodes(v))
		}
		desc = "majorities-ring: " + strings.Join(views, "; ")
	case shapePrimaries:
		if len(leaders) == 0 {
			return nil, nil, "", errors.New("no node has role leader or primary right now")
		}
		var rest []string
		for _, m := range all {
			if !slices.Contains(leaders, m) {
				rest = append(rest, m)
			}
		}
		groups := [][]string{rest}
		for _, l := range leaders {
			groups = append(groups, []string{l})
		}
		cutGroups(groups...)
		desc = "primaries: each of " + joinNodes(sorted(leaders)) + " alone | " + joinNodes(rest)
	default:
		return nil, nil, "", kind.ParseShape(shape)
	}
	return cut, oneway, desc, nil
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sortNames(out)
	return out
}

func (f *partialPartitionFault) Prepare(_ context.Context, t *Cluster, _ []string) error {
	_, st, err := grayNet(t, ActionPartialPartition)
	if err != nil {
		return err
	}
	for to, froms := range f.drops {
		for _, n := range append([]string{to}, froms...) {
			if _, err := st.Node(n); err != nil {
				return err
			}
		}
	}
	f.owner = newOwner(ActionPartialPartition)
	return nil
}

func (f *partialPartitionFault) Inject(_ context.Context, t *Cluster, nodes []string) error {
	nw, st, err := grayNet(t, ActionPartialPartition)
	if err != nil {
		return err
	}
	t.emit(event.Note, joinNodes(nodes), "partial-partition start: "+f.desc, "")
	var errs []error
	for _, to := range sortedKeys(f.drops) {
		ips, err := ipsOf(st, f.drops[to])
		if err == nil {
			err = nw.AddDrop(to, f.owner, ips)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", to, err))
		}
	}
	return errors.Join(errs...)
}

// probes are up to maxProbes directed pairs the partition cuts.
func (f *partialPartitionFault) probes() []block {
	const maxProbes = 4
	var out []block
	for _, to := range sortedKeys(f.drops) {
		for _, from := range f.drops[to] {
			if len(out) < maxProbes {
				out = append(out, block{from: []string{from}, to: []string{to}})
			}
		}
	}
	return out
}

func (f *partialPartitionFault) WaitEffective(ctx context.Context, t *Cluster, _ []string) error {
	return waitReach(ctx, t, f.probes(), false)
}

func (f *partialPartitionFault) Restore(_ context.Context, t *Cluster, nodes []string) error {
	nw, _, err := networkOf(t)
	if err != nil {
		return err
	}
	if _, err := nw.RemoveRules(f.owner); err != nil {
		return err
	}
	t.emit(event.Note, joinNodes(nodes), "partial-partition healed: "+f.desc, "")
	return nil
}

func (f *partialPartitionFault) WaitRestored(ctx context.Context, t *Cluster, _ []string) error {
	return waitReach(ctx, t, f.probes(), true)
}
