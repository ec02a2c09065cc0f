// Package netns gives every node of a local cluster its own Linux network
// namespace, so that network faults (partitions, loss, bandwidth limits) can
// act on one node's traffic without touching the host's network.
//
// Layout of one cluster network (tag is 5 random base-36 characters, unique
// per cluster; every name fits the kernel's 15-byte interface name limit):
//
//	root namespace (faultbench, its client)
//	  fb<tag>h      veth, 198.18.X.1/24          ─┐
//	namespace fb<tag>-br                          │
//	  br0           Linux bridge                  │
//	  h             veth peer of fb<tag>h ◄───────┘  (port of br0)
//	  n1 … nN       veth peers of each node's eth0   (ports of br0)
//	namespace fb<tag>-n1 … fb<tag>-nN
//	  lo, eth0      198.18.X.(10+i)/24 for node i (1-based)
//
// X is the first /24 of the benchmark range 198.18.0.0/15 (RFC 2544) that no
// other recorded cluster network and no route of the root namespace uses
// (198.18.0.0/24 … 198.19.255.0/24). The client reaches every node through
// fb<tag>h; nodes reach each other through the bridge.
//
// Every namespace, link and rule is written to the cluster network's state
// file before it is created, and Destroy (and RemoveRules) remove exactly
// what the file lists and nothing else, so `faultbench cleanup` can undo the
// work of a faultbench that was killed with -9. Creating namespaces needs
// root; RequireRoot says so in one line.
package netns

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Names inside the namespaces (unique there, so short and fixed).
const (
	BridgeName   = "br0"  // the bridge, in the bridge namespace
	HostPortName = "h"    // the bridge end of the root namespace's veth
	NodeLinkName = "eth0" // a node's interface, in the node's namespace
	// Alias is written on the root namespace's veth so that teardown can
	// check the link is still faultbench's before deleting it.
	aliasPrefix = "faultbench "
)

// Cluster option keys (launcher.Spec.Options, recorded in the cluster's
// state) for the cluster's network.
const (
	// OptNet selects where nodes listen: "netns" puts every node in a
	// network namespace of its own (needs root), so that network faults can
	// act on it; "" or "loopback" keeps every node on 127.0.0.1.
	OptNet = "net"
	// OptNetState is recorded when the cluster starts: the path of the
	// cluster network's state file.
	OptNetState = "net.state"
	// NetNamespaces is OptNet's value for a network namespace per node.
	NetNamespaces = "netns"
)

// Wanted reports whether cluster options ask for a network namespace per node.
func Wanted(opts map[string]string) bool {
	v := opts[OptNet]
	return v == NetNamespaces || v == "true"
}

// Describe says how faultbench builds the cluster network and its faults,
// for env.json.
func Describe() string {
	return "netns: every node in its own network namespace behind a bridge, 198.18.0.0/15; " +
		"partition and loss: nftables rules in the node's namespace; bandwidth: tc tbf; " +
		"delay: userspace relay in the node's namespace (netem is not used); " +
		"blackhole-send and duplicate: nftables netdev egress on the node's eth0; tcp-reset: sock_diag destroy"
}

// StateVersion is the version of the state file layout.
const StateVersion = 1

// Node is one node's place in the cluster network.
type Node struct {
	Name string `json:"name"` // node name, e.g. n1
	NS   string `json:"ns"`   // its namespace, e.g. fbk3x9a-n1
	IP   string `json:"ip"`   // its address, e.g. 198.18.0.11
	Port string `json:"port"` // its veth end in the bridge namespace, e.g. n1
}

// Link is a network interface faultbench creates.
type Link struct {
	NS   string `json:"ns"`   // namespace holding it ("" = root namespace)
	Name string `json:"name"` // interface name
}

// Rule kinds.
const (
	RuleNFTable = "nft-table" // an nftables table (family ip) in a node's namespace
	RuleTBF     = "tbf"       // a tbf root qdisc on a node's eth0
)

// Rule is a filter or a queueing discipline faultbench adds for a fault.
type Rule struct {
	Kind  string    `json:"kind"`  // RuleNFTable or RuleTBF
	NS    string    `json:"ns"`    // namespace holding it
	Node  string    `json:"node"`  // node name
	Name  string    `json:"name"`  // nft table name, or the link of a qdisc
	Owner string    `json:"owner"` // the fault that added it (its id)
	What  string    `json:"what"`  // human description, e.g. "drop from 198.18.0.12"
	Added time.Time `json:"added"`
}

// State is the content of a cluster network's state file.
type State struct {
	Version    int       `json:"version"`
	Cluster    string    `json:"cluster"`
	Tag        string    `json:"tag"`
	Subnet     string    `json:"subnet"`  // e.g. 198.18.0.0/24
	HostIP     string    `json:"host_ip"` // the root namespace's address, e.g. 198.18.0.1
	BridgeNS   string    `json:"bridge_ns"`
	HostLink   string    `json:"host_link"` // the root namespace's veth
	Nodes      []Node    `json:"nodes"`
	Namespaces []string  `json:"namespaces"` // every namespace, bridge first
	Links      []Link    `json:"links"`      // every link created (one end of each veth pair)
	Rules      []Rule    `json:"rules,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Node returns the node named name.
func (s *State) Node(name string) (Node, error) {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("cluster network %s has no node %q", s.Tag, name)
}

// NodeByIP returns the node with address ip.
func (s *State) NodeByIP(ip string) (Node, bool) {
	for _, n := range s.Nodes {
		if n.IP == ip {
			return n, true
		}
	}
	return Node{}, false
}

// ErrNotRoot is returned when namespaces are asked for without root.
var ErrNotRoot = errors.New("network namespaces (--net) need root: run faultbench as root, or leave out --net to run every node on 127.0.0.1")

// RequireRoot returns ErrNotRoot unless this process runs as root.
func RequireRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}

// Dir returns where cluster network state files live under a launcher
// state directory.
func Dir(stateDir string) string { return filepath.Join(stateDir, "netns") }

// StatePath returns the state file of cluster's network under stateDir.
func StatePath(stateDir, cluster string) string {
	return filepath.Join(Dir(stateDir), cluster+".json")
}

// MaxNodes is the most nodes one cluster network holds.
const MaxNodes = 200

// newTag returns 5 random base-36 characters.
func newTag() (string, error) {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random tag: %w", err)
	}
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(b), nil
}

// subnetIP returns 198.18.0.0 + k*256 + host for k in [0, 512).
func subnetIP(k, host int) net.IP {
	return net.IPv4(198, byte(18+k/256), byte(k%256), byte(host)).To4()
}

// plan fills in names and addresses for n nodes in /24 number k.
func plan(cluster, tag string, k, n int) *State {
	s := &State{
		Version:  StateVersion,
		Cluster:  cluster,
		Tag:      tag,
		Subnet:   subnetIP(k, 0).String() + "/24",
		HostIP:   subnetIP(k, 1).String(),
		BridgeNS: "fb" + tag + "-br",
		HostLink: "fb" + tag + "h",
	}
	s.Namespaces = append(s.Namespaces, s.BridgeNS)
	s.Links = append(s.Links, Link{NS: "", Name: s.HostLink}, Link{NS: s.BridgeNS, Name: BridgeName})
	for i := 1; i <= n; i++ {
		name := "n" + strconv.Itoa(i)
		nd := Node{Name: name, NS: "fb" + tag + "-" + name, IP: subnetIP(k, 10+i).String(), Port: name}
		s.Nodes = append(s.Nodes, nd)
		s.Namespaces = append(s.Namespaces, nd.NS)
		s.Links = append(s.Links, Link{NS: s.BridgeNS, Name: nd.Port})
	}
	return s
}

// file is a state file guarded by an flock on a sibling lock file, so that
// a `faultbench fault` and a running scenario can both add rules.
type file struct{ path string }

func (f file) lock() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return nil, fmt.Errorf("netns state dir: %w", err)
	}
	lf, err := os.OpenFile(f.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("netns state lock: %w", err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		lf.Close()
		return nil, fmt.Errorf("netns state lock: %w", err)
	}
	return func() { _ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN); lf.Close() }, nil
}

func (f file) read() (*State, error) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("cluster network state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("cluster network state %s: %w", f.path, err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("cluster network state %s: version %d, this faultbench reads %d", f.path, s.Version, StateVersion)
	}
	return &s, nil
}

func (f file) write(s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing cluster network state: %w", err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("writing cluster network state: %w", err)
	}
	return nil
}

// usedSubnets returns the /24 numbers used by the state files in dir.
func usedSubnets(dir string) map[int]bool {
	used := map[int]bool{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		s, err := file{filepath.Join(dir, e.Name())}.read()
		if err != nil {
			continue
		}
		if k, ok := subnetNumber(s.Subnet); ok {
			used[k] = true
		}
	}
	return used
}

// subnetNumber returns k for "198.(18+k/256).(k%256).0/24".
func subnetNumber(cidr string) (int, bool) {
	ip, _, err := net.ParseCIDR(cidr)
	if err != nil {
		return 0, false
	}
	ip = ip.To4()
	if ip == nil || ip[0] != 198 || (ip[1] != 18 && ip[1] != 19) {
		return 0, false
	}
	return int(ip[1]-18)*256 + int(ip[2]), true
}
