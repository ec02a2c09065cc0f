// Package upb automates the Under Pressure Benchmark (UPB: Fior et al.,
// "Under Pressure Benchmark for DDBMS Availability", JIDM 4(3), 2013;
// docs/papers.md).
//
// UPB measures how replication and failures cost throughput. With a
// fault-tolerance index K (how many nodes may fail without an outage) and F
// failed nodes, T(K,F) is the maximum throughput the cluster sustains —
// keeping up with the offered load within 5 %, in a steady state, with φ
// (at least 90 % of the operations within 1 s) holding. The three steps
// measure T(0,0), T(K,0) for K = 1..Kmax and T(K,F) for F = 1..K, and the
// metrics compare them:
//
//	D(K,0) = (1 − T(K,0)/T(0,0)) · 100
//	D(K,F) = (1 − T(K,F)/T(K,0)) · 100
//	DF(K)  = Σ_{F=1..K} D(K,F)/F / Σ_{F=1..K} 1/F
//	D_T    = mean of D(K,0) over K = 1..Kmax
//	D_F    = mean of DF(K) over K = 1..Kmax
//
// The package is layered so that the methodology can be tested without a
// database:
//
//   - search.go: the pure search logic over a Prober (measure a number of
//     clients at a rate per client, get the achieved tps, whether φ held and
//     whether the window was steady): CalibrateLc (the paper's iterative
//     method for the per-client limit L_c) and Algorithm1 (the baseline
//     search for T(K,F)), each linear as in the paper or by bisection over
//     the same ladder of loads;
//   - metrics.go: the formulas, and reading and writing k,f,t CSV files;
//   - tables.go: the paper's Tables IV–X as text;
//   - window.go and prober.go: ExecProber, the real Prober, which runs each
//     probe with experiment.Execute and finds its steady window and φ;
//   - run.go: Run, the whole methodology on clusters it launches, one per K.
//
// docs/upb.md describes the method as implemented and its deviations from
// the paper.
package upb
