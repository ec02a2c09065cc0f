package sshhost

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/faultbench/faultbench/internal/launcher"
)

// NFTable is the nftables table (family inet) that holds every network
// fault faultbench puts on a node host: one base chain per fault, named by
// the fault's owner id. Healing a fault deletes its chain (and the table
// with the last chain); `cleanup --hosts` deletes the table.
const NFTable = "faultbench"

// nftFamily is NFTable's family: inet covers IPv4 and IPv6.
const nftFamily = "inet"

// nftArgv is the command that reads an nftables script on standard input.
var nftArgv = []string{"nft", "-f", "-"}

// validOwner reports whether s can name a chain: letters, digits and '_',
// starting with a letter, at most 64 characters.
func validOwner(s string) bool {
	if s == "" || len(s) > 64 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// dropRuleset returns the nftables script that adds owner's chain to
// NFTable, dropping packets from any of from to the address to. The chain
// hooks input at priority filter-10 (before the host's own filter), so a
// host firewall that accepts the peers does not undo the partition.
func dropRuleset(owner, to string, from []string) (string, error) {
	if !validOwner(owner) {
		return "", fmt.Errorf("network fault owner %q: want letters, digits and _", owner)
	}
	toIP := net.ParseIP(to)
	if toIP == nil {
		return "", fmt.Errorf("drop to %q: not an IP address (network faults on remote nodes need the nodes' IP addresses)", to)
	}
	if len(from) == 0 {
		return "", fmt.Errorf("drop to %s: no source addresses", to)
	}
	v4 := toIP.To4() != nil
	var srcs []string
	seen := map[string]bool{}
	for _, f := range from {
		ip := net.ParseIP(f)
		if ip == nil {
			return "", fmt.Errorf("drop from %q: not an IP address", f)
		}
		if (ip.To4() != nil) != v4 {
			return "", fmt.Errorf("drop from %s to %s: one address is IPv4, the other IPv6", f, to)
		}
		if !seen[ip.String()] {
			seen[ip.String()] = true
			srcs = append(srcs, ip.String())
		}
	}
	sort.Strings(srcs)
	proto := "ip"
	if !v4 {
		proto = "ip6"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table %s %s {\n", nftFamily, NFTable)
	fmt.Fprintf(&b, "\tchain %s {\n", owner)
	b.WriteString("\t\ttype filter hook input priority filter - 10; policy accept;\n")
	fmt.Fprintf(&b, "\t\t%s saddr { %s } %s daddr %s drop\n", proto, strings.Join(srcs, ", "), proto, toIP.String())
	b.WriteString("\t}\n}\n")
	return b.String(), nil
}

// lossRuleset returns the nftables script that adds owner's chain to
// NFTable, dropping the fraction p of the packets that arrive for to, at
// random (numgen random mod 10000 < p*10000, as a local loss), except TCP
// to and from sshPort (faultbench's own SSH connection to the host).
func lossRuleset(owner, to string, p float64, sshPort int) (string, error) {
	if !validOwner(owner) {
		return "", fmt.Errorf("network fault owner %q: want letters, digits and _", owner)
	}
	toIP := net.ParseIP(to)
	if toIP == nil {
		return "", fmt.Errorf("loss on %q: not an IP address (network faults on remote nodes need the nodes' IP addresses)", to)
	}
	if !(p > 0 && p <= 1) {
		return "", fmt.Errorf("loss %v: want a fraction in (0, 1]", p)
	}
	if sshPort <= 0 || sshPort > 65535 {
		return "", fmt.Errorf("loss on %s: SSH port %d out of range", to, sshPort)
	}
	n := uint32(p*10000 + 0.5)
	if n == 0 {
		n = 1
	}
	proto := "ip"
	if toIP.To4() == nil {
		proto = "ip6"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table %s %s {\n", nftFamily, NFTable)
	fmt.Fprintf(&b, "\tchain %s {\n", owner)
	b.WriteString("\t\ttype filter hook input priority filter - 10; policy accept;\n")
	fmt.Fprintf(&b, "\t\ttcp dport %d accept\n", sshPort)
	fmt.Fprintf(&b, "\t\ttcp sport %d accept\n", sshPort)
	if n >= 10000 { // numgen's values are 0-9999: every packet
		fmt.Fprintf(&b, "\t\t%s daddr %s drop\n", proto, toIP.String())
	} else {
		fmt.Fprintf(&b, "\t\t%s daddr %s numgen random mod 10000 < %d drop\n", proto, toIP.String(), n)
	}
	b.WriteString("\t}\n}\n")
	return b.String(), nil
}

// removeRuleset returns the script that deletes owner's chain, and the
// table when no other chain is left in it (others: the chains in place).
func removeRuleset(owner string, others []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "delete chain %s %s %s\n", nftFamily, NFTable, owner)
	if len(others) == 0 {
		fmt.Fprintf(&b, "delete table %s %s\n", nftFamily, NFTable)
	}
	return b.String()
}

// clearRuleset deletes NFTable whether or not it exists (declaring the
// table first makes the delete idempotent).
func clearRuleset() string {
	return fmt.Sprintf("table %s %s\ndelete table %s %s\n", nftFamily, NFTable, nftFamily, NFTable)
}

// hasTable reports whether the output of `nft list tables inet` lists NFTable.
func hasTable(listing string) bool {
	want := "table " + nftFamily + " " + NFTable
	for _, l := range strings.Split(listing, "\n") {
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}

// chainsOf returns the chain names in the output of `nft list table`.
func chainsOf(listing string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "chain" && f[2] == "{" {
			out = append(out, f[1])
		}
	}
	sort.Strings(out)
	return out
}

// Runner runs argv on a host with stdin (may be empty) and returns its
// standard output.
type Runner func(ctx context.Context, argv []string, stdin string) ([]byte, error)

// NetOwners lists the chains of NFTable on the host run reaches (none when
// the table is not there).
func NetOwners(ctx context.Context, run Runner) ([]string, error) {
	out, err := run(ctx, []string{"nft", "list", "tables", nftFamily}, "")
	if err != nil {
		return nil, fmt.Errorf("listing nftables tables: %w", err)
	}
	if !hasTable(string(out)) {
		return nil, nil
	}
	out, err = run(ctx, []string{"nft", "list", "table", nftFamily, NFTable}, "")
	if err != nil {
		return nil, fmt.Errorf("listing nftables table %s %s: %w", nftFamily, NFTable, err)
	}
	return chainsOf(string(out)), nil
}

// ClearNet deletes NFTable on the host run reaches and reports whether it
// was there. A host without nft (or where the SSH user may not list the
// ruleset) has nothing faultbench could have put there: that is not an
// error, it reports false.
func ClearNet(ctx context.Context, run Runner) (bool, error) {
	out, err := run(ctx, []string{"nft", "list", "tables", nftFamily}, "")
	if err != nil || !hasTable(string(out)) {
		return false, nil
	}
	if _, err := run(ctx, nftArgv, clearRuleset()); err != nil {
		return false, fmt.Errorf("deleting nftables table %s %s: %w", nftFamily, NFTable, err)
	}
	return true, nil
}

var _ launcher.NetFaulter = (*nodeHost)(nil)

// runIn is run with the script on standard input.
func (n *nodeHost) runIn(ctx context.Context, argv []string, stdin string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeCallTimeout)
	defer cancel()
	c, err := n.hs.pool.Get(ctx, n.h)
	if err != nil {
		return nil, err
	}
	if stdin != "" {
		return c.Run(ctx, argv, strings.NewReader(stdin))
	}
	return c.Run(ctx, argv, nil)
}

// AddDrops implements launcher.NetFaulter with `nft -f -` on the host.
func (n *nodeHost) AddDrops(ctx context.Context, owner, to string, from []string) error {
	rs, err := dropRuleset(owner, to, from)
	if err != nil {
		return fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	if _, err := n.runIn(ctx, nftArgv, rs); err != nil {
		return fmt.Errorf("host %s: adding nftables chain %s: %w", n.h.Name, owner, err)
	}
	return nil
}

// AddLoss implements launcher.NetFaulter with `nft -f -` on the host; the
// host's SSH port (from the inventory) is spared.
func (n *nodeHost) AddLoss(ctx context.Context, owner, to string, p float64) error {
	rs, err := lossRuleset(owner, to, p, n.h.Port)
	if err != nil {
		return fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	if _, err := n.runIn(ctx, nftArgv, rs); err != nil {
		return fmt.Errorf("host %s: adding nftables chain %s: %w", n.h.Name, owner, err)
	}
	return nil
}

// RemoveNet implements launcher.NetFaulter.
func (n *nodeHost) RemoveNet(ctx context.Context, owner string) (bool, error) {
	if !validOwner(owner) {
		return false, fmt.Errorf("host %s: network fault owner %q: want letters, digits and _", n.h.Name, owner)
	}
	owners, err := NetOwners(ctx, n.runIn)
	if err != nil {
		return false, fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	var others []string
	found := false
	for _, o := range owners {
		if o == owner {
			found = true
		} else {
			others = append(others, o)
		}
	}
	if !found {
		return false, nil
	}
	if _, err := n.runIn(ctx, nftArgv, removeRuleset(owner, others)); err != nil {
		return false, fmt.Errorf("host %s: removing nftables chain %s: %w", n.h.Name, owner, err)
	}
	return true, nil
}

// NetOwners implements launcher.NetFaulter.
func (n *nodeHost) NetOwners(ctx context.Context) ([]string, error) {
	o, err := NetOwners(ctx, n.runIn)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	return o, nil
}

// ClearNet implements launcher.NetFaulter.
func (n *nodeHost) ClearNet(ctx context.Context) (bool, error) {
	ok, err := ClearNet(ctx, n.runIn)
	if err != nil {
		return false, fmt.Errorf("host %s: %w", n.h.Name, err)
	}
	return ok, nil
}
