package reproduce

import (
	"fmt"
	"strings"
)

// Scale is how big a reproduction runs: Small fits one 2-core machine in
// under an hour per paper, Full takes the paper's sizes (records, nodes,
// durations, rates) for a user with the machines.
type Scale string

// The scales.
const (
	Small Scale = "small"
	Full  Scale = "full"
)

// ParseScale reads a --scale value.
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case Small, Full:
		return Scale(s), nil
	}
	return "", fmt.Errorf("scale %q: allowed small (this machine, under an hour per paper) or full (the paper's sizes)", s)
}

// Kind is how a step's scenario is run.
type Kind string

// The kinds: a scenario run (with trials when the step has them), a
// scalability sweep, the Under Pressure Benchmark.
const (
	KindScenario Kind = "scenario"
	KindSweep    Kind = "sweep"
	KindUPB      Kind = "upb"
)

// Table names the table of the page a step's run fills: its columns.
type Table string

// The tables.
const (
	TableFailover Table = "failover"   // the failover study's metrics
	TableReconfig Table = "reconfig"   // the CumuloNimbo metrics: reconfiguration time, peak latency, aborts
	TableElastic  Table = "elasticity" // EB1: streaming, stabilisation, p99 before and during
	TableSweep    Table = "sweep"      // one row per step of a sweep
	TableUPB      Table = "upb"        // T(K,F), D(K,0), D(K,F), DF(K), D_T, D_F
	TableRun      Table = "run"        // throughput and latency of a run without a fault
)

// Step is one experiment of a paper: one scenario (a shipped file, with
// --set assignments) that reproduces one of its figures or tables.
type Step struct {
	ID     string // unique within the paper; the row's key in the tables
	Figure string // the paper's figure or table it reproduces
	File   string // the embedded scenario, DIR/NAME (scenarios/DIR/NAME.yaml)
	Kind   Kind
	Table  Table
	Sets   []string // --set assignments at both scales
	Small  []string // ... at the small scale only
	Full   []string // ... at the full scale only
	// SmallTrials and FullTrials, when > 0, run the step as that many
	// trials (the figure is a comparison); 0 runs it once (or as the
	// scenario's own trials: section says).
	SmallTrials, FullTrials int
	// Only, when set, runs the step at that scale only.
	Only Scale
}

// SetsFor returns the step's --set assignments at scale sc.
func (s Step) SetsFor(sc Scale) []string {
	out := append([]string(nil), s.Sets...)
	if sc == Small {
		return append(out, s.Small...)
	}
	return append(out, s.Full...)
}

// TrialsFor returns the step's number of trials at scale sc (0: once).
func (s Step) TrialsFor(sc Scale) int {
	if sc == Small {
		return s.SmallTrials
	}
	return s.FullTrials
}

// Paper is one of the five papers and the steps that reproduce it.
type Paper struct {
	Name  string // the command's argument and the scenario directory
	Title string
	Cite  string // authors, title, venue, year
	Page  string // the reproduction page, relative to the repository root
	// SmallMinutes and FullHours are the expected wall times (estimates
	// from the steps' durations, cluster starts and loads).
	SmallMinutes, FullHours int
	Steps                   []Step
}

// StepsFor returns the steps that run at scale sc, in order.
func (p Paper) StepsFor(sc Scale) []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Only == "" || s.Only == sc {
			out = append(out, s)
		}
	}
	return out
}

// Names lists the papers' names in catalog order.
func Names() []string {
	var out []string
	for _, p := range Papers() {
		out = append(out, p.Name)
	}
	return out
}

// Lookup finds a paper by name; the error lists the valid names with
// their titles.
func Lookup(name string) (Paper, error) {
	for _, p := range Papers() {
		if p.Name == name {
			return p, nil
		}
	}
	var b strings.Builder
	for _, p := range Papers() {
		fmt.Fprintf(&b, "\n  %-15s %s", p.Name, p.Title)
	}
	return Paper{}, fmt.Errorf("unknown paper %q; the papers are:%s", name, b.String())
}

// Papers returns the catalog: the five papers faultbench implements
// (docs/papers.md), each with the steps of `faultbench reproduce`.
func Papers() []Paper {
	return []Paper{upbPaper(), failoverPaper(), scalabilityPaper(), cumulonimboPaper(), txkvPaper()}
}

func upbPaper() Paper {
	small := []string{"workload.properties.recordcount=100000", "upb.measure=30s", "upb.warmup=10s", "upb.steady_sample=5s"}
	full := []string{"upb.kmax=3"}
	step := func(target string, only Scale) Step {
		return Step{ID: "upb-" + target, Figure: "Tables IV-X", File: "upb/upb-" + target, Kind: KindUPB, Table: TableUPB,
			Small: small, Full: full, Only: only}
	}
	return Paper{
		Name:  "upb",
		Title: "Under Pressure Benchmark for DDBMS Availability",
		Cite: "Alessandro Gustavo Fior, Jorge Augusto Meira, Eduardo Cunha de Almeida, Ricardo Gonçalves Coelho, " +
			"Marcos Didonet Del Fabro, Yves Le Traon. Under Pressure Benchmark for DDBMS Availability. JIDM 4(3), 2013",
		Page:         "docs/reproductions/upb.md",
		SmallMinutes: 45, FullHours: 14,
		Steps: []Step{step("etcd", ""), step("redis-cluster", Full), step("cassandra", Full), step("galera", Full)},
	}
}

func failoverPaper() Paper {
	small := []string{"schedule.steady=30s", "schedule.down=60s", "schedule.after=120s"}
	full := []string{"workload.properties.recordcount=50000000"}
	cass := func(id, fig string, smallTrials, fullTrials int, only Scale) Step {
		return Step{ID: id, Figure: fig, File: "nosql-failover/" + id, Kind: KindScenario, Table: TableFailover,
			Small: small, Full: full, SmallTrials: smallTrials, FullTrials: fullTrials, Only: only}
	}
	other := func(target string) Step {
		// the other databases at 75 %, the paper's timing, 5 trials: the
		// comparison of Figures 4a, 4b, 6 and the Table's columns
		return Step{ID: "failover-" + target, Figure: "Table (columns), Figures 1, 4a, 4b, 6, 7", File: "failover-" + target,
			Kind: KindScenario, Table: TableFailover, Sets: []string{"load.rate=75%", "schedule.steady=10m", "schedule.down=10m", "schedule.after=20m"},
			FullTrials: 5, Only: Full}
	}
	return Paper{
		Name:  "nosql-failover",
		Title: "NoSQL Failover Characteristics: Aerospike, Cassandra, Couchbase, MongoDB",
		Cite: "Denis Nelubin, Ben Engber. NoSQL Failover Characteristics: Aerospike, Cassandra, Couchbase, MongoDB. " +
			"White paper, Thumbtack Technology, 2013",
		Page:         "docs/reproductions/nosql-failover.md",
		SmallMinutes: 50, FullHours: 12,
		Steps: []Step{
			cass("cassandra-async-50", "Figure 5 (50 %)", 0, 0, ""),
			cass("cassandra-async-75", "Table: Cassandra (async); Figures 1b, 4a, 4b, 5 (75 %), 6, 7", 3, 5, ""),
			cass("cassandra-async-100", "Figures 2b, 5 (100 %), 7", 0, 0, ""),
			cass("cassandra-sync-75", "Table: Cassandra (sync); Figure 3b", 3, 5, ""),
			cass("cassandra-rf3-sync-75", "footnotes 8 and 11 (RF 3: writes should succeed)", 0, 0, Full),
			cass("cassandra-async-75-read-heavy", "Test variations: 95/5 workload", 0, 0, Full),
			other("etcd"), other("redis-cluster"), other("galera"), other("postgres-ha"),
		},
	}
}

func scalabilityPaper() Paper {
	eb1Full := []string{"target.nodes=3", "target.options.cassandra.rf=3", "workload.properties.recordcount=10000000", "load.rate=8000", "load.duration=60m"}
	eb1 := func(n int, fig string) Step {
		full := eb1Full
		if n == 1 { // 198 minutes of streaming at 5 Mbit/s in the paper
			full = append(append([]string(nil), eb1Full[:4]...), "load.duration=240m")
		}
		return Step{ID: fmt.Sprintf("eb1-cs%d", n), Figure: fig, File: fmt.Sprintf("scalability/eb1-cs%d", n),
			Kind: KindScenario, Table: TableElastic, Full: full}
	}
	sb3Full := []string{"sweep.nodes=[4,8,12]", "sweep.records_per_node=10000000", "sweep.threads_per_node=64", "load.duration=10m"}
	sb3 := func(w, fig string, only Scale) Step {
		return Step{ID: "sb3-" + w, Figure: fig, File: "scalability/sb3-" + w, Kind: KindSweep, Table: TableSweep,
			Small: []string{"load.duration=30s"}, Full: sb3Full, Only: only}
	}
	vol := func(gb, records int) Step {
		return Step{ID: fmt.Sprintf("table3-%dgb", gb), Figure: "Table 3, Figure 9", File: "scalability/sb1-data-volume", Kind: KindScenario,
			Table: TableRun, Full: []string{fmt.Sprintf("workload.properties.recordcount=%d", records)}, Only: Full}
	}
	return Paper{
		Name:  "scalability",
		Title: "Benchmarking Scalability and Elasticity of Distributed Database Systems",
		Cite:  "Jörn Kuhlenkamp, Markus Klems, Oliver Röss. Benchmarking Scalability and Elasticity of Distributed Database Systems. PVLDB 7(13), 2014",
		Page:  "docs/reproductions/scalability.md",
		// small: six EB1 rows (~7 min each, CS-5 ~11) and SB3 R (3 steps)
		SmallMinutes: 55, FullHours: 30,
		Steps: []Step{
			eb1(1, "Table 5 CS-1, Figures 12, 13"), eb1(2, "Table 5 CS-2, Figures 12, 13"), eb1(3, "Table 5 CS-3, Figures 12, 13"),
			eb1(4, "Table 5 CS-4, Figures 12, 13"), eb1(5, "Table 5 CS-5"), eb1(6, "Table 5 CS-6"),
			sb3("r", "Figure 1 (Cassandra)", ""), sb3("w", "Figure 2 (Cassandra)", Full), sb3("rs", "Figure 5 (Cassandra)", Full),
			{ID: "sb1-throughput", Figure: "Section 4.5, Figure 3", File: "scalability/sb1-throughput", Kind: KindSweep, Table: TableSweep,
				Full: []string{"target.nodes=8", "workload.properties.recordcount=80000000", "load.duration=10m"}, Only: Full},
			vol(5, 15000000), vol(10, 30000000), vol(15, 45000000), vol(20, 60000000), vol(30, 90000000),
		},
	}
}

func cumulonimboPaper() Paper {
	small := []string{"load.warmup=60s", "load.duration=240s", "schedule.0.at=90s"}
	fullSizes := func(nodes int) []string {
		w := 300 * nodes
		return []string{fmt.Sprintf("target.nodes=%d", nodes), "target.options.txkv.servers-per-node=4", fmt.Sprintf("target.options.txkv.regions=%d", 8*nodes),
			fmt.Sprintf("workload.properties.tpcc.warehouses=%d", w), fmt.Sprintf("load.threads=%d", terminals(w)),
			"workload.properties.tpcc.items=100000", "workload.properties.tpcc.customers-per-district=3000"}
	}
	fail := func(id, fig string, nodes int, only Scale) Step {
		return Step{ID: id, Figure: fig, File: "cumulonimbo/tpcc-" + strings.TrimSuffix(strings.TrimSuffix(id, "-5n"), "-4n"), Kind: KindScenario, Table: TableReconfig,
			Small: small, Full: fullSizes(nodes), Only: only}
	}
	var steps []Step
	for _, s := range []int{1, 2, 4} {
		steps = append(steps, Step{ID: fmt.Sprintf("fig5-rs%d-w2", s), Figure: "Figure 5", File: "cumulonimbo/tpcc-calibration", Kind: KindScenario, Table: TableRun,
			Sets: []string{fmt.Sprintf("target.options.txkv.servers-per-node=%d", s)}, Only: Small})
	}
	for s := 1; s <= 4; s++ {
		for _, perRS := range []int{50, 100, 200, 300, 400, 500} {
			w := s * perRS
			steps = append(steps, Step{ID: fmt.Sprintf("fig5-rs%d-w%d", s, w), Figure: "Figure 5", File: "cumulonimbo/tpcc-calibration", Kind: KindScenario, Table: TableRun,
				Sets: []string{fmt.Sprintf("target.options.txkv.servers-per-node=%d", s), fmt.Sprintf("workload.properties.tpcc.warehouses=%d", w),
					fmt.Sprintf("load.threads=%d", terminals(w)), "workload.properties.tpcc.items=100000", "workload.properties.tpcc.customers-per-district=3000",
					"load.duration=10m"}, Only: Full})
		}
	}
	steps = append(steps,
		fail("one-server-4n", "Figure 6", 4, ""),
		fail("two-servers-4n", "Figure 8", 4, ""),
		fail("node-servers-4n", "Figures 10, 14", 4, ""),
		fail("two-nodes-4n", "Figure 15", 4, ""),
		fail("one-server-5n", "Figure 7", 5, Full),
		fail("two-servers-5n", "Figure 9", 5, Full),
		fail("node-servers-5n", "Figures 11, 16", 5, Full),
		fail("two-nodes-5n", "Figure 17", 5, Full),
	)
	return Paper{
		Name:  "cumulonimbo",
		Title: "Fault-tolerance Evaluation of a New SQL Database",
		Cite: "Ainhoa Azqueta-Alzúaz, Marta Patiño-Martínez, Valerio Vianello, Ricardo Jiménez-Peris. " +
			"Fault-tolerance Evaluation of a New SQL Database. EDCC 2018",
		Page:         "docs/reproductions/cumulonimbo.md",
		SmallMinutes: 45, FullHours: 16,
		Steps: steps,
	}
}

// terminals is TPC-C's 10 terminals per warehouse, at most the 10,000
// threads a scenario's load may have (above 1,000 warehouses a terminal
// serves more than a tenth of a warehouse; the page says so).
func terminals(warehouses int) int { return min(10*warehouses, 10000) }

func txkvPaper() Paper {
	small := []string{"workload.properties.recordcount=100000", "load.duration=30s"}
	var steps []Step
	for _, p := range []string{"async", "sync"} {
		steps = append(steps, Step{ID: "persistence-" + p, Figure: "Figure 2(a)", File: "txkv-recovery/persistence-" + p, Kind: KindSweep, Table: TableSweep, Small: small})
	}
	hb := func(iv string, only Scale) Step {
		return Step{ID: "heartbeat-" + iv, Figure: "Figure 2(b)", File: "txkv-recovery/heartbeat", Kind: KindScenario, Table: TableRun,
			Sets: []string{"target.options.txkv.heartbeat=" + iv}, Small: small, Only: only}
	}
	for _, iv := range []string{"50ms", "100ms", "1s", "10s"} {
		steps = append(steps, hb(iv, ""))
	}
	for _, iv := range []string{"250ms", "500ms", "2s", "5s"} {
		steps = append(steps, hb(iv, Full))
	}
	steps = append(steps, Step{ID: "server-crash", Figure: "Figure 3", File: "txkv-recovery/server-crash", Kind: KindScenario, Table: TableReconfig,
		Small: []string{"workload.properties.recordcount=100000"}})
	return Paper{
		Name:  "txkv-recovery",
		Title: "Transactional Failure Recovery for a Distributed Key-Value Store",
		Cite: "Muhammad Yousuf Ahmad, Bettina Kemme, Ivan Brondino, Marta Patiño-Martínez, Ricardo Jiménez-Peris. " +
			"Transactional Failure Recovery for a Distributed Key-Value Store. Middleware 2013, LNCS 8275",
		Page:         "docs/reproductions/txkv-recovery.md",
		SmallMinutes: 40, FullHours: 2,
		Steps: steps,
	}
}
