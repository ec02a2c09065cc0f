// Package distrib runs one load or run phase from many client hosts: the
// coordinator reaches every client host of the inventory over SSH
// (internal/remote), installs the faultbench binary there, starts
// `faultbench worker` in the SSH session, measures the host's clock offset,
// gives each worker its share of the threads and the target rate and a
// disjoint range of insert keys, starts all at one common time, and merges
// the per-window HdrHistograms the workers stream back into one run
// directory, exactly (docs/distributed.md). The workers may also connect to
// a listener (a Kubernetes Job) or be local processes of this binary
// (clients.process=true).
//
// RunPhase is the one entry point of `faultbench load|run`: given the
// phase's spec (experiment.Spec, embedded in Spec) and what the command
// line said about client hosts, it decides where the load runs — in this
// process (experiment.Run), as local client processes, over SSH or from a
// listener — and refuses combinations that cannot go together.
//
// The worker protocol is JSON lines: the coordinator writes to the
// worker's standard input, the worker answers on its standard output (the
// SSH session's), its standard error carries free-text diagnostics.
//
//	coordinator → worker                  worker → coordinator
//	{"type":"ping"} (several)             {"type":"pong","now_ns":…}
//	{"type":"assign","assign":{…}}        {"type":"ready","host":{…}} or {"type":"error",…}
//	{"type":"start","at_ns":…}            {"type":"window","part":{…}} per closed window
//	                                      {"type":"done","done":{…}}
//
// The worker ends when its phase ends or its standard input closes (the
// coordinator went away): nothing it started outlives it.
package distrib

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/faultbench/faultbench/internal/measure"
)

// ProtocolVersion is checked at assign: coordinator and worker run the same
// binary (installed by hash), so a mismatch means a stale binary.
const ProtocolVersion = 1

// Message types.
const (
	MsgPing   = "ping"
	MsgPong   = "pong"
	MsgAssign = "assign"
	MsgReady  = "ready"
	MsgStart  = "start"
	MsgWindow = "window"
	// MsgHistory carries whole lines of the worker's operation history
	// (history.jsonl, its header first) as they are written.
	MsgHistory = "history"
	MsgDone    = "done"
	MsgError   = "error"
)

// Msg is one protocol line.
type Msg struct {
	Type   string              `json:"type"`
	NowNs  int64               `json:"now_ns,omitempty"` // pong: the worker's clock, ns since the epoch
	AtNs   int64               `json:"at_ns,omitempty"`  // start: t=0 on the worker's clock
	Assign *Assignment         `json:"assign,omitempty"`
	Host   *HostInfo           `json:"host,omitempty"`
	Part   *measure.WindowPart `json:"part,omitempty"`
	Done   *Done               `json:"done,omitempty"`
	// History: whole lines of the worker's history (MsgHistory).
	History []byte `json:"history,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Assignment is a worker's share of the phase.
type Assignment struct {
	Protocol int    `json:"protocol"`
	Client   int    `json:"client"`  // 0-based
	Clients  int    `json:"clients"` // how many workers in all
	Target   string `json:"target"`
	Phase    string `json:"phase"`
	// Props are the worker's properties: the run's, with threadcount,
	// target, operationcount, insertstart/insertcount and seed set to its
	// share.
	Props map[string]string `json:"props"`
}

// HostInfo describes the worker's host (env.json's clients).
type HostInfo struct {
	Hostname string   `json:"hostname"`
	Kernel   string   `json:"kernel"`
	CPUs     int      `json:"cpus"`
	Warnings []string `json:"warnings,omitempty"`
}

// Done is a worker's end of phase.
type Done struct {
	Reason  string `json:"reason"`
	OK      int64  `json:"ok"`     // post-warm-up successful operations
	Errors  int64  `json:"errors"` // post-warm-up failed operations
	Dropped int64  `json:"dropped"`
	Cut     int64  `json:"cut"`
	// EndNs is the end of its last window, ns since t=0.
	EndNs int64  `json:"end_ns"`
	Error string `json:"error,omitempty"` // the phase failed
}

// lineWriter writes messages, one JSON object per line, safely from
// several goroutines, flushing each.
type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: bufio.NewWriter(w)} }

func (l *lineWriter) send(m Msg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(b)
	l.w.WriteByte('\n')
	return l.w.Flush()
}

// maxLine bounds one protocol line (a window of many operation types with
// wide histograms stays far below it).
const maxLine = 16 << 20

// lineReader reads messages.
type lineReader struct{ s *bufio.Scanner }

func newLineReader(r io.Reader) *lineReader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), maxLine)
	return &lineReader{s: s}
}

// next returns the next message; io.EOF at the end of the stream.
func (l *lineReader) next() (Msg, error) {
	if !l.s.Scan() {
		if err := l.s.Err(); err != nil {
			return Msg{}, err
		}
		return Msg{}, io.EOF
	}
	var m Msg
	if err := json.Unmarshal(l.s.Bytes(), &m); err != nil {
		return Msg{}, fmt.Errorf("protocol: bad line %.80q: %w", l.s.Bytes(), err)
	}
	return m, nil
}
