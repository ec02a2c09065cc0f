package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

// bindMountDir is where named namespaces live (as with `ip netns add`).
const bindMountDir = "/run/netns"

// Network is one cluster's network, backed by its state file.
type Network struct {
	path string
}

// Open returns the cluster network recorded in the state file at path.
func Open(path string) (*Network, error) {
	if _, err := (file{path}).read(); err != nil {
		return nil, err
	}
	return &Network{path: path}, nil
}

// Path is the network's state file.
func (nw *Network) Path() string { return nw.path }

// State returns the network's recorded state.
func (nw *Network) State() (*State, error) {
	f := file{nw.path}
	unlock, err := f.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return f.read()
}

// Create records and then builds the network of cluster with n nodes under
// stateDir (see the package comment for the layout). On failure it removes
// whatever it created. It returns ErrNotRoot when not root.
func Create(ctx context.Context, stateDir, cluster string, n int) (*Network, error) {
	if err := RequireRoot(); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("cluster network: %d nodes, allowed 1..%d", n, MaxNodes)
	}
	dir := Dir(stateDir)
	path := StatePath(stateDir, cluster)
	dirLock := file{filepath.Join(dir, ".subnets")}
	unlock, err := dirLock.lock()
	if err != nil {
		return nil, err
	}
	if s, err := (file{path}).read(); err == nil {
		unlock()
		return nil, fmt.Errorf("cluster network of %s is still recorded (%s, namespaces %s...): `faultbench cleanup` removes it", cluster, path, s.BridgeNS)
	}
	k, err := freeSubnet(dir)
	if err != nil {
		unlock()
		return nil, err
	}
	tag, err := newTag()
	if err != nil {
		unlock()
		return nil, err
	}
	s := plan(cluster, tag, k, n)
	s.CreatedAt = time.Now().UTC()
	// Recorded before anything is created.
	err = file{path}.write(s)
	unlock()
	if err != nil {
		return nil, err
	}
	nw := &Network{path: path}
	if err := build(ctx, s); err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := nw.Destroy(dctx); derr != nil {
			err = fmt.Errorf("%w (and removing it again failed: %v)", err, derr)
		}
		return nil, fmt.Errorf("cluster network of %s: %w", cluster, err)
	}
	return nw, nil
}

// freeSubnet returns the first /24 number neither recorded in dir nor
// overlapping an address or route of the root namespace.
func freeSubnet(dir string) (int, error) {
	used := usedSubnets(dir)
	var nets []*net.IPNet
	if routes, err := netlink.RouteList(nil, netlink.FAMILY_V4); err == nil {
		for _, r := range routes {
			if r.Dst != nil {
				if ones, _ := r.Dst.Mask.Size(); ones > 0 {
					nets = append(nets, r.Dst)
				}
			}
		}
	}
	if addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4); err == nil {
		for _, a := range addrs {
			nets = append(nets, a.IPNet)
		}
	}
	for k := 0; k < 512; k++ {
		if used[k] {
			continue
		}
		sub := &net.IPNet{IP: subnetIP(k, 0), Mask: net.CIDRMask(24, 32)}
		clash := false
		for _, o := range nets {
			if o.Contains(sub.IP) || sub.Contains(o.IP) {
				clash = true
				break
			}
		}
		if !clash {
			return k, nil
		}
	}
	return 0, errors.New("cluster network: every /24 of 198.18.0.0/15 is in use")
}

// newNamed creates the named namespace name on a locked thread and returns
// the thread to the namespace it was in.
func newNamed(name string) error {
	if err := sharedMountDir(bindMountDir); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current namespace: %w", err)
			return
		}
		defer orig.Close()
		h, err := vnetns.NewNamed(name)
		if err == nil {
			h.Close()
		}
		if serr := vnetns.Set(orig); serr != nil {
			// This thread is in the wrong namespace: let it die with the
			// goroutine (no UnlockOSThread) instead of reusing it.
			errc <- errors.Join(err, fmt.Errorf("returning to the original namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("creating namespace %s: %w", name, err)
		}
		errc <- err
	}()
	return <-errc
}

// nsExists reports whether the named namespace exists.
func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(bindMountDir, name))
	return err == nil
}

// handleIn returns a netlink handle working in namespace name ("" = root).
func handleIn(name string) (*netlink.Handle, error) {
	if name == "" {
		return netlink.NewHandle()
	}
	ns, err := vnetns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in namespace %s: %w", name, err)
	}
	return h, nil
}

// build creates what s records.
func build(ctx context.Context, s *State) error {
	for _, name := range s.Namespaces {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := newNamed(name); err != nil {
			return err
		}
	}
	bh, err := handleIn(s.BridgeNS)
	if err != nil {
		return err
	}
	defer bh.Close()
	if err := linkUp(bh, "lo"); err != nil {
		return fmt.Errorf("namespace %s: %w", s.BridgeNS, err)
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}
	if err := bh.LinkAdd(br); err != nil {
		return fmt.Errorf("bridge %s in %s: %w", BridgeName, s.BridgeNS, err)
	}
	brl, err := bh.LinkByName(BridgeName)
	if err != nil {
		return fmt.Errorf("bridge %s in %s: %w", BridgeName, s.BridgeNS, err)
	}
	if err := bh.LinkSetUp(brl); err != nil {
		return fmt.Errorf("bridge %s up: %w", BridgeName, err)
	}
	_, subnet, _ := net.ParseCIDR(s.Subnet)

	// The root namespace's way in.
	bns, err := vnetns.GetFromName(s.BridgeNS)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", s.BridgeNS, err)
	}
	defer bns.Close()
	rh, err := handleIn("")
	if err != nil {
		return err
	}
	defer rh.Close()
	hv := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: s.HostLink},
		PeerName:      HostPortName,
		PeerNamespace: netlink.NsFd(int(bns)),
	}
	if err := rh.LinkAdd(hv); err != nil {
		return fmt.Errorf("veth %s: %w", s.HostLink, err)
	}
	hl, err := rh.LinkByName(s.HostLink)
	if err != nil {
		return fmt.Errorf("veth %s: %w", s.HostLink, err)
	}
	if err := rh.LinkSetAlias(hl, aliasPrefix+s.Tag+" "+s.Cluster); err != nil {
		return fmt.Errorf("veth %s alias: %w", s.HostLink, err)
	}
	if err := rh.AddrAdd(hl, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(s.HostIP).To4(), Mask: subnet.Mask}}); err != nil {
		return fmt.Errorf("address %s on %s: %w", s.HostIP, s.HostLink, err)
	}
	if err := rh.LinkSetUp(hl); err != nil {
		return fmt.Errorf("veth %s up: %w", s.HostLink, err)
	}
	if err := portUp(bh, HostPortName, brl); err != nil {
		return err
	}

	for _, nd := range s.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := buildNode(bh, brl, nd, subnet); err != nil {
			return fmt.Errorf("node %s: %w", nd.Name, err)
		}
	}
	return waitUp(ctx, s)
}

// upTimeout bounds the wait for every link of a new network to carry traffic.
const upTimeout = 10 * time.Second

// waitUp waits until every link of s reports operational state up (a veth
// pair comes up asynchronously; a packet sent before is lost).
func waitUp(ctx context.Context, s *State) error {
	type want struct{ ns, name string }
	wants := []want{{"", s.HostLink}, {s.BridgeNS, BridgeName}, {s.BridgeNS, HostPortName}}
	for _, nd := range s.Nodes {
		wants = append(wants, want{s.BridgeNS, nd.Port}, want{nd.NS, NodeLinkName})
	}
	deadline := time.Now().Add(upTimeout)
	for _, w := range wants {
		h, err := handleIn(w.ns)
		if err != nil {
			return err
		}
		for {
			l, err := h.LinkByName(w.name)
			if err == nil && l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				h.Close()
				state := "missing"
				if err == nil {
					state = l.Attrs().OperState.String()
				}
				return fmt.Errorf("link %s in namespace %q not up after %v (state %s)", w.name, w.ns, upTimeout, state)
			}
			time.Sleep(10 * time.Millisecond)
		}
		h.Close()
	}
	return nil
}

// buildNode adds node nd's veth pair (port in the bridge namespace, eth0 in
// its own), its address, and brings lo and eth0 up.
func buildNode(bh *netlink.Handle, brl netlink.Link, nd Node, subnet *net.IPNet) error {
	ns, err := vnetns.GetFromName(nd.NS)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", nd.NS, err)
	}
	defer ns.Close()
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: nd.Port},
		PeerName:      NodeLinkName,
		PeerNamespace: netlink.NsFd(int(ns)),
	}
	if err := bh.LinkAdd(v); err != nil {
		return fmt.Errorf("veth %s: %w", nd.Port, err)
	}
	if err := portUp(bh, nd.Port, brl); err != nil {
		return err
	}
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", nd.NS, err)
	}
	defer nh.Close()
	if err := linkUp(nh, "lo"); err != nil {
		return err
	}
	el, err := nh.LinkByName(NodeLinkName)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", NodeLinkName, nd.NS, err)
	}
	if err := nh.AddrAdd(el, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(nd.IP).To4(), Mask: subnet.Mask}}); err != nil {
		return fmt.Errorf("address %s: %w", nd.IP, err)
	}
	if err := nh.LinkSetUp(el); err != nil {
		return fmt.Errorf("%s up: %w", NodeLinkName, err)
	}
	return nil
}

func linkUp(h *netlink.Handle, name string) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	return nil
}

// portUp enslaves the bridge namespace's link name to the bridge and brings it up.
func portUp(bh *netlink.Handle, name string, brl netlink.Link) error {
	l, err := bh.LinkByName(name)
	if err != nil {
		return fmt.Errorf("bridge port %s: %w", name, err)
	}
	if err := bh.LinkSetMaster(l, brl); err != nil {
		return fmt.Errorf("bridge port %s: %w", name, err)
	}
	if err := bh.LinkSetUp(l); err != nil {
		return fmt.Errorf("bridge port %s up: %w", name, err)
	}
	return nil
}

// Destroy removes every rule, link and namespace the state file records
// (whatever of it still exists) and then the state file. Nothing that is not
// recorded is touched: the root namespace's veth is deleted only while it
// still carries faultbench's alias for this network.
func (nw *Network) Destroy(ctx context.Context) error {
	f := file{nw.path}
	unlock, err := f.lock()
	if err != nil {
		return err
	}
	defer unlock()
	s, err := f.read()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for i := len(s.Rules) - 1; i >= 0; i-- {
		if err := removeRule(s.Rules[i]); err != nil {
			errs = append(errs, err)
		}
	}
	s.Rules = nil
	for _, l := range s.Links {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := removeLink(s, l); err != nil {
			errs = append(errs, err)
		}
	}
	// Nodes first, the bridge last.
	for i := len(s.Namespaces) - 1; i >= 0; i-- {
		name := s.Namespaces[i]
		if !nsExists(name) {
			continue
		}
		if err := vnetns.DeleteNamed(name); err != nil {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = f.write(s)
		return fmt.Errorf("removing cluster network %s of %s: %w", s.Tag, s.Cluster, err)
	}
	if err := os.Remove(nw.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	_ = os.Remove(nw.path + ".lock")
	return nil
}

// removeLink deletes recorded link l if it still exists.
func removeLink(s *State, l Link) error {
	if l.NS != "" && !nsExists(l.NS) {
		return nil // went with its namespace
	}
	h, err := handleIn(l.NS)
	if err != nil {
		return err
	}
	defer h.Close()
	link, err := h.LinkByName(l.Name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("link %s: %w", l.Name, err)
	}
	if l.NS == "" && link.Attrs().Alias != aliasPrefix+s.Tag+" "+s.Cluster {
		return fmt.Errorf("link %s in the root namespace no longer carries faultbench's alias (%q): left alone", l.Name, link.Attrs().Alias)
	}
	if err := h.LinkDel(link); err != nil {
		return fmt.Errorf("deleting link %s: %w", l.Name, err)
	}
	return nil
}

// Addresser places node i at its namespace's address; ports are free inside
// a fresh namespace, so they are handed out in order from 7000 per address.
// It implements launcher.Addresser and the launcher's optional argv wrapper,
// which runs each node inside its namespace through `faultbench netns-exec`.
type Addresser struct {
	self  string
	state *State
	next  map[string]int
}

// Addresser returns the launcher Addresser of this network; self is the
// faultbench executable that runs `netns-exec`.
func (nw *Network) Addresser(self string) (*Addresser, error) {
	s, err := nw.State()
	if err != nil {
		return nil, err
	}
	return &Addresser{self: self, state: s, next: map[string]int{}}, nil
}

// FirstPort is the first port Port hands out on each address.
const FirstPort = 7000

// Host returns node i's (0-based) address; beyond the recorded nodes it
// returns an address with no namespace behind it.
func (a *Addresser) Host(i int) string {
	if i >= 0 && i < len(a.state.Nodes) {
		return a.state.Nodes[i].IP
	}
	return "198.18.255.254"
}

// Port returns the next unused port on host (all are free inside a namespace).
func (a *Addresser) Port(host string) (int, error) {
	p, ok := a.next[host]
	if !ok {
		p = FirstPort
	}
	if p > 65535-10000 {
		return 0, fmt.Errorf("no more ports on %s", host)
	}
	a.next[host] = p + 1
	return p, nil
}

// WrapArgv returns argv run inside node i's namespace:
// SELF netns-exec NS -- argv...
func (a *Addresser) WrapArgv(i int, argv []string) []string {
	if i < 0 || i >= len(a.state.Nodes) {
		return argv
	}
	out := []string{a.self, ExecCommand, a.state.Nodes[i].NS, "--"}
	return append(out, argv...)
}

// NameNodes renames the network's nodes after the cluster's: names maps an
// address to the name of the cluster node listening there. Nodes no
// cluster node uses are renamed spare1, spare2, ... Call it once the
// launcher has placed its nodes, before any rule is added.
func (nw *Network) NameNodes(names map[string]string) error {
	f := file{nw.path}
	unlock, err := f.lock()
	if err != nil {
		return err
	}
	defer unlock()
	s, err := f.read()
	if err != nil {
		return err
	}
	if len(s.Rules) > 0 {
		return fmt.Errorf("cluster network %s: nodes cannot be renamed once rules are in place", s.Tag)
	}
	spare := 0
	for i := range s.Nodes {
		if name, ok := names[s.Nodes[i].IP]; ok {
			s.Nodes[i].Name = name
		} else {
			spare++
			s.Nodes[i].Name = "spare" + strconv.Itoa(spare)
		}
	}
	return f.write(s)
}
