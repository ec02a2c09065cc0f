// Package event records the timestamped facts of a run — phases started,
// faults injected and restored, nodes observed down or up, leaders changed —
// as one JSON object per line in events.jsonl. Every event carries both
// clocks: nanoseconds since the run's start (monotonic) and the wall clock.
// The log is written and flushed as events happen, so a run killed halfway
// still leaves a readable file.
package event

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/runfile"
)

// Kinds of events faultbench writes. Faults and observations use these;
// other kinds are allowed (documented where they are emitted).
const (
	PhaseStart     = "phase-start"     // detail: phase name (load, warmup, run, calibrate, check)
	PhaseEnd       = "phase-end"       // detail: phase name
	FaultInject    = "fault-inject"    // a fault action began; node: resolved node(s); detail: action and selector; action, family: its kind
	FaultInjected  = "fault-injected"  // the fault took effect (e.g. the process is gone)
	FaultRestore   = "fault-restore"   // a restore action (start/resume/heal) began
	FaultRestored  = "fault-restored"  // the restore took effect (node serves again)
	FaultError     = "fault-error"     // a fault action failed; detail: error
	NodeDown       = "node-down"       // observed: a node process exited or stopped answering
	NodeUp         = "node-up"         // observed: a node answers again
	LeaderChange   = "leader-change"   // observed: detail "old -> new"
	RoleChange     = "role-change"     // observed: e.g. a replica promoted to primary
	ClusterHealthy = "cluster-healthy" // observed: the launcher's health check passed
	Note           = "note"            // free text
	// FailureDetected: the database itself declared a node failed (txkv:
	// missed heartbeats); node: the failed node; time: the database's.
	FailureDetected = "failure-detected"
	// Recovered: the database finished recovering from a failure it
	// detected; node: the failed node; detail: what it did; time: the
	// database's.
	Recovered = "recovered"
	// ScaleStart: a scaling action (add-node, remove-node) began; node:
	// the node(s) it removes (none for add-node); detail: the action and
	// its options (count, streaming throttle, bootstrap).
	ScaleStart = "scale-start"
	// ScaleEnd: the scaling action returned (the launcher saw the cluster
	// serve with its new membership); detail: how it ended.
	ScaleEnd = "scale-end"
	// The milestones of a scaling action, as the database reported them
	// (the launcher's observation time): a new node's process started, the
	// node joined (serves as a member), the action's data movement began
	// (streaming-start) and ended (streaming-done), a batch of hash slots moved (Redis Cluster), a
	// removed node left and stopped. See docs/faults.md.
	NodeStarted    = "node-started"
	NodeJoined     = "node-joined"
	StreamingStart = "streaming-start"
	StreamingDone  = "streaming-done"
	SlotsMoved     = "slots-moved"
	NodeLeft       = "node-left"
)

// Event is one line of events.jsonl.
type Event struct {
	T      int64     `json:"t_ns"`           // nanoseconds since run start (monotonic clock)
	Wall   time.Time `json:"wall"`           // wall clock, RFC 3339 with nanoseconds
	Kind   string    `json:"kind"`           // one of the constants above
	Node   string    `json:"node,omitempty"` // node name(s), comma separated
	Detail string    `json:"detail,omitempty"`
	Fault  string    `json:"fault,omitempty"` // the fault's label (scenario step name or "as" name)
	// Action and Family name the fault kind of a fault event (FaultInject,
	// FaultInjected, FaultRestore, FaultRestored, FaultError): the action
	// (kill, partition ...) and its family (process, network ...), written
	// by the fault package from its kind registry (internal/fault/kind).
	// Empty on other events and in events.jsonl files written before they
	// existed, whose readers take the action from Detail's first word.
	Action string `json:"action,omitempty"`
	Family string `json:"family,omitempty"`
	// DelayNS, on a fault-injected or fault-restored event, is the time
	// from the step's scheduled time (or the fault command's start) to when
	// its action was applied (the fault's Inject returned: the signal sent,
	// the rules in place), in nanoseconds; 0 when not measured.
	DelayNS int64 `json:"delay_ns,omitempty"`
	// Hosts, on the same events, names the inventory hosts of the step's
	// nodes, which its action reached over SSH (comma separated); empty for
	// nodes of this machine.
	Hosts string `json:"hosts,omitempty"`
}

// Since returns the event time as a duration since run start.
func (e Event) Since() time.Duration { return time.Duration(e.T) }

// Log appends events to a writer and keeps them in memory. It is safe for
// concurrent use.
type Log struct {
	mu     sync.Mutex
	start  time.Time
	w      *bufio.Writer
	f      *os.File
	events []Event
	echo   func(Event)
	echoMu sync.Mutex // serialises echo calls, so the function need not be concurrency-safe
}

// Create opens path for writing (truncating it) with t=0 at start.
func Create(path string, start time.Time) (*Log, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	return &Log{start: start, f: f, w: bufio.NewWriter(f)}, nil
}

// NewMemory returns a Log that keeps events only in memory.
func NewMemory(start time.Time) *Log { return &Log{start: start} }

// Start returns the log's t=0.
func (l *Log) Start() time.Time { return l.start }

// SetStart moves t=0 (used when the measured run starts after a load phase);
// events already logged keep their times.
func (l *Log) SetStart(t time.Time) {
	l.mu.Lock()
	l.start = t
	l.mu.Unlock()
}

// OnEvent sets a function called for every event, e.g. to print fault
// lines on the terminal. Calls are serialised, never concurrent.
func (l *Log) OnEvent(f func(Event)) {
	l.mu.Lock()
	l.echo = f
	l.mu.Unlock()
}

// Emit records an event happening now.
func (l *Log) Emit(kind, node, detail string) Event {
	return l.Add(Event{Kind: kind, Node: node, Detail: detail})
}

// Add records e; a zero Wall is set to now and T computed from it.
func (l *Log) Add(e Event) Event {
	if l == nil {
		return e
	}
	if e.Wall.IsZero() {
		e.Wall = time.Now()
	}
	l.mu.Lock()
	e.T = int64(e.Wall.Sub(l.start))
	l.events = append(l.events, e)
	if l.w != nil {
		b, err := json.Marshal(e)
		if err == nil {
			l.w.Write(b)
			l.w.WriteByte('\n')
			l.w.Flush()
		}
	}
	echo := l.echo
	l.mu.Unlock()
	if echo != nil {
		l.echoMu.Lock()
		echo(e)
		l.echoMu.Unlock()
	}
	return e
}

// Events returns a copy of every event so far.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Close flushes and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	l.w = nil
	return err
}

// Read parses an events.jsonl stream.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("events line %d: %w", line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// ReadFile parses an events.jsonl file.
func ReadFile(path string) ([]Event, error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
