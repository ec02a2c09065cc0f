package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// Selector keywords. Anything else is a node name or a name bound with "as".
const (
	SelectLeader    = "leader"   // the up node with role leader (etcd)
	SelectPrimary   = "primary"  // an up node with role primary (Redis Cluster master)
	SelectReplica   = "replica"  // an up node with role replica
	SelectFollower  = "follower" // an up node with role follower
	SelectRandom    = "random"   // any one up node
	SelectAll       = "all"      // every node of the cluster, up or not
	SelectAnyPrefix = "any:"     // any:N — N distinct up nodes
	// SelectGroupPrefix: group:G — every node named G-something (txkv's
	// node groups: group:n2 is n2-s1, n2-s2, ...), up or not.
	SelectGroupPrefix = "group:"
	// SelectRandomOf: random-of(X,Y,...) — one up node drawn from the
	// union of X, Y ...: roles (followers, replicas, primaries, leader;
	// singular or plural) and node names. The draw comes from the
	// Resolver's source, so a seeded Resolver (a scenario's trial) replays it.
	SelectRandomOf = "random-of"
)

// pluralRoles maps the plural forms random-of accepts to role keywords.
var pluralRoles = map[string]string{"leaders": SelectLeader, "primaries": SelectPrimary, "replicas": SelectReplica, "followers": SelectFollower}

// randomOfParts returns the parts of random-of(a,b) and whether s is one.
func randomOfParts(s string) ([]string, bool) {
	inner, ok := strings.CutPrefix(s, SelectRandomOf+"(")
	if !ok {
		return nil, false
	}
	inner, ok = strings.CutSuffix(inner, ")")
	if !ok {
		return nil, true
	}
	var parts []string
	for _, p := range strings.Split(inner, ",") {
		p = strings.TrimSpace(p)
		if r, ok := pluralRoles[p]; ok {
			p = r
		}
		parts = append(parts, p)
	}
	return parts, true
}

// roleOf maps a role keyword to the launcher's role ("" for other text).
func roleOf(s string) string {
	switch s {
	case SelectLeader:
		return launcher.RoleLeader
	case SelectPrimary:
		return launcher.RolePrimary
	case SelectReplica:
		return launcher.RoleReplica
	case SelectFollower:
		return launcher.RoleFollower
	}
	return ""
}

// validName reports whether s looks like a node name or a bound name:
// letters, digits, '.', '_' and '-', not starting with a punctuation mark.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

type selKind int

const (
	selName selKind = iota // a node name or a bound name
	selRole
	selRandom
	selAny
	selAll
	selGroup
	selList // a,b: the union of several selectors
	selRandomOf
)

type selector struct {
	kind selKind
	text string // as written
	role string // selRole: launcher role
	n    int    // selAny: how many
}

// parseSelector checks a selector's syntax.
func parseSelector(s string) (selector, error) {
	sel := selector{text: s}
	switch {
	case s == "":
		return sel, fmt.Errorf("empty node selector (want %s)", selectorHelp)
	case strings.HasPrefix(s, SelectRandomOf+"("):
		parts, _ := randomOfParts(s)
		if len(parts) == 0 {
			return sel, fmt.Errorf("node selector %q: write random-of(followers) or random-of(n1,n2): roles or node names in parentheses", s)
		}
		for _, p := range parts {
			ps, err := parseSelector(p)
			if err != nil || (ps.kind != selName && ps.kind != selRole) {
				return sel, fmt.Errorf("node selector %q: %q: random-of takes roles (leader, primaries, replicas, followers) and node names", s, p)
			}
		}
		sel.kind = selRandomOf
	case strings.Contains(s, ","):
		for _, part := range strings.Split(s, ",") {
			if _, err := parseSelector(part); err != nil {
				return sel, fmt.Errorf("node selector %q: %w", s, err)
			}
		}
		sel.kind = selList
	case roleOf(s) != "":
		sel.kind, sel.role = selRole, roleOf(s)
	case s == SelectRandom:
		sel.kind = selRandom
	case s == SelectAll:
		sel.kind = selAll
	case strings.HasPrefix(s, SelectAnyPrefix):
		n, err := strconv.Atoi(strings.TrimPrefix(s, SelectAnyPrefix))
		if err != nil || n < 1 {
			return sel, fmt.Errorf("node selector %q: any:N needs a whole number N >= 1", s)
		}
		sel.kind, sel.n = selAny, n
	case strings.HasPrefix(s, SelectGroupPrefix):
		g := strings.TrimPrefix(s, SelectGroupPrefix)
		if !validName(g) {
			return sel, fmt.Errorf("node selector %q: group:G needs a group name such as n2", s)
		}
		sel.kind, sel.role = selGroup, g
	case validName(s):
		sel.kind = selName
	default:
		return sel, fmt.Errorf("node selector %q is not a node name or a bound name (letters, digits, '.', '_', '-') nor one of %s", s, selectorHelp)
	}
	return sel, nil
}

const selectorHelp = "a node name (n1), leader, primary, replica, follower, random, any:N, all, group:G, random-of(followers) or random-of(n1,n2), a name bound earlier with as, or several of these joined by commas"

// isKeyword reports whether s is a selector keyword (and so cannot be bound).
func isKeyword(s string) bool {
	sel, err := parseSelector(s)
	return err == nil && sel.kind != selName
}

// Resolver turns node selectors into node names against the current state of
// a cluster, and holds the names bound by a schedule's "as". It is not safe
// for concurrent use; one Resolver serves one run.
type Resolver struct {
	rng      *rand.Rand
	seeded   bool
	bindings map[string][]string
}

// NewResolver returns a Resolver. With rng nil, random and any:N draw from a
// fixed seed (so a run is reproducible) and role selectors pick the first
// matching up node by name; with rng set, random and any:N draw from it and
// role selectors pick a random matching node too.
func NewResolver(rng *rand.Rand) *Resolver {
	r := &Resolver{rng: rng, seeded: rng != nil}
	if rng == nil {
		r.rng = rand.New(rand.NewPCG(1, 1))
	}
	return r
}

// NewDrawResolver returns a Resolver whose random, any:N and random-of
// draw from rng (a scenario's trial seed) while role selectors stay
// deterministic (the first matching up node by name), as with
// NewResolver(nil).
func NewDrawResolver(rng *rand.Rand) *Resolver { return &Resolver{rng: rng} }

// newTimeResolver returns a Resolver whose random and any:N draw from a
// time-seeded source while role selectors stay deterministic (for the CLI).
func newTimeResolver() *Resolver {
	seed := uint64(time.Now().UnixNano())
	return &Resolver{rng: rand.New(rand.NewPCG(seed, seed>>1))}
}

func (r *Resolver) init() {
	if r.rng == nil { // zero Resolver
		r.rng = rand.New(rand.NewPCG(1, 1))
	}
	if r.bindings == nil {
		r.bindings = map[string][]string{}
	}
}

// Bind records that name refers to nodes. Binding a keyword or binding a
// name twice is an error.
func (r *Resolver) Bind(name string, nodes []string) error {
	r.init()
	if isKeyword(name) || !validName(name) {
		return fmt.Errorf("cannot bind %q: not a plain name or a selector keyword", name)
	}
	if old, ok := r.bindings[name]; ok {
		return fmt.Errorf("%q is already bound to %s", name, joinNodes(old))
	}
	r.bindings[name] = append([]string(nil), nodes...)
	return nil
}

// Bound returns the nodes bound to name.
func (r *Resolver) Bound(name string) ([]string, bool) {
	r.init()
	n, ok := r.bindings[name]
	return append([]string(nil), n...), ok
}

// Resolve returns the node names selector means in c, in name order. Role
// selectors, random and any:N consider only up nodes (not marked down by the
// launcher, process running and not paused); a node name and all are taken
// as they are. Call it with a freshly refreshed cluster. Errors say what was
// asked, which roles the nodes have and which nodes are up.
func (r *Resolver) Resolve(c *launcher.Cluster, selector string) ([]string, error) {
	r.init()
	sel, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	if sel.kind == selRandomOf {
		parts, _ := randomOfParts(selector)
		seen := map[string]bool{}
		var cands []string
		for _, p := range parts {
			ps, _ := parseSelector(p)
			var names []string
			if ps.kind == selRole {
				for _, n := range c.Nodes {
					if n.Role == ps.role && nodeUp(context.Background(), c.ProcsOf(&n), n) {
						names = append(names, n.Name)
					}
				}
			} else {
				named, err := r.Resolve(c, p) // a node name or a bound name
				if err != nil {
					return nil, fmt.Errorf("node selector %q: %w", selector, err)
				}
				for _, name := range named {
					if n, err := c.Node(name); err == nil && nodeUp(context.Background(), c.ProcsOf(n), *n) {
						names = append(names, name)
					}
				}
			}
			for _, n := range names {
				if !seen[n] {
					seen[n] = true
					cands = append(cands, n)
				}
			}
		}
		if len(cands) == 0 {
			return nil, fmt.Errorf("node selector %q: none of these nodes is up (%s)", selector, describe(c))
		}
		sortNames(cands)
		return []string{cands[r.rng.IntN(len(cands))]}, nil
	}
	if sel.kind == selList {
		seen := map[string]bool{}
		var out []string
		for _, part := range strings.Split(selector, ",") {
			names, err := r.Resolve(c, part)
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
		sortNames(out)
		return out, nil
	}
	var upNodes []string
	ctx := context.Background() // calls to another host have deadlines of their own
	for _, n := range c.Nodes {
		if nodeUp(ctx, c.ProcsOf(&n), n) {
			upNodes = append(upNodes, n.Name)
		}
	}
	sortNames(upNodes)
	switch sel.kind {
	case selName:
		if nodes, ok := r.bindings[selector]; ok {
			return append([]string(nil), nodes...), nil
		}
		if _, err := c.Node(selector); err != nil {
			return nil, fmt.Errorf("node selector %q: no such node and no such bound name (nodes: %s; bound: %s)",
				selector, strings.Join(c.NodeNames(), ", "), r.boundNames())
		}
		return []string{selector}, nil
	case selAll:
		out := c.NodeNames()
		sortNames(out)
		return out, nil
	case selGroup:
		var out []string
		for _, name := range c.NodeNames() {
			if strings.HasPrefix(name, sel.role+"-") {
				out = append(out, name)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("node selector %q: no node is named %s-... (nodes: %s)", selector, sel.role, strings.Join(c.NodeNames(), ", "))
		}
		sortNames(out)
		return out, nil
	case selRole:
		var match []string
		for _, name := range upNodes {
			n, _ := c.Node(name)
			if n.Role == sel.role {
				match = append(match, name)
			}
		}
		if len(match) == 0 {
			return nil, fmt.Errorf("node selector %q: no up node has role %s (%s)", selector, sel.role, describe(c))
		}
		if r.seeded {
			return []string{match[r.rng.IntN(len(match))]}, nil
		}
		return match[:1], nil
	case selRandom:
		if len(upNodes) == 0 {
			return nil, fmt.Errorf("node selector %q: no node is up (%s)", selector, describe(c))
		}
		return []string{upNodes[r.rng.IntN(len(upNodes))]}, nil
	case selAny:
		if len(upNodes) < sel.n {
			return nil, fmt.Errorf("node selector %q: wants %d distinct up nodes, only %d up (%s)", selector, sel.n, len(upNodes), describe(c))
		}
		perm := r.rng.Perm(len(upNodes))
		out := make([]string, sel.n)
		for i := range out {
			out[i] = upNodes[perm[i]]
		}
		sortNames(out)
		return out, nil
	}
	return nil, fmt.Errorf("node selector %q: unhandled", selector)
}

func (r *Resolver) boundNames() string {
	if len(r.bindings) == 0 {
		return "none"
	}
	var out []string
	for k := range r.bindings {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// describe says which roles the nodes have and which are up, for errors.
func describe(c *launcher.Cluster) string {
	var roles, ups []string
	ctx := context.Background() // calls to another host have deadlines of their own
	for _, n := range c.Nodes {
		p := c.ProcsOf(&n)
		role := n.Role
		if role == "" {
			role = "no role"
		}
		state := ""
		switch {
		case n.Down || n.PID <= 0 || !p.Alive(ctx, n.PID):
			state = ", down"
		case p.Stopped(ctx, n.PID):
			state = ", paused"
		}
		roles = append(roles, fmt.Sprintf("%s=%s%s", n.Name, role, state))
		if nodeUp(ctx, p, n) {
			ups = append(ups, n.Name)
		}
	}
	upText := "none"
	if len(ups) > 0 {
		upText = strings.Join(ups, ", ")
	}
	return fmt.Sprintf("roles: %s; up: %s", strings.Join(roles, " "), upText)
}

// sortNames sorts node names naturally: n2 before n10.
func sortNames(names []string) {
	sort.Slice(names, func(i, j int) bool { return lessName(names[i], names[j]) })
}

func lessName(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb || na < 0 || nb < 0 {
		if pa == pb {
			return a < b
		}
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

// splitNum splits a trailing decimal number off s (-1 when there is none).
func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return s, -1
	}
	n, _ := strconv.Atoi(s[i:])
	return s[:i], n
}

func joinNodes(nodes []string) string {
	if len(nodes) == 0 {
		return "(no nodes)"
	}
	return strings.Join(nodes, ",")
}
