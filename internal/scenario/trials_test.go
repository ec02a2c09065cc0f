package scenario

import (
	"strings"
	"testing"
	"time"
)

const trialsDoc = `
name: t
target: {kind: etcd, nodes: 3}
workload: {ycsb: workloada}
load: {duration: 90s}
schedule:
  - {at: 30s..45s, fault: kill, node: "random-of(followers)", as: victim}
  - {at: 60s, fault: start, node: victim}
trials: {n: 5, seed: 42, mode: reuse}
`

func TestTrialsParse(t *testing.T) {
	sc, err := Parse([]byte(trialsDoc), "file.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Trials == nil || sc.Trials.N != 5 || sc.Trials.Seed != 42 || sc.Trials.Mode != TrialsReuse {
		t.Fatalf("trials %+v", sc.Trials)
	}
	at := sc.Schedule.Steps[0].At
	if at.From.D() != 30*time.Second || at.To.D() != 45*time.Second || !at.IsWindow() || !sc.Randomised() {
		t.Fatalf("at %+v", at)
	}
	b, err := sc.Marshal()
	if err != nil || !strings.Contains(string(b), "at: 30s..45s") {
		t.Fatalf("marshalled %s (%v): want the window written back", b, err)
	}
	fixed, err := Parse([]byte(strings.Replace(trialsDoc, "30s..45s", "30s", 1)), "file.yaml", nil)
	if err != nil || fixed.Randomised() {
		t.Fatalf("a fixed time is randomised (%v)", err)
	}
	// the window is settable with --set, as any time
	sc, err = Parse([]byte(trialsDoc), "file.yaml", []string{"schedule.1.at=70s..75s", "trials.n=3"})
	if err != nil || !sc.Schedule.Steps[1].At.IsWindow() || sc.Trials.N != 3 {
		t.Fatalf("--set: %v %+v", err, sc.Schedule.Steps[1].At)
	}
}

func TestTrialsParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		sets []string
		want string
	}{
		{"window backwards", strings.Replace(trialsDoc, "30s..45s", "45s..30s", 1), nil, `window "45s..30s" ends before it starts`},
		{"window backwards by --set", trialsDoc, []string{"schedule.0.at=45s..30s"}, "ends before it starts"},
		{"window end not a duration", strings.Replace(trialsDoc, "30s..45s", "30s..soon", 1), nil, "not a duration"},
		{"window past the end", strings.Replace(trialsDoc, "30s..45s", "30s..95s", 1), nil, "schedule[0].at: 1m35s is not before the end"},
		{"zero trials", strings.Replace(trialsDoc, "n: 5", "n: 0", 1), nil, "field trials.n: 0: allowed 1..1000"},
		{"negative trials", trialsDoc, []string{"trials.n=-2"}, "field trials.n: -2"},
		{"bad mode", strings.Replace(trialsDoc, "mode: reuse", "mode: recycle", 1), nil, `field trials.mode: "recycle"`},
		{"unknown key", strings.Replace(trialsDoc, "mode: reuse", "mod: reuse", 1), nil, "field trials.mod: unknown"},
		{"steady window past the end", `
name: t
target: {kind: etcd}
workload: {ycsb: workloada}
load: {duration: 60s}
schedule: {steady: 20s..40s, down: 20s, after: 10s}
`, nil, "steady 40s + down 20s is not before the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "file.yaml", tc.sets)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestDraw: the same seed draws the same times, different seeds spread
// over the window, and every draw lies inside it; the failover shorthand's
// restore moves with the drawn fault time.
func TestDraw(t *testing.T) {
	draw := func(doc string, seed uint64) *Scenario {
		sc, err := Parse([]byte(doc), "file.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		sc.Draw(seed)
		sc.Resolve("leader")
		return sc
	}
	var min, max time.Duration = time.Hour, 0
	seen := map[time.Duration]bool{}
	for seed := range uint64(200) {
		a, b := draw(trialsDoc, seed), draw(trialsDoc, seed)
		at := a.Schedule.Steps[0].At
		if at != b.Schedule.Steps[0].At {
			t.Fatalf("seed %d drew %v then %v", seed, at, b.Schedule.Steps[0].At)
		}
		if at.IsWindow() || at.D() < 30*time.Second || at.D() > 45*time.Second {
			t.Fatalf("seed %d drew %v, outside 30s..45s", seed, at)
		}
		if a.Schedule.Steps[1].At != At(60*time.Second) {
			t.Fatalf("the fixed step moved: %v", a.Schedule.Steps[1].At)
		}
		min, max = minD(min, at.D()), maxD(max, at.D())
		seen[at.D()] = true
	}
	// 200 uniform draws over 15 s: the extremes within 1 s of the ends
	if min > 31*time.Second || max < 44*time.Second || len(seen) < 150 {
		t.Errorf("200 seeds drew %d distinct times in [%v, %v]: not spread over 30s..45s", len(seen), min, max)
	}
	fo := `
name: t
target: {kind: etcd}
workload: {ycsb: workloada}
schedule: {steady: 20s..40s, down: 15s, after: 10s}
`
	sc := draw(fo, 3)
	kill, start := sc.Schedule.Steps[0].At.D(), sc.Schedule.Steps[1].At.D()
	if kill < 20*time.Second || kill > 40*time.Second || start-kill != 15*time.Second {
		t.Fatalf("failover drew kill at %v, start at %v", kill, start)
	}
	if sc.Load.Duration.D() != 65*time.Second {
		t.Errorf("duration %v: want the window's end + down + after = 65s, the same for every trial", sc.Load.Duration.D())
	}
}

func TestTrialSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for k := 1; k <= 100; k++ {
		s := TrialSeed(42, k)
		if s != TrialSeed(42, k) || seen[s] {
			t.Fatalf("trial %d: seed %d not stable or repeated", k, s)
		}
		seen[s] = true
	}
	if TrialSeed(42, 1) == TrialSeed(43, 1) {
		t.Error("base seed not used")
	}
}

func minD(a, b time.Duration) time.Duration { return min(a, b) }
func maxD(a, b time.Duration) time.Duration { return max(a, b) }
