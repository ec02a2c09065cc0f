package scenario

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"gopkg.in/yaml.v3"
)

// Chaos is chaos mode (docs/scenarios.md, "Chaos"): cycles of failure and
// recovery over a long run, as CockroachDB's failover chaos test (one or
// two simultaneous random failures per cycle). Each cycle starts Every
// after the previous one (the first Every after the measured run's start),
// injects Concurrent faults at once, each of a kind drawn from Faults on a
// victim drawn by Nodes, and heals each after its own Hold. Every draw
// comes from the run's seed (ChaosSteps), so a run replays exactly; the
// resolved scenario holds the steps drawn.
type Chaos struct {
	// Faults are the fault kinds drawn from, uniformly: kinds with a
	// restore that act on a node (kill, stop, pause, partition).
	Faults []string `yaml:"faults"`
	// Every is from one cycle's start to the next's, drawn per cycle.
	Every TimeWindow `yaml:"every"`
	// Hold is how long a fault lasts before it is healed, drawn per
	// fault; its upper end must be below Every's lower end, so a cycle is
	// healed before the next begins.
	Hold TimeWindow `yaml:"hold"`
	// Concurrent is how many faults a cycle injects at once, drawn per
	// cycle (default 1).
	Concurrent IntRange `yaml:"concurrent,omitempty"`
	// Nodes is the victims' selector (default random: any up node):
	// random-of(...) of node names draws distinct victims for a cycle
	// when the schedule is drawn; roles (random-of(followers)) and random
	// are drawn when the fault fires.
	Nodes string `yaml:"nodes,omitempty"`
	// Cycles is how many cycles to run (0: as many as load.duration holds;
	// with load.duration left out it decides the run's length).
	Cycles int `yaml:"cycles,omitempty"`
	// Seed is the seed a single run draws from (0: trials.seed, else 1);
	// trials draw each from their own trial seed.
	Seed uint64 `yaml:"seed,omitempty"`
}

// MaxChaosCycles bounds chaos.cycles and the cycles a duration holds.
const MaxChaosCycles = 10000

// IntRange is a whole number ("2") or a range drawn from uniformly ("1..2").
type IntRange struct {
	From, To int // To == From for one number
}

// String writes "2" or "1..2".
func (r IntRange) String() string {
	if r.To > r.From {
		return strconv.Itoa(r.From) + ".." + strconv.Itoa(r.To)
	}
	return strconv.Itoa(r.From)
}

// IsZero reports an unset range.
func (r IntRange) IsZero() bool { return r == IntRange{} }

// MarshalYAML writes the String form.
func (r IntRange) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML reads "2" or "1..2".
func (r *IntRange) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseIntRange(n.Value)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseIntRange parses "2" or "1..2"; a range whose end is below its start
// is an error.
func ParseIntRange(s string) (IntRange, error) {
	from, to, isRange := strings.Cut(strings.TrimSpace(s), "..")
	f, err := strconv.Atoi(strings.TrimSpace(from))
	if err != nil {
		return IntRange{}, fmt.Errorf("%q is not a whole number or a range like 1..2", s)
	}
	if !isRange {
		return IntRange{f, f}, nil
	}
	t, err := strconv.Atoi(strings.TrimSpace(to))
	if err != nil {
		return IntRange{}, fmt.Errorf("%q is not a whole number or a range like 1..2", s)
	}
	if t < f {
		return IntRange{}, fmt.Errorf("range %q ends below its start: write the smaller number first (%d..%d)", s, t, f)
	}
	return IntRange{f, t}, nil
}

// draw picks a number uniformly in the range.
func (r IntRange) draw(rng *rand.Rand) int {
	if r.To <= r.From {
		return r.From
	}
	return r.From + rng.IntN(r.To-r.From+1)
}

// concurrent is Concurrent with its default (1).
func (c *Chaos) concurrent() IntRange {
	if c.Concurrent.IsZero() {
		return IntRange{1, 1}
	}
	return c.Concurrent
}

// nodes is Nodes with its default (random).
func (c *Chaos) nodes() string {
	if strings.TrimSpace(c.Nodes) == "" {
		return fault.SelectRandom
	}
	return strings.TrimSpace(c.Nodes)
}

// validate checks the chaos section against the fault kinds of reg and the
// run's duration (0: left out).
func (c *Chaos) validate(reg *fault.Registry, duration time.Duration) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "chaos." + field, Msg: fmt.Sprintf(format, args...)})
	}
	if len(c.Faults) == 0 {
		bad("faults", "required: the fault kinds to draw from (%s)", strings.Join(chaosKinds(reg), ", "))
	}
	nodes := c.nodes()
	for i, f := range c.Faults {
		a := fault.Action(f)
		switch {
		case !reg.Has(a):
			bad(fmt.Sprintf("faults[%d]", i), "%q is not a fault kind; chaos draws from %s", f, strings.Join(chaosKinds(reg), ", "))
			continue
		case !chaosKind(reg, a):
			bad(fmt.Sprintf("faults[%d]", i), "%q cannot be drawn: chaos draws kinds that act on a node and have a restore (%s)", f, strings.Join(chaosKinds(reg), ", "))
			continue
		}
		if err := (fault.Schedule{{Action: a, Node: nodes}}).ValidateFor(reg, nil); err != nil {
			bad("nodes", "%q for %s: %v", nodes, f, err)
		}
	}
	if _, err := chaosVictims(nodes); err != nil {
		bad("nodes", "%v", err)
	}
	if c.Every.From.D() <= 0 {
		bad("every", "required and positive: the time from one cycle's start to the next (e.g. 60s..120s)")
	}
	if c.Hold.From.D() <= 0 {
		bad("hold", "required and positive: how long each fault lasts before it is healed (e.g. 20s..40s)")
	} else if c.Every.From.D() > 0 && c.Hold.Latest() >= c.Every.From.D() {
		bad("hold", "%v reaches the next cycle: hold's upper end must be below every's lower end (%v), so each cycle is healed before the next begins", c.Hold, c.Every.From.D())
	}
	con := c.concurrent()
	if con.From < 1 || con.To > 16 {
		bad("concurrent", "%s: allowed 1..16 faults at once", con)
	}
	if c.Cycles < 0 || c.Cycles > MaxChaosCycles {
		bad("cycles", "%d: allowed 1..%d (leave it out to fill load.duration)", c.Cycles, MaxChaosCycles)
	}
	if ev := c.Every.Latest(); ev > 0 && c.Every.From.D() > 0 {
		switch {
		case duration == 0 && c.Cycles == 0:
			bad("cycles", "give chaos.cycles or load.duration: one of them says how long the chaos lasts")
		case duration > 0 && c.Cycles > 0 && time.Duration(c.Cycles+1)*ev > duration:
			bad("cycles", "%d cycles of up to %v need load.duration of at least %v (one more cycle's length for the baseline and the last recovery), not %v", c.Cycles, ev, time.Duration(c.Cycles+1)*ev, duration)
		case duration > 0 && c.Cycles == 0 && ev+c.Every.From.D() > duration:
			bad("every", "%v: load.duration %v may hold no cycle: the first starts up to %v after the run's start and needs %v more to be healed and recover", c.Every, duration, ev, c.Every.From.D())
		}
	}
	return errs
}

// chaosKind reports whether chaos can draw kind a: it acts on a node (not
// the client, not a scaling action, not a repair) and something restores it.
func chaosKind(reg *fault.Registry, a fault.Action) bool {
	if reg.ActsOnClient(a) || reg.Nodeless(a) || len(reg.Restores(a)) == 0 {
		return false
	}
	return true
}

// chaosKinds lists the kinds of reg chaos can draw.
func chaosKinds(reg *fault.Registry) []string {
	var out []string
	for _, a := range reg.Names() {
		if chaosKind(reg, a) {
			out = append(out, string(a))
		}
	}
	return out
}

// chaosVictims returns the node names of a random-of(...) selector made
// only of node names (drawn distinct per cycle when the schedule is
// drawn); nil for any other selector (drawn when the fault fires).
func chaosVictims(sel string) ([]string, error) {
	inner, ok := strings.CutPrefix(sel, fault.SelectRandomOf+"(")
	if !ok {
		return nil, nil
	}
	inner, ok = strings.CutSuffix(inner, ")")
	if !ok {
		return nil, fmt.Errorf("%q: random-of(...) needs its closing parenthesis", sel)
	}
	var names []string
	for _, p := range strings.Split(inner, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%q: an empty name in random-of(...)", sel)
		}
		if (fault.Schedule{{Action: fault.ActionKill, Node: p}}).Validate() != nil || isRoleWord(p) {
			return nil, nil // roles or other selectors: drawn at run time
		}
		names = append(names, p)
	}
	return names, nil
}

// isRoleWord reports the role words random-of accepts.
func isRoleWord(s string) bool {
	switch s {
	case fault.SelectLeader, fault.SelectPrimary, fault.SelectReplica, fault.SelectFollower,
		"leaders", "primaries", "replicas", "followers", fault.SelectRandom, fault.SelectAll:
		return true
	}
	return false
}

// ChaosLabel is the label (and the bound name) of fault j (1-based) of
// cycle i (1-based) of a chaos schedule: "chaos3.2".
func ChaosLabel(cycle, j int) string { return fmt.Sprintf("chaos%d.%d", cycle, j) }

// ChaosSteps draws the chaos schedule for a measured run of duration
// (0: the duration chaos.cycles gives, ChaosDuration) from seed: per cycle
// its start (the previous start plus a draw of Every), how many faults
// (Concurrent), and per fault its kind (uniform over Faults), its victim
// (distinct within the cycle when Nodes names nodes) and its Hold. Each
// fault is a step bound to its label with as, and its restore (the kind's
// first restore) a step on that name after its hold. The same seed draws
// the same steps.
func (c *Chaos) ChaosSteps(seed uint64, reg *fault.Registry, duration time.Duration) ([]Step, error) {
	if reg == nil {
		reg = fault.NewRegistry()
	}
	if duration == 0 {
		duration = c.ChaosDuration()
	}
	if duration == 0 {
		return nil, errors.New("chaos: no cycles and no duration")
	}
	victims, err := chaosVictims(c.nodes())
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	var steps []Step
	at := time.Duration(0)
	for cycle := 1; c.Cycles == 0 || cycle <= c.Cycles; cycle++ {
		at += c.Every.draw(rng).D()
		// a cycle runs only when a whole shortest cycle (fault, hold,
		// recovery) fits before the end
		if at+c.Every.From.D() > duration || cycle > MaxChaosCycles {
			break
		}
		n := c.concurrent().draw(rng)
		var pick []string
		if len(victims) > 0 {
			perm := rng.Perm(len(victims))
			for _, i := range perm[:min(n, len(victims))] {
				pick = append(pick, victims[i])
			}
			n = len(pick)
		}
		for j := 1; j <= n; j++ {
			kindName := c.Faults[rng.IntN(len(c.Faults))]
			hold := c.Hold.draw(rng).D()
			node := c.nodes()
			if pick != nil {
				node = pick[j-1]
			}
			label := ChaosLabel(cycle, j)
			restore := fault.ActionStart
			if rs := reg.Restores(fault.Action(kindName)); len(rs) > 0 {
				restore = rs[0]
			}
			steps = append(steps,
				Step{At: At(at), Fault: kindName, Node: node, As: label, Label: label, Concurrent: j > 1},
				Step{At: At(at + hold), Fault: string(restore), Node: label, Label: label})
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("chaos: no cycle fits in %v (every %v)", duration, c.Every)
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At.From < steps[j].At.From })
	return steps, nil
}

// ChaosDuration is the measured run's length chaos.cycles asks for when
// load.duration is left out: one more cycle than asked, each at Every's
// upper end (the baseline before the first, the recovery after the last).
func (c *Chaos) ChaosDuration() time.Duration {
	if c.Cycles <= 0 {
		return 0
	}
	return time.Duration(c.Cycles+1) * c.Every.Latest()
}

// String describes the chaos section in one line, for plans and reports.
func (c *Chaos) String() string {
	out := fmt.Sprintf("faults %s every %s, hold %s, %s at once, nodes %s", strings.Join(c.Faults, "/"), c.Every, c.Hold, c.concurrent(), c.nodes())
	if c.Cycles > 0 {
		out += fmt.Sprintf(", %d cycles", c.Cycles)
	}
	return out
}
