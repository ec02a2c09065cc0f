package netns

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// tablePrefix starts the name of every nftables table faultbench adds (one
// table per fault and node, in the node's namespace).
const tablePrefix = "faultbench_"

// tbfHandle is the handle of the tbf root qdisc faultbench adds (fb:0).
var tbfHandle = netlink.MakeHandle(0xfb, 0)

// addRule records r (under the state file's lock) and then creates it with
// create; if creating fails, what was created is removed and the record
// dropped again.
func (nw *Network) addRule(r Rule, check func(s *State) error, create func() error) error {
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
	if check != nil {
		if err := check(s); err != nil {
			return err
		}
	}
	for _, o := range s.Rules {
		if o.Kind == r.Kind && o.NS == r.NS && o.Name == r.Name {
			return fmt.Errorf("%s %s on %s is already in place (fault %s): heal first", r.Kind, r.Name, r.Node, o.Owner)
		}
	}
	r.Added = time.Now().UTC()
	s.Rules = append(s.Rules, r)
	if err := f.write(s); err != nil {
		return err
	}
	if cerr := create(); cerr != nil {
		rerr := removeRule(r)
		if rerr == nil {
			s.Rules = s.Rules[:len(s.Rules)-1]
			_ = f.write(s)
		}
		return errors.Join(cerr, rerr)
	}
	return nil
}

// RemoveRules removes the rules added by owner (every rule when owner is
// empty) and drops them from the state file. It returns the rules removed.
func (nw *Network) RemoveRules(owner string) ([]Rule, error) {
	f := file{nw.path}
	unlock, err := f.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := f.read()
	if err != nil {
		return nil, err
	}
	var keep, removed []Rule
	var errs []error
	// newest first: a redirect goes before the relay it points at
	for i := len(s.Rules) - 1; i >= 0; i-- {
		r := s.Rules[i]
		if owner != "" && r.Owner != owner {
			keep = append([]Rule{r}, keep...)
			continue
		}
		if err := removeRule(r); err != nil {
			errs = append(errs, err)
			keep = append([]Rule{r}, keep...)
			continue
		}
		removed = append([]Rule{r}, removed...)
	}
	s.Rules = keep
	if err := f.write(s); err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// removeRule deletes r if it still exists (a rule whose namespace is gone
// went with it).
func removeRule(r Rule) error {
	if r.Kind == RuleRelay { // a process: it may outlive its namespace's name
		return killRelay(r.Name)
	}
	if !nsExists(r.NS) {
		return nil
	}
	switch r.Kind {
	case RuleNFTable:
		c, closeNS, err := nftIn(r.NS)
		if err != nil {
			return err
		}
		defer closeNS()
		tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
		if err != nil {
			return fmt.Errorf("listing nftables tables in %s: %w", r.NS, err)
		}
		for _, t := range tables {
			if t.Name == r.Name {
				c.DelTable(t)
				if err := c.Flush(); err != nil {
					return fmt.Errorf("deleting nftables table %s in %s: %w", r.Name, r.NS, err)
				}
			}
		}
		return nil
	case RuleRelay:
		return killRelay(r.Name)
	case RuleNFNetdev:
		return removeNetdevTable(r.NS, r.Name)
	case RuleNetem:
		return removeNetem(r.NS, r.Name)
	case RuleTBF:
		h, err := handleIn(r.NS)
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(r.Name)
		if err != nil {
			return nil // the link is gone, and its qdisc with it
		}
		qs, err := h.QdiscList(l)
		if err != nil {
			return fmt.Errorf("listing qdiscs of %s in %s: %w", r.Name, r.NS, err)
		}
		for _, q := range qs {
			if q.Type() == "tbf" && q.Attrs().Handle == tbfHandle && q.Attrs().Parent == netlink.HANDLE_ROOT {
				if err := h.QdiscDel(q); err != nil {
					return fmt.Errorf("deleting tbf on %s in %s: %w", r.Name, r.NS, err)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("unknown rule kind %q in the state file", r.Kind)
}

// nftIn returns an nftables connection working in namespace ns.
func nftIn(ns string) (*nftables.Conn, func(), error) {
	h, err := vnetns.GetFromName(ns)
	if err != nil {
		return nil, nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(h)))
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("nftables in %s: %w", ns, err)
	}
	return c, func() { _ = c.CloseLasting(); h.Close() }, nil
}

// inputTable creates table name (family ip) with an input chain in ns,
// holding one rule per entry of rules (each ending in a drop verdict).
func inputTable(ns, name string, rules [][]expr.Any) error {
	c, closeNS, err := nftIn(ns)
	if err != nil {
		return err
	}
	defer closeNS()
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: name})
	policy := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{
		Name: "input", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &policy,
	})
	for _, r := range rules {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(r, &expr.Verdict{Kind: expr.VerdictDrop})})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("adding nftables table %s in %s: %w", name, ns, err)
	}
	return nil
}

// TableName returns the nftables table name of a fault owner.
func TableName(owner string) string { return tablePrefix + owner }

// AddDrop makes node drop every IPv4 packet arriving from the addresses
// from (in its own namespace, input hook). owner names the fault.
func (nw *Network) AddDrop(node, owner string, from []string) error {
	var rules [][]expr.Any
	for _, a := range from {
		ip := net.ParseIP(a).To4()
		if ip == nil {
			return fmt.Errorf("drop from %q: not an IPv4 address", a)
		}
		rules = append(rules, []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip},
		})
	}
	r := Rule{Kind: RuleNFTable, Node: node, Name: TableName(owner), Owner: owner, What: "drop from " + strings.Join(from, ",")}
	return nw.addRuleFor(node, &r, nil, func() error { return inputTable(r.NS, r.Name, rules) })
}

// addRuleFor fills in r.NS from the recorded node and calls addRule.
func (nw *Network) addRuleFor(node string, r *Rule, check func(*State) error, create func() error) error {
	st, err := nw.State()
	if err != nil {
		return err
	}
	nd, err := st.Node(node)
	if err != nil {
		return err
	}
	r.NS = nd.NS
	return nw.addRule(*r, check, create)
}

// AddLoss makes node drop the given fraction (0 < p <= 1, resolution
// 1/10000) of the IPv4 packets arriving on its eth0, at random (nftables
// numgen). owner names the fault.
func (nw *Network) AddLoss(node, owner string, p float64) error {
	if !(p > 0 && p <= 1) {
		return fmt.Errorf("loss %v: want a fraction in (0, 1]", p)
	}
	n := uint32(p*10000 + 0.5)
	if n == 0 {
		n = 1
	}
	ifname := make([]byte, 16)
	copy(ifname, NodeLinkName)
	rule := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname},
		&expr.Numgen{Register: 1, Modulus: 10000, Type: unix.NFT_NG_RANDOM},
		// numgen writes host byte order; compare as nft does, in network order
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
		&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binaryutil.BigEndian.PutUint32(n)},
	}
	r := Rule{Kind: RuleNFTable, Node: node, Name: TableName(owner), Owner: owner, What: fmt.Sprintf("drop %.2f%% of arriving packets", float64(n)/100)}
	return nw.addRuleFor(node, &r, nil, func() error { return inputTable(r.NS, r.Name, [][]expr.Any{rule}) })
}

// AddBandwidth limits what node sends on its eth0 to rate bytes per second
// with a tbf root qdisc (burst max(rate/100, 16 KiB), queue of 100 ms at
// rate but at least 64 KiB). owner names the fault. A node has at most one
// bandwidth limit at a time.
func (nw *Network) AddBandwidth(node, owner string, rate uint64) error {
	if rate < 1000 {
		return fmt.Errorf("bandwidth %d bytes/s: want at least 1000 (8kbit)", rate)
	}
	burst := max(rate/100, 16<<10)
	limit := max(rate/10, 64<<10)
	r := Rule{Kind: RuleTBF, Node: node, Name: NodeLinkName, Owner: owner, What: fmt.Sprintf("tbf rate %d bytes/s", rate)}
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
		q := &netlink.Tbf{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: tbfHandle, Parent: netlink.HANDLE_ROOT},
			Rate:       rate,
			Buffer:     netlink.Xmittime(rate, uint32(burst)),
			Limit:      uint32(limit),
		}
		if err := h.QdiscAdd(q); err != nil {
			return fmt.Errorf("adding tbf on %s in %s: %w", NodeLinkName, r.NS, err)
		}
		return nil
	}
	return nw.addRuleFor(node, &r, nil, create)
}
