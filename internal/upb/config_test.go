package upb

import (
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
	"github.com/faultbench/faultbench/internal/targets"
)

const minimal = `
name: upb-test
target: {kind: etcd}
workload: {ycsb: workloadc}
upb: {}
`

func TestConfigDefaults(t *testing.T) {
	sc, err := scenario.Parse([]byte(minimal), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Resolve("leader")
	c, err := ConfigFrom(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"kmax", c.KMax, 2},
		{"warmup", c.Warmup, 5 * time.Second},
		{"measure", c.Measure, 20 * time.Second},
		{"steady timeout", c.SteadyTimeout, 10 * time.Second},
		{"steady sample", c.SteadySample, 5 * time.Second},
		{"steady tolerance", c.SteadyTol, 0.02},
		{"keep-up", c.Criteria.KeepUp, 0.05},
		{"φ fraction", c.Criteria.PhiFraction, 0.9},
		{"φ latency", c.Criteria.PhiLatency, time.Second},
		{"initial Q", c.InitialQ, 1000.0},
		{"client threads", c.ClientThreads, 32},
		{"max clients", c.MaxClients, 16},
		{"search", c.Search, Bisect},
		{"hint", c.Hint, 10 * time.Second},
		{"hint clients", c.HintClients, 2},
		{"window", c.Window, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
			}
		})
	}
}

func TestScenarioValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		sets []string
		want string
	}{
		{name: "kmax too big", doc: minimal, sets: []string{"upb.kmax=11"}, want: "field upb.kmax"},
		{name: "unknown search", doc: minimal, sets: []string{"upb.search=random"}, want: "field upb.search"},
		{name: "unknown field", doc: minimal, sets: []string{"upb.kmx=1"}, want: "kmx"},
		{name: "tolerance 1", doc: minimal, sets: []string{"upb.steady_tolerance=1"}, want: "field upb.steady_tolerance"},
		{name: "sample not a multiple of the window", doc: minimal, sets: []string{"load.window=300ms", "upb.steady_sample=1s"}, want: "not a multiple of load.window"},
		{name: "measure shorter than two samples", doc: minimal, sets: []string{"upb.measure=5s", "upb.steady_sample=5s"}, want: "two steady samples"},
		{name: "schedule", doc: minimal + "schedule: [{at: 1s, fault: kill, node: leader}]\n", want: "upb injects its own failures"},
		{name: "endpoints", doc: strings.Replace(minimal, "{kind: etcd}", "{kind: etcd, endpoints: [127.0.0.1:2379]}", 1), want: "target.endpoints"},
		{name: "bad duration", doc: minimal, sets: []string{"upb.measure=soon"}, want: "not a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenario.Parse([]byte(tc.doc), "t.yaml", tc.sets)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	sc, err := scenario.Parse([]byte(minimal), "t.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Resolve("leader")
	good, err := ConfigFrom(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(c *Config)
		want string
	}{
		{"kmax 0", func(c *Config) { c.KMax = 0 }, "kmax"},
		{"negative warm-up", func(c *Config) { c.Warmup = -1 }, "negative"},
		{"sample not a multiple", func(c *Config) { c.SteadySample = 1500 * time.Millisecond }, "multiple of the window"},
		{"no clients", func(c *Config) { c.MaxClients = 0 }, "max clients"},
		{"bisect without hint", func(c *Config) { c.Hint = 0 }, "hint"},
		{"no φ latency", func(c *Config) { c.Criteria.PhiLatency = 0 }, "phi latency"},
		{"negative L_c", func(c *Config) { c.Lc = -5 }, "L_c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("no upb section", func(t *testing.T) {
		if _, err := ConfigFrom(&scenario.Scenario{}); err == nil || !strings.Contains(err.Error(), "no upb section") {
			t.Errorf("error %v", err)
		}
	})
}

func TestShippedScenarios(t *testing.T) {
	for _, f := range []string{"../../scenarios/upb-etcd.yaml", "../../scenarios/upb-redis-cluster.yaml"} {
		t.Run(f, func(t *testing.T) {
			sc, err := scenario.LoadFile(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			tgt, err := targets.Builtin().Get(sc.Target.Kind)
			if err != nil {
				t.Fatal(err)
			}
			sc.Resolve(tgt.DefaultVictim)
			if _, err := ConfigFrom(sc); err != nil {
				t.Error(err)
			}
			if _, err := sc.WorkloadPath(f); err != nil {
				t.Error(err)
			}
		})
	}
}
