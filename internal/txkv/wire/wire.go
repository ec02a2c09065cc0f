// Package wire holds what every txkv process shares: the RPC request and
// reply types of the coordinator and the region servers, the status codes
// carried in replies, write-sets and their binary encoding (used in the
// coordinator's recovery log and the servers' write-ahead logs), the key
// ranges of regions, and a reconnecting RPC connection with context support.
//
// txkv speaks Go's net/rpc (gob encoding) over TCP on 127.0.0.1: it is in the
// standard library, multiplexes concurrent calls over one connection, and
// needs no code generation. Application outcomes travel in each reply's
// Status (never as net/rpc errors), so a transport error always means the
// call may not have reached the peer.
package wire

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Code is the outcome of an RPC at the application level.
type Code uint8

// The codes.
const (
	OK          Code = iota // success
	Aborted                 // the transaction lost a write-write conflict (first committer wins)
	NotServing              // the region is not online on this server (stale location, opening, closed)
	Dead                    // the caller has been declared failed; it must stop (and may register anew)
	Unknown                 // the caller's id is not registered
	BadRequest              // malformed request
	Internal                // a server-side error (I/O)
	Unavailable             // the service is not ready yet (e.g. regions not assigned)
)

// String names the code.
func (c Code) String() string {
	switch c {
	case OK:
		return "ok"
	case Aborted:
		return "aborted"
	case NotServing:
		return "not-serving"
	case Dead:
		return "dead"
	case Unknown:
		return "unknown"
	case BadRequest:
		return "bad-request"
	case Internal:
		return "internal"
	case Unavailable:
		return "unavailable"
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Status is embedded in every reply.
type Status struct {
	Code Code
	Msg  string
}

// Err returns nil for OK and a *StatusError otherwise.
func (s Status) Err() error {
	if s.Code == OK {
		return nil
	}
	return &StatusError{Code: s.Code, Msg: s.Msg}
}

// StatusError is a non-OK Status as an error.
type StatusError struct {
	Code Code
	Msg  string
}

// Error renders the code and message.
func (e *StatusError) Error() string {
	if e.Msg == "" {
		return e.Code.String()
	}
	return e.Code.String() + ": " + e.Msg
}

// Errorf returns a Status with code and a formatted message.
func Errorf(code Code, format string, args ...any) Status {
	return Status{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Persistence is how region servers persist what clients flush to them.
type Persistence string

// The persistence modes.
const (
	// Async is the paper's mode: a server acknowledges a write once it is in
	// its WAL buffer and memstore, and syncs the WAL shortly after; the
	// client's commit returns once the coordinator has logged it, and the
	// write-set is flushed to the servers after that.
	Async Persistence = "async"
	// Sync is the comparison mode: a server syncs its WAL before
	// acknowledging, and a commit returns only once its write-set is flushed
	// to and persisted by every participating server.
	Sync Persistence = "sync"
)

// Config is the cluster-wide configuration the coordinator hands to every
// server and client at registration.
type Config struct {
	Persistence Persistence
	// Heartbeat is the interval of client and server heartbeats.
	Heartbeat time.Duration
	// SessionTimeout is how long the recovery manager waits for a heartbeat
	// before it declares a client or server failed.
	SessionTimeout time.Duration
	// WALSyncInterval is how often a server syncs its WAL in async mode.
	WALSyncInterval time.Duration
	// MemstoreFlushBytes is the memstore size at which a region is flushed
	// to a region file.
	MemstoreFlushBytes int64
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Persistence != Async && c.Persistence != Sync:
		return fmt.Errorf("persistence must be %s or %s, got %q", Async, Sync, c.Persistence)
	case c.Heartbeat < time.Millisecond || c.Heartbeat > time.Minute:
		return fmt.Errorf("heartbeat must be between 1ms and 1m, got %v", c.Heartbeat)
	case c.SessionTimeout < 2*c.Heartbeat:
		return fmt.Errorf("session timeout (%v) must be at least twice the heartbeat (%v)", c.SessionTimeout, c.Heartbeat)
	case c.WALSyncInterval <= 0 || c.WALSyncInterval > time.Minute:
		return fmt.Errorf("WAL sync interval must be in (0, 1m], got %v", c.WALSyncInterval)
	case c.MemstoreFlushBytes < 1<<10:
		return fmt.Errorf("memstore flush size must be at least 1 KiB, got %d", c.MemstoreFlushBytes)
	}
	return nil
}

// RegionID identifies a region.
type RegionID uint32

// Region is one key range [Start, End) of the table space; End "" means
// unbounded. Keys are compared without their table.
type Region struct {
	ID    RegionID
	Start string
	End   string
}

// Contains reports whether key falls in r.
func (r Region) Contains(key string) bool {
	return key >= r.Start && (r.End == "" || key < r.End)
}

// String renders r as "r3[user33,user44)".
func (r Region) String() string {
	end := r.End
	if end == "" {
		end = "∞"
	}
	return fmt.Sprintf("r%d[%s,%s)", r.ID, r.Start, end)
}

// DefaultSplits returns n regions whose boundaries spread YCSB keys evenly:
// YCSB keys are "user" followed by the decimal FNV hash of the record
// number, whose first two digits are close to uniform over 10..91. Other
// keys work too, just less evenly spread.
func DefaultSplits(n int) []Region {
	if n < 1 {
		n = 1
	}
	out := make([]Region, n)
	prev := ""
	for i := 0; i < n; i++ {
		end := ""
		if i < n-1 {
			end = "user" + strconv.Itoa(10+(i+1)*82/n)
		}
		out[i] = Region{ID: RegionID(i), Start: prev, End: end}
		prev = end
	}
	return out
}

// RegionInfo is one region's location in a RegionMap.
type RegionInfo struct {
	Region
	Server string // server name, "" while unassigned
	Addr   string // server address, "" while unassigned
	Online bool
}

// RegionMap is the master's view of where regions are.
type RegionMap struct {
	Version uint64
	Regions []RegionInfo // sorted by Start
}

// Find returns the index of the region holding key (-1 if none).
func (m *RegionMap) Find(key string) int {
	i := sort.Search(len(m.Regions), func(i int) bool {
		return m.Regions[i].End == "" || key < m.Regions[i].End
	})
	if i < len(m.Regions) && m.Regions[i].Contains(key) {
		return i
	}
	return -1
}

// Write is one row operation of a write-set: Fields overwrite the named
// fields of the row, Delete removes the whole row.
type Write struct {
	Table  string
	Key    string
	Delete bool
	Fields []Field // sorted by Name
}

// Field is one field value.
type Field struct {
	Name  string
	Value []byte
}

// ---- coordinator RPCs ("Coord.*") ----

// RegisterClientArgs registers a client.
type RegisterClientArgs struct {
	Name string
	// Oldest is a lower bound of the client's open and future snapshots
	// (0: none open); a client registering again keeps its open
	// transactions' snapshots from version garbage collection.
	Oldest uint64
}

// RegisterClientReply answers RegisterClient.
type RegisterClientReply struct {
	Status
	ClientID uint64
	TF       uint64 // the initial T_F(c): T*_F
	Now      uint64 // the timestamp oracle's current value
	Visible  uint64 // the snapshot Begin would hand out now (a floor of later ones)
	Config   Config
	Map      RegionMap
}

// ClientArgs names a client.
type ClientArgs struct{ ClientID uint64 }

// ClientHeartbeatArgs is a client heartbeat carrying T_F(c).
type ClientHeartbeatArgs struct {
	ClientID uint64
	TF       uint64
	// Oldest is a lower bound of every snapshot the client's transactions
	// read now or will read: the oldest open transaction's, or the newest
	// snapshot the client has learnt of when none is open (0: no bound).
	Oldest uint64
}

// HeartbeatReply answers heartbeats.
type HeartbeatReply struct {
	Status
	TStarF  uint64 // T*_F
	Now     uint64 // the timestamp oracle's current value
	Visible uint64 // the snapshot Begin would hand out now (clients)
	// LowWater is the version garbage-collection mark (servers): no
	// transaction reads a snapshot below it, so versions that no snapshot
	// at or above it can see may be dropped (0: none).
	LowWater uint64
}

// BeginReply answers Begin.
type BeginReply struct {
	Status
	StartTS uint64
}

// CommitArgs asks the transaction manager to commit a write-set.
type CommitArgs struct {
	ClientID uint64
	TxnID    uint64 // unique per client; a retried commit carries the same id
	StartTS  uint64
	Writes   []Write
	// ResolvedBelow: every TxnID below it has an outcome the client knows,
	// so the coordinator may forget those outcomes.
	ResolvedBelow uint64
}

// CommitReply answers Commit.
type CommitReply struct {
	Status
	CommitTS uint64
}

// FlushedArgs reports write-sets the client has fully flushed.
type FlushedArgs struct {
	ClientID uint64
	TS       []uint64
}

// StatusReply is a reply with only a Status.
type StatusReply struct{ Status }

// RegisterServerArgs registers a region server.
type RegisterServerArgs struct {
	Name string
	Addr string
}

// RegisterServerReply answers RegisterServer.
type RegisterServerReply struct {
	Status
	ServerID uint64
	TP       uint64 // the initial T_P(s): T*_F
	Config   Config
	WALDir   string // the server's WAL directory under the shared storage
}

// ServerHeartbeatArgs is a server heartbeat carrying T_P(s).
type ServerHeartbeatArgs struct {
	ServerID uint64
	TP       uint64
	Pending  int // write-sets received and not yet persisted (the PQ size)
}

// ServerArgs names a server.
type ServerArgs struct{ ServerID uint64 }

// RecoverRegionArgs is the region-open hook: the server has loaded the
// region's files and replayed the failed servers' WAL entries for it, and
// waits for the recovery manager's transactional replay.
type RecoverRegionArgs struct {
	ServerID uint64
	Region   RegionID
}

// LocateReply carries the region map.
type LocateReply struct {
	Status
	Map RegionMap
}

// ServerStatus is one server in a ClusterStatus.
type ServerStatus struct {
	Name    string
	ID      uint64
	Addr    string
	Live    bool
	TP      uint64
	Regions []RegionID
}

// ClientStatus is one client in a ClusterStatus.
type ClientStatus struct {
	Name string
	ID   uint64
	TF   uint64
	Dead bool // failed, being recovered
}

// ClusterStatus is the coordinator's view, for the launcher and tests.
type ClusterStatus struct {
	Status
	Now          uint64
	Visible      uint64
	TStarF       uint64
	TStarP       uint64
	Servers      []ServerStatus
	Clients      []ClientStatus
	Map          RegionMap
	Recoveries   []Recovery
	LogSegments  int
	Commits      uint64
	Aborts       uint64
	ExpectedSrvs int
	// Recovering: the coordinator restarted and replays its log; it hands
	// out no snapshots and accepts no commits until this is false.
	Recovering bool
	// LowWater is the version garbage-collection mark; ConflictKeys the
	// keys the transaction manager keeps last commit timestamps of.
	LowWater     uint64
	ConflictKeys int
}

// Recovery records one finished recovery, for the launcher and reports.
type Recovery struct {
	Kind      string // "server", "client" or "coordinator" (a restart's log replay)
	Name      string
	Detected  time.Time
	Done      time.Time
	Replayed  int // write-sets replayed (server: summed over regions)
	Regions   int
	From      uint64 // the threshold replay started after
	DetectAge time.Duration
}

// ---- region server RPCs ("Server.*") ----

// ReadArgs reads one row at a snapshot.
type ReadArgs struct {
	Region RegionID
	Table  string
	Key    string
	Fields []string // nil: all
	TS     uint64
}

// ReadReply answers Read.
type ReadReply struct {
	Status
	Found  bool
	Fields []Field
}

// ScanArgs reads up to Count rows of Table from Key on within one region.
type ScanArgs struct {
	Region RegionID
	Table  string
	Key    string
	Count  int
	Fields []string
	TS     uint64
}

// Row is one row of a scan.
type Row struct {
	Key    string
	Fields []Field
}

// ScanReply answers Scan.
type ScanReply struct {
	Status
	Rows []Row
}

// Part is the part of a write-set that falls in one region.
type Part struct {
	Region RegionID
	Writes []Write
}

// ApplyArgs flushes (parts of) a committed write-set to a server, with the
// commit timestamp as version.
type ApplyArgs struct {
	CommitTS uint64
	Parts    []Part
	// Replay marks a write from the recovery client; InheritTP is T_P of the
	// failed server it replays for (Algorithm 3, line 18).
	Replay    bool
	InheritTP uint64
}

// ApplyReply answers Apply with one code per part.
type ApplyReply struct {
	Status
	Codes []Code
}

// OpenRegionArgs tells a server to open a region.
type OpenRegionArgs struct {
	Region Region
	// RecoverWALs are WAL directories of failed servers whose entries for
	// this region must be replayed before the region-open hook.
	RecoverWALs []string
}

// ServerInfoReply describes a server's regions (tests, status).
type ServerInfoReply struct {
	Status
	Name    string
	ID      uint64
	TP      uint64
	Pending int
	Regions []RegionState
}

// RegionState is one region on a server.
type RegionState struct {
	ID    RegionID
	State string
	Rows  int
	Files int
}
