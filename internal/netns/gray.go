package netns

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Gray network faults: what a node sends dropped silently (blackhole-send),
// sent packets duplicated, and its TCP connections reset.

// RuleNFNetdev is an nftables table of family netdev in a node's namespace
// with an egress chain on its eth0: it acts on what the node sends after
// the node's IP stack, so the sender sees no error (a drop in the ip
// family's output hook would fail the sender's connect() with EPERM).
const RuleNFNetdev = "nft-netdev"

// ipv4Daddr matches IPv4 packets (netdev family: the protocol first) whose
// destination is ip.
func ipv4Daddr(ip net.IP) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyPROTOCOL, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(unix.ETH_P_IP)},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip},
	}
}

// egressTable creates table name (family netdev) in ns with an egress
// chain on the node's eth0 holding rules.
func egressTable(ns, name string, rules [][]expr.Any) error {
	h, err := handleIn(ns)
	if err != nil {
		return err
	}
	_, lerr := h.LinkByName(NodeLinkName)
	h.Close()
	if lerr != nil {
		return fmt.Errorf("%s in %s: %w", NodeLinkName, ns, lerr)
	}
	c, closeNS, err := nftIn(ns)
	if err != nil {
		return err
	}
	defer closeNS()
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: name})
	policy := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{
		Name: "egress", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookEgress, Priority: nftables.ChainPriorityFilter, Policy: &policy,
		Device: NodeLinkName,
	})
	for _, r := range rules {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("adding nftables table netdev %s in %s: %w", name, ns, err)
	}
	return nil
}

// removeNetdevTable deletes the netdev table name in ns if it exists.
func removeNetdevTable(ns, name string) error {
	c, closeNS, err := nftIn(ns)
	if err != nil {
		return err
	}
	defer closeNS()
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyNetdev)
	if err != nil {
		return fmt.Errorf("listing nftables netdev tables in %s: %w", ns, err)
	}
	for _, t := range tables {
		if t.Name == name {
			c.DelTable(t)
			if err := c.Flush(); err != nil {
				return fmt.Errorf("deleting nftables table netdev %s in %s: %w", name, ns, err)
			}
		}
	}
	return nil
}

// parseIPv4s parses addresses for a rule.
func parseIPv4s(what string, addrs []string) ([]net.IP, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s: no addresses", what)
	}
	out := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		ip := net.ParseIP(a).To4()
		if ip == nil {
			return nil, fmt.Errorf("%s %q: not an IPv4 address", what, a)
		}
		out = append(out, ip)
	}
	return out, nil
}

// AddBlackholeSend makes node drop every IPv4 packet it sends to the
// addresses to, silently: an nftables netdev table with an egress chain on
// its eth0 (after the node's IP stack, so its sockets see loss, not an
// error). What it receives is untouched. owner names the fault.
func (nw *Network) AddBlackholeSend(node, owner string, to []string) error {
	ips, err := parseIPv4s("blackhole-send to", to)
	if err != nil {
		return err
	}
	var rules [][]expr.Any
	for _, ip := range ips {
		rules = append(rules, append(ipv4Daddr(ip), &expr.Verdict{Kind: expr.VerdictDrop}))
	}
	r := Rule{Kind: RuleNFNetdev, Node: node, Name: TableName(owner), Owner: owner, What: "blackhole-send to " + strings.Join(to, ",")}
	return nw.addRuleFor(node, &r, nil, func() error { return egressTable(r.NS, r.Name, rules) })
}

// AddBlackholeRecv makes node drop every IPv4 packet arriving from the
// addresses from (its ip input hook): the same rule as a partition's on
// the receiving side, described as a blackhole.
func (nw *Network) AddBlackholeRecv(node, owner string, from []string) error {
	ips, err := parseIPv4s("blackhole-recv from", from)
	if err != nil {
		return err
	}
	var rules [][]expr.Any
	for _, ip := range ips {
		rules = append(rules, []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip},
		})
	}
	// "drop from" first: heal probes the pairs such a rule blocked
	r := Rule{Kind: RuleNFTable, Node: node, Name: TableName(owner), Owner: owner, What: "drop from " + strings.Join(from, ",") + " (blackhole-recv)"}
	return nw.addRuleFor(node, &r, nil, func() error { return inputTable(r.NS, r.Name, rules) })
}

// AddDuplicate makes node send a copy of the given fraction (0 < p <= 1,
// resolution 1/10000) of the IPv4 packets it sends to the addresses to
// (all it sends when to is empty): nftables `dup to eth0` in a netdev
// egress chain. A copy passes the chain again, so it may be copied once
// more (the kernel stops at two levels): a packet goes out (1 + p)²
// times on average (measured: at p = 1 four copies arrive).
func (nw *Network) AddDuplicate(node, owner string, p float64, to []string) error {
	if !(p > 0 && p <= 1) {
		return fmt.Errorf("duplicate %v: want a fraction in (0, 1]", p)
	}
	n := uint32(p*10000 + 0.5)
	if n == 0 {
		n = 1
	}
	h, err := nw.State()
	if err != nil {
		return err
	}
	nd, err := h.Node(node)
	if err != nil {
		return err
	}
	link, err := linkIndexIn(nd.NS, NodeLinkName)
	if err != nil {
		return err
	}
	dup := func(match []expr.Any) []expr.Any {
		return append(match,
			&expr.Numgen{Register: 1, Modulus: 10000, Type: unix.NFT_NG_RANDOM},
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binaryutil.BigEndian.PutUint32(n)},
			&expr.Immediate{Register: 2, Data: binaryutil.NativeEndian.PutUint32(uint32(link))},
			&expr.Dup{RegDev: 2, IsRegDevSet: true},
		)
	}
	var rules [][]expr.Any
	what := fmt.Sprintf("duplicate %.2f%% of sent packets", float64(n)/100)
	if len(to) == 0 {
		rules = append(rules, dup([]expr.Any{
			&expr.Meta{Key: expr.MetaKeyPROTOCOL, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(unix.ETH_P_IP)},
		}))
	} else {
		ips, err := parseIPv4s("duplicate to", to)
		if err != nil {
			return err
		}
		for _, ip := range ips {
			rules = append(rules, dup(ipv4Daddr(ip)))
		}
		what += " to " + strings.Join(to, ",")
	}
	r := Rule{Kind: RuleNFNetdev, Node: node, Name: TableName(owner), Owner: owner, What: what}
	return nw.addRuleFor(node, &r, nil, func() error { return egressTable(r.NS, r.Name, rules) })
}

// linkIndexIn returns the index of link name in namespace ns.
func linkIndexIn(ns, name string) (int, error) {
	h, err := handleIn(ns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("%s in %s: %w", name, ns, err)
	}
	return l.Attrs().Index, nil
}

// Conn is one TCP connection of a node, as sock_diag reports it.
type Conn struct {
	Local, Remote string // ip:port
}

// TCPConns lists the established TCP connections in node's namespace whose
// remote address is one of remotes (every one when remotes is empty).
func (nw *Network) TCPConns(node string, remotes []string) ([]Conn, error) {
	st, err := nw.State()
	if err != nil {
		return nil, err
	}
	nd, err := st.Node(node)
	if err != nil {
		return nil, err
	}
	socks, err := tcpSockets(nd.NS)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, r := range remotes {
		want[r] = true
	}
	var out []Conn
	for _, s := range socks {
		if s.State != tcpEstablished || (len(want) > 0 && !want[s.ID.Destination.String()]) {
			continue
		}
		out = append(out, Conn{
			Local:  net.JoinHostPort(s.ID.Source.String(), fmt.Sprint(s.ID.SourcePort)),
			Remote: net.JoinHostPort(s.ID.Destination.String(), fmt.Sprint(s.ID.DestinationPort)),
		})
	}
	return out, nil
}

// tcpEstablished is TCP_ESTABLISHED in sock_diag's states.
const tcpEstablished = 1

// diagHandle returns a netlink handle for sock_diag in namespace ns.
func diagHandle(ns string) (*netlink.Handle, error) {
	h, err := vnetns.GetFromName(ns)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag in namespace %s: %w", ns, err)
	}
	return nh, nil
}

func tcpSockets(ns string) ([]*netlink.Socket, error) {
	h, err := diagHandle(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	socks, err := h.SocketDiagTCP(unix.AF_INET)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing TCP sockets in %s: %w", ns, err)
	}
	return socks, nil
}

// ResetTCP aborts node's established TCP connections whose remote address
// is one of remotes (every one when remotes is empty), as `ss -K` does:
// sock_diag's SOCK_DESTROY (the kernel needs CONFIG_INET_DIAG_DESTROY)
// from inside the node's namespace. The kernel closes each socket with
// ECONNABORTED for its owner and sends the peer a RST. It leaves nothing
// behind (no rule): the database reconnects at once. It returns the
// connections reset.
func (nw *Network) ResetTCP(ctx context.Context, node string, remotes []string) ([]Conn, error) {
	conns, err := nw.TCPConns(node, remotes)
	if err != nil {
		return nil, err
	}
	st, err := nw.State()
	if err != nil {
		return nil, err
	}
	nd, err := st.Node(node)
	if err != nil {
		return nil, err
	}
	h, err := diagHandle(nd.NS)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var done []Conn
	var errs []error
	for _, c := range conns {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		l, lerr := net.ResolveTCPAddr("tcp4", c.Local)
		r, rerr := net.ResolveTCPAddr("tcp4", c.Remote)
		if lerr != nil || rerr != nil {
			continue
		}
		if err := h.SocketDestroy(l, r); err != nil {
			if errors.Is(err, unix.ENOENT) { // closed meanwhile
				continue
			}
			if errors.Is(err, unix.EOPNOTSUPP) {
				return done, fmt.Errorf("resetting TCP connections in %s: the kernel cannot destroy sockets (CONFIG_INET_DIAG_DESTROY is not set): %w", nd.NS, err)
			}
			errs = append(errs, fmt.Errorf("resetting %s -> %s: %w", c.Local, c.Remote, err))
			continue
		}
		done = append(done, c)
	}
	return done, errors.Join(errs...)
}

// KernelFeature is what the running kernel offers a fault that needs it.
type KernelFeature struct {
	Name   string // e.g. "sch_netem"
	Config string // its kernel option, e.g. CONFIG_NET_SCH_NETEM
	Have   bool
	Why    string // how it was found out
}

// kernelConfig is where the running kernel's configuration is exposed.
const kernelConfig = "/proc/config.gz"

// Netem reports whether the running kernel has the netem qdisc (tc netem:
// duplicate, reorder, corrupt), from its configuration (/proc/config.gz:
// CONFIG_NET_SCH_NETEM=y, or =m with the module present), else by adding
// one to the loopback of a throwaway namespace (root only).
func Netem() KernelFeature {
	f := KernelFeature{Name: "sch_netem", Config: "CONFIG_NET_SCH_NETEM"}
	if v, err := configValue(kernelConfig, f.Config); err == nil {
		switch v {
		case "y":
			f.Have, f.Why = true, kernelConfig+" has "+f.Config+"=y"
		case "m":
			rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
			_, serr := os.Stat("/lib/modules/" + strings.TrimSpace(string(rel)) + "/kernel/net/sched/sch_netem.ko")
			f.Have = serr == nil
			f.Why = kernelConfig + " has " + f.Config + "=m"
			if !f.Have {
				f.Why += ", but the module is not installed"
			}
		default:
			f.Why = kernelConfig + ": " + f.Config + " is not set (tc qdisc add ... netem fails with \"Specified qdisc kind is unknown\")"
		}
		return f
	}
	if RequireRoot() != nil {
		f.Why = "the kernel's configuration is not readable (" + kernelConfig + ") and probing needs root"
		return f
	}
	f.Have, f.Why = probeNetem()
	return f
}

// configValue returns the value of key in a gzip-compressed kernel
// configuration ("" when it is not set).
func configValue(path, key string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(zr, 16<<20))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", nil
}

// probeNetem adds a netem qdisc to the loopback of a fresh, unnamed
// namespace (gone when its last handle closes).
func probeNetem() (bool, string) {
	type res struct {
		ok  bool
		why string
	}
	ch := make(chan res, 1)
	go func() {
		// this thread ends in another namespace: it is not unlocked, so it
		// dies with the goroutine
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			ch <- res{false, "probe: " + err.Error()}
			return
		}
		defer orig.Close()
		ns, err := vnetns.New()
		if err != nil {
			ch <- res{false, "probe: new namespace: " + err.Error()}
			return
		}
		defer ns.Close()
		defer func() { _ = vnetns.Set(orig) }()
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			ch <- res{false, "probe: " + err.Error()}
			return
		}
		q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
			netlink.NetemQdiscAttrs{Duplicate: 1})
		if err := netlink.QdiscAdd(q); err != nil {
			ch <- res{false, "adding a netem qdisc in a throwaway namespace failed: " + err.Error()}
			return
		}
		ch <- res{true, "a netem qdisc could be added in a throwaway namespace"}
	}()
	r := <-ch
	return r.ok, r.why
}

// SockDestroy reports whether the running kernel can destroy sockets
// through sock_diag (CONFIG_INET_DIAG_DESTROY), which ResetTCP needs.
func SockDestroy() KernelFeature {
	f := KernelFeature{Name: "sock_diag destroy", Config: "CONFIG_INET_DIAG_DESTROY"}
	v, err := configValue(kernelConfig, f.Config)
	switch {
	case err != nil:
		// unknown: ResetTCP says so if the kernel refuses
		f.Have, f.Why = true, "the kernel's configuration is not readable ("+kernelConfig+"); assumed"
	case v == "y":
		f.Have, f.Why = true, kernelConfig+" has "+f.Config+"=y"
	default:
		f.Why = kernelConfig + ": " + f.Config + " is not set (`ss -K` cannot kill sockets either)"
	}
	return f
}

// RuleNetem is a netem root qdisc on a node's eth0.
const RuleNetem = "netem"

// netemHandle is the handle of the netem root qdisc faultbench adds (fc:0).
var netemHandle = netlink.MakeHandle(0xfc, 0)

// NetemSpec is what a netem qdisc does to what a node sends.
type NetemSpec struct {
	Reorder float64       // fraction sent at once, ahead of the others (needs Delay)
	Delay   time.Duration // what the other packets wait
	Corrupt float64       // fraction with one bit flipped
}

// AddNetem puts a netem root qdisc (handle fc:) on node's eth0; the kernel
// must have sch_netem (Netem). A node has at most one netem qdisc, and a
// netem and a bandwidth limit (both root qdiscs) exclude each other.
func (nw *Network) AddNetem(node, owner string, spec NetemSpec) error {
	if f := Netem(); !f.Have {
		return fmt.Errorf("netem on %s: the kernel has no netem qdisc: %s", node, f.Why)
	}
	what := fmt.Sprintf("netem reorder %.2f%% delay %v", spec.Reorder*100, spec.Delay)
	if spec.Corrupt > 0 {
		what = fmt.Sprintf("netem corrupt %.2f%%", spec.Corrupt*100)
	}
	r := Rule{Kind: RuleNetem, Node: node, Name: NodeLinkName, Owner: owner, What: what}
	check := func(s *State) error {
		for _, o := range s.Rules {
			if o.Node == node && (o.Kind == RuleTBF || o.Kind == RuleNetem) {
				return fmt.Errorf("%s on %s: a %s (fault %s) holds the root qdisc of its %s: heal first", what, node, o.Kind, o.Owner, NodeLinkName)
			}
		}
		return nil
	}
	create := func() error {
		h, err := handleIn(r.NS)
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(NodeLinkName)
		if err != nil {
			return fmt.Errorf("%s in %s: %w", NodeLinkName, r.NS, err)
		}
		attrs := netlink.NetemQdiscAttrs{
			Latency:     uint32(spec.Delay.Microseconds()),
			ReorderProb: float32(spec.Reorder * 100),
			CorruptProb: float32(spec.Corrupt * 100),
		}
		q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netemHandle, Parent: netlink.HANDLE_ROOT}, attrs)
		if err := h.QdiscAdd(q); err != nil {
			return fmt.Errorf("adding netem on %s in %s: %w", NodeLinkName, r.NS, err)
		}
		return nil
	}
	return nw.addRuleFor(node, &r, check, create)
}

// removeNetem deletes faultbench's netem root qdisc on link in ns.
func removeNetem(ns, link string) error {
	h, err := handleIn(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(link)
	if err != nil {
		return nil // the link is gone, and its qdisc with it
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		return fmt.Errorf("listing qdiscs of %s in %s: %w", link, ns, err)
	}
	for _, q := range qs {
		if q.Type() == "netem" && q.Attrs().Handle == netemHandle && q.Attrs().Parent == netlink.HANDLE_ROOT {
			if err := h.QdiscDel(q); err != nil {
				return fmt.Errorf("deleting netem on %s in %s: %w", link, ns, err)
			}
		}
	}
	return nil
}
