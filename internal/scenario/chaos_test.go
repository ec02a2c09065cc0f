package scenario

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
)

const chaosDoc = `
name: c
target: {kind: etcd, nodes: 5}
workload: {ycsb: workloada}
load: {duration: 30m}
chaos:
  faults: [kill, pause, partition]
  every: 60s..120s
  hold: 20s..40s
  concurrent: 1..2
  nodes: random-of(n1,n2,n3,n4,n5)
`

func mustChaos(t *testing.T, doc string, sets ...string) *Scenario {
	t.Helper()
	sc, err := Parse([]byte(doc), "chaos.yaml", sets)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestChaosParse(t *testing.T) {
	sc := mustChaos(t, chaosDoc)
	c := sc.Chaos
	if c == nil || !reflect.DeepEqual(c.Faults, []string{"kill", "pause", "partition"}) || c.Concurrent != (IntRange{1, 2}) ||
		c.Every.From.D() != time.Minute || c.Hold.Latest() != 40*time.Second || !sc.Randomised() {
		t.Fatalf("chaos %+v", c)
	}
	b, err := sc.Marshal()
	if err != nil || !strings.Contains(string(b), "concurrent: 1..2") || !strings.Contains(string(b), "every: 1m0s..2m0s") {
		t.Fatalf("marshalled %s (%v)", b, err)
	}
	sc = mustChaos(t, chaosDoc, "chaos.concurrent=2", "chaos.faults=[kill]")
	if sc.Chaos.Concurrent != (IntRange{2, 2}) || len(sc.Chaos.Faults) != 1 {
		t.Fatalf("--set: %+v", sc.Chaos)
	}
}

func TestChaosValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		sets []string
		want string
	}{
		{"unknown kind", strings.Replace(chaosDoc, "partition]", "explode]", 1), nil, `field chaos.faults[2]: "explode" is not a fault kind; chaos draws from`},
		{"a kind without restore", strings.Replace(chaosDoc, "partition]", "restart]", 1), nil, `"restart" cannot be drawn`},
		{"a client fault", strings.Replace(chaosDoc, "partition]", "crash-client]", 1), nil, `"crash-client" cannot be drawn`},
		{"no faults", chaosDoc, []string{"chaos.faults=[]"}, "list"},
		{"hold reaches the next cycle", strings.Replace(chaosDoc, "hold: 20s..40s", "hold: 20s..70s", 1), nil, "field chaos.hold: 20s..1m10s reaches the next cycle"},
		{"every backwards", strings.Replace(chaosDoc, "60s..120s", "120s..60s", 1), nil, "ends before it starts"},
		{"concurrent backwards", strings.Replace(chaosDoc, "1..2", "2..1", 1), nil, `range "2..1" ends below its start`},
		{"concurrent zero", strings.Replace(chaosDoc, "1..2", "0..2", 1), nil, "field chaos.concurrent: 0..2: allowed 1..16"},
		{"concurrent not a number", strings.Replace(chaosDoc, "1..2", "some", 1), nil, `"some" is not a whole number`},
		{"bad nodes", strings.Replace(chaosDoc, "random-of(n1,n2,n3,n4,n5)", "random-of(n1,)", 1), nil, "field chaos.nodes"},
		{"no every", strings.Replace(chaosDoc, "  every: 60s..120s\n", "", 1), nil, "field chaos.every: required"},
		{"duration holds no cycle", strings.Replace(chaosDoc, "duration: 30m", "duration: 150s", 1), nil, "field chaos.every"},
		{"neither cycles nor duration", strings.Replace(chaosDoc, "load: {duration: 30m}", "load: {threads: 4}", 1), nil, "give chaos.cycles or load.duration"},
		{"cycles beyond duration", chaosDoc, []string{"chaos.cycles=20"}, "20 cycles of up to 2m0s need load.duration of at least 42m0s"},
		{"unknown key", strings.Replace(chaosDoc, "hold:", "hodl:", 1), nil, "field chaos.hodl: unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "chaos.yaml", tc.sets)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// chaosFault is one injected fault of a drawn chaos schedule with its heal.
type chaosFault struct {
	kind, node, label string
	at, healAt        time.Duration
	concurrent        bool
}

// faultsOf pairs the drawn steps: every inject step with the restore step
// on its label (the test fails for an inject without one).
func faultsOf(t *testing.T, steps []Step) []chaosFault {
	t.Helper()
	reg := fault.NewRegistry()
	var out []chaosFault
	open := map[string]int{}
	for _, st := range steps {
		if len(reg.Restores(fault.Action(st.Fault))) > 0 {
			open[st.Label] = len(out)
			out = append(out, chaosFault{kind: st.Fault, node: st.Node, label: st.Label, at: st.At.D(), healAt: -1, concurrent: st.Concurrent})
			continue
		}
		i, ok := open[st.Node]
		if !ok {
			t.Fatalf("restore %+v names no open fault", st)
		}
		if want := reg.Restores(fault.Action(out[i].kind))[0]; fault.Action(st.Fault) != want {
			t.Errorf("%s (%s) restored by %s, want %s", out[i].label, out[i].kind, st.Fault, want)
		}
		out[i].healAt = st.At.D()
		delete(open, st.Node)
	}
	return out
}

func TestChaosSteps(t *testing.T) {
	sc := mustChaos(t, chaosDoc)
	c := sc.Chaos
	dur := sc.Load.Duration.D()
	steps, err := c.ChaosSteps(7, nil, dur)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the same seed draws the same schedule, another seed another", func(t *testing.T) {
		again, _ := c.ChaosSteps(7, nil, dur)
		if !reflect.DeepEqual(steps, again) {
			t.Fatal("seed 7 drew two schedules")
		}
		other, _ := c.ChaosSteps(8, nil, dur)
		if reflect.DeepEqual(steps, other) {
			t.Fatal("seeds 7 and 8 drew the same schedule")
		}
	})
	faults := faultsOf(t, steps)
	t.Run("every fault is healed after its hold, before the end", func(t *testing.T) {
		for _, f := range faults {
			hold := f.healAt - f.at
			if f.healAt < 0 || hold < c.Hold.From.D() || hold > c.Hold.Latest() || f.healAt >= dur {
				t.Errorf("%s (%s on %s) at %v healed at %v: want a heal %v..%v later, before %v", f.label, f.kind, f.node, f.at, f.healAt, c.Hold.From, c.Hold.To, dur)
			}
		}
	})
	t.Run("at most concurrent faults at once, on distinct nodes, from the kinds asked", func(t *testing.T) {
		kinds := map[string]int{}
		sizes := map[int]int{}
		for _, f := range faults {
			kinds[f.kind]++
			var active []chaosFault
			for _, g := range faults {
				if g.at <= f.at && f.at < g.healAt {
					active = append(active, g)
				}
			}
			if len(active) > c.Concurrent.To {
				t.Errorf("at %v %d faults hold, more than %d", f.at, len(active), c.Concurrent.To)
			}
			nodes := map[string]bool{}
			for _, g := range active {
				if nodes[g.node] {
					t.Errorf("at %v two faults on %s", f.at, g.node)
				}
				nodes[g.node] = true
			}
			// only the first fault of a cycle waits for a healthy cluster
			if f.concurrent != (len(active) > 1 && active[0].label != f.label) {
				t.Errorf("%s: concurrent %v with %d faults holding", f.label, f.concurrent, len(active))
			}
		}
		for _, f := range faults {
			n := 0
			for _, g := range faults {
				if g.at == f.at {
					n++
				}
			}
			sizes[n]++
		}
		if len(kinds) != 3 || sizes[1] == 0 || sizes[2] == 0 {
			t.Errorf("over %d faults: kinds %v, cycle sizes %v: want all three kinds and cycles of 1 and 2", len(faults), kinds, sizes)
		}
	})
	t.Run("cycles start every 60..120 s, the first one every after the start", func(t *testing.T) {
		var starts []time.Duration
		for _, f := range faults {
			if !f.concurrent {
				starts = append(starts, f.at)
			}
		}
		prev := time.Duration(0)
		for _, s := range starts {
			if d := s - prev; d < c.Every.From.D() || d > c.Every.Latest() {
				t.Errorf("cycle at %v, %v after the previous", s, d)
			}
			prev = s
		}
		if len(starts) < 14 || len(starts) > 29 {
			t.Errorf("%d cycles in %v", len(starts), dur)
		}
	})
	t.Run("cycles: n bounds the count and gives the duration", func(t *testing.T) {
		sc := mustChaos(t, strings.Replace(chaosDoc, "load: {duration: 30m}", "load: {threads: 4}", 1), "chaos.cycles=3")
		sc.Draw(1)
		sc.Resolve("leader")
		if sc.Chaos != nil || sc.ChaosSpec() == nil || sc.Load.Duration.D() != 8*time.Minute {
			t.Fatalf("after Draw: chaos %v, spec %v, duration %v", sc.Chaos, sc.ChaosSpec(), sc.Load.Duration)
		}
		starts := 0
		for _, f := range faultsOf(t, sc.Schedule.Steps) {
			if !f.concurrent {
				starts++
			}
		}
		if starts != 3 {
			t.Fatalf("%d cycles, want 3", starts)
		}
	})
}

// TestChaosDrawReplays: Draw with the run's seed turns the section into the
// same steps every time, and the resolved scenario parses back into them
// without drawing again.
func TestChaosDrawReplays(t *testing.T) {
	a, b := mustChaos(t, chaosDoc), mustChaos(t, chaosDoc)
	a.Draw(99)
	b.Draw(99)
	if !reflect.DeepEqual(a.Schedule.Steps, b.Schedule.Steps) || len(a.Schedule.Steps) == 0 {
		t.Fatal("two draws of seed 99 differ")
	}
	a.Resolve("leader")
	out, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out, "resolved.yaml", nil)
	if err != nil {
		t.Fatalf("the resolved scenario does not parse: %v\n%s", err, out)
	}
	if back.Chaos != nil || len(back.Schedule.Steps) != len(a.Schedule.Steps) {
		t.Fatalf("resolved: chaos %v, %d steps, want none and %d", back.Chaos, len(back.Schedule.Steps), len(a.Schedule.Steps))
	}
	back.Draw(5)
	if !reflect.DeepEqual(back.Schedule.Steps, a.Schedule.Steps) {
		t.Fatal("a resolved chaos run drew again")
	}
}
