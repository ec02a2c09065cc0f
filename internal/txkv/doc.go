// Package txkv is the root of faultbench's implementation of the
// transactional key-value store with failure-recovery middleware of Ahmad
// et al., "Transactional Failure Recovery for a Distributed Key-Value
// Store", Middleware 2013 (docs/papers.md): an independent transaction
// manager over HBase-like region servers that persist asynchronously, with
// a recovery manager that replays what a client or server failure lost. The parts live in sub-packages:
//
//   - wire: RPC types, write-set encoding, region key ranges, connections
//   - track: the threshold logic (T_F, T_P, T*_F, T*_P; Algorithms 1-4)
//   - seglog: segmented append-only logs with group fsync (recovery log, WAL)
//   - store: a region's multi-version in-memory store and region files
//   - coord: the coordinator (transaction manager, recovery manager, master)
//   - server: the region server
//   - client: the client library
//
// Processes are started by internal/launcher/txkv as `faultbench node
// txkv-coordinator` and `faultbench node txkv-server`; the driver is
// internal/driver/txkv. See docs/targets-txkv.md.
package txkv
