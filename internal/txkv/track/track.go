// Package track holds the threshold-timestamp logic of the recovery
// middleware (Ahmad et al., section 3): the client's T_F(c) with the FQ and FQ'
// queues (Algorithm 1), the server's T_P(s) with the PQ queue and the
// inheritance of T_P during replay (Algorithm 3), and the recovery
// manager's global thresholds T*_F and T*_P (Algorithms 2 and 4). It has no
// I/O; the client, server and coordinator call it.
package track

import (
	"container/heap"
	"sync"
)

// tsHeap is a min-heap of timestamps (the paper's priority queues).
type tsHeap []uint64

func (h tsHeap) Len() int           { return len(h) }
func (h tsHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h tsHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *tsHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *tsHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Client tracks T_F(c) of one client (Algorithm 1): FQ holds the commit
// timestamps of the client's committed transactions, FQ' those whose
// write-set has been fully flushed, both in commit order. On a heartbeat,
// T_F advances over the common heads of both queues, so it only ever
// passes a transaction once every earlier local commit has been flushed,
// even when flushes complete out of order.
//
// Two additions make the invariant hold with concurrent commits in one
// client: a commit request in flight (sent, timestamp not yet received)
// may still receive a timestamp below the heads, so T_F is held below the
// timestamp oracle's value seen when it was sent (its lower bound); and
// with nothing in flight and nothing unflushed, T_F follows the oracle's
// latest value known to the client, so that an idle client does not hold
// T*_F back.
//
// Invariant: every write-set of this client with commit timestamp <= T_F
// has been flushed to all its participants. Safe for concurrent use.
type Client struct {
	mu       sync.Mutex
	tf       uint64
	known    uint64 // the largest oracle value known (commit replies, heartbeat replies)
	fq       tsHeap // FQ: committed, in commit order
	fqp      tsHeap // FQ': flushed, in commit order
	inflight map[uint64]uint64
}

// NewClient returns a tracker whose T_F starts at tf (T*_F at registration,
// line 3), with now the oracle's value at registration.
func NewClient(tf, now uint64) *Client {
	return &Client{tf: tf, known: max(tf, now), inflight: map[uint64]uint64{}}
}

// CommitStarted records that commit request id is about to be sent.
func (c *Client) CommitStarted(id uint64) {
	c.mu.Lock()
	c.inflight[id] = c.known
	c.mu.Unlock()
}

// Committed records commit timestamp ts of request id (line 18: FQ.enqueue).
func (c *Client) Committed(id, ts uint64) {
	c.mu.Lock()
	delete(c.inflight, id)
	heap.Push(&c.fq, ts)
	c.known = max(c.known, ts)
	c.mu.Unlock()
}

// CommitEnded records that request id got no timestamp (aborted, rejected).
func (c *Client) CommitEnded(id uint64) {
	c.mu.Lock()
	delete(c.inflight, id)
	c.mu.Unlock()
}

// Flushed records that the write-set of ts has been flushed to all its
// participants (line 20: FQ'.enqueue).
func (c *Client) Flushed(ts uint64) {
	c.mu.Lock()
	heap.Push(&c.fqp, ts)
	c.mu.Unlock()
}

// Observe records an oracle value learned from the coordinator.
func (c *Client) Observe(now uint64) {
	c.mu.Lock()
	c.known = max(c.known, now)
	c.mu.Unlock()
}

// Heartbeat advances T_F as far as the invariant allows (lines 10-16) and
// returns it for the heartbeat message (line 17).
func (c *Client) Heartbeat() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	bound := c.known // no request sent from now on can get a timestamp <= known
	for _, lb := range c.inflight {
		bound = min(bound, lb)
	}
	for len(c.fq) > 0 && len(c.fqp) > 0 {
		h := c.fq[0]
		if h != c.fqp[0] || h > bound {
			break // respect local commit ordering
		}
		c.tf = max(c.tf, h)
		heap.Pop(&c.fq)
		heap.Pop(&c.fqp)
	}
	if len(c.fq) > 0 {
		bound = min(bound, c.fq[0]-1)
	}
	c.tf = max(c.tf, bound)
	return c.tf
}

// TF returns T_F without advancing it.
func (c *Client) TF() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tf
}

// Pending returns how many committed transactions are not yet reflected in
// T_F (the FQ size the paper monitors) and how many commits are in flight.
func (c *Client) Pending() (unflushed, inflight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.fq), len(c.inflight)
}

// Server tracks T_P(s) of one region server (Algorithm 3). PQ holds the
// write-sets received and not yet persisted. On a heartbeat the server
// reads the latest T*_F it learned (T'_P), persists everything in PQ and
// sets T_P to T'_P: since every transaction up to T*_F had been fully
// received when the server learned T*_F, everything up to T'_P is then
// persisted, whatever arrived out of order above it.
//
// A write-set replayed by the recovery client for a failed server s'
// carries T_P(s'); if it is lower than T_P(s), the server inherits it
// (lines 18-22) until a heartbeat has persisted the replayed write-set.
// Safe for concurrent use; heartbeats must not run concurrently with each
// other (the caller serialises them).
type Server struct {
	mu      sync.Mutex
	tp      uint64
	tstarF  uint64
	pq      tsHeap
	inherit uint64 // count of inheritances, to detect one during a persist
}

// NewServer returns a tracker whose T_P starts at tp (T*_F at registration).
func NewServer(tp uint64) *Server { return &Server{tp: tp, tstarF: tp} }

// Received records a received write-set (line 17: PQ.queue).
func (s *Server) Received(ts uint64) {
	s.mu.Lock()
	heap.Push(&s.pq, ts)
	s.mu.Unlock()
}

// SetTStarF records the latest T*_F from a heartbeat reply.
func (s *Server) SetTStarF(v uint64) {
	s.mu.Lock()
	s.tstarF = max(s.tstarF, v)
	s.mu.Unlock()
}

// Inherit lowers T_P to tp if tp is lower (line 20-21). It reports whether
// it did; the caller then runs a heartbeat (line 22).
func (s *Server) Inherit(tp uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tp < s.tp {
		s.tp = tp
		s.inherit++
		return true
	}
	return false
}

// Heartbeat runs lines 9-13: T'_P <- T*_F, persist the write-sets in PQ
// (persist must make every write-set received so far durable), T_P <- T'_P.
// It returns T_P for the heartbeat message. If persist fails, T_P is not
// advanced and the error is returned.
func (s *Server) Heartbeat(persist func() error) (uint64, error) {
	s.mu.Lock()
	tpNew := s.tstarF
	n := len(s.pq)
	gen := s.inherit
	s.mu.Unlock()
	if err := persist(); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.tp, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// dequeue what was in PQ when the persist began: it is durable now
	for i := 0; i < n && len(s.pq) > 0; i++ {
		heap.Pop(&s.pq)
	}
	if s.inherit != gen {
		// a replayed write-set arrived during the persist and may not be
		// covered by it: keep the inherited value until the next heartbeat
		s.tp = min(s.tp, tpNew)
	} else {
		s.tp = tpNew
	}
	return s.tp, nil
}

// TP returns T_P.
func (s *Server) TP() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tp
}

// Pending returns the PQ size.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pq)
}

// Global is the recovery manager's view of the thresholds (Algorithms 2
// and 4): T^r_F(c) of every registered client and T^r_P(s) of every
// registered server, as received with their last heartbeats, and the
// global thresholds T*_F = min T^r_F and T*_P = min T^r_P. Not safe for
// concurrent use (the coordinator holds its lock).
type Global struct {
	tf map[uint64]uint64
	tp map[uint64]uint64
}

// NewGlobal returns an empty view.
func NewGlobal() *Global { return &Global{tf: map[uint64]uint64{}, tp: map[uint64]uint64{}} }

// AddClient registers client c with T^r_F(c) = T*_F (Algorithm 2, line 3).
func (g *Global) AddClient(c, tstarF uint64) { g.tf[c] = tstarF }

// RemoveClient unregisters client c (lines 5-6).
func (g *Global) RemoveClient(c uint64) { delete(g.tf, c) }

// ClientHeartbeat records T_F from c's heartbeat (line 8). It never moves
// T^r_F(c) backwards.
func (g *Global) ClientHeartbeat(c, tf uint64) bool {
	old, ok := g.tf[c]
	if !ok {
		return false
	}
	g.tf[c] = max(old, tf)
	return true
}

// ClientTF returns T^r_F(c).
func (g *Global) ClientTF(c uint64) (uint64, bool) {
	v, ok := g.tf[c]
	return v, ok
}

// TStarF returns T*_F (line 9); with no client registered it is now, the
// oracle's current value (every committed write-set has been flushed by
// clients that are gone, or replayed for them).
func (g *Global) TStarF(now uint64) uint64 {
	if len(g.tf) == 0 {
		return now
	}
	m := ^uint64(0)
	for _, v := range g.tf {
		m = min(m, v)
	}
	return m
}

// AddServer registers server s with T^r_P(s) = tp (Algorithm 4, line 3).
func (g *Global) AddServer(s, tp uint64) { g.tp[s] = tp }

// RemoveServer unregisters server s (lines 5-6).
func (g *Global) RemoveServer(s uint64) { delete(g.tp, s) }

// ServerHeartbeat records T_P from s's heartbeat (line 8). T_P may go down
// (inheritance), and the recovery manager takes it as reported.
func (g *Global) ServerHeartbeat(s, tp uint64) bool {
	if _, ok := g.tp[s]; !ok {
		return false
	}
	g.tp[s] = tp
	return true
}

// ServerTP returns T^r_P(s).
func (g *Global) ServerTP(s uint64) (uint64, bool) {
	v, ok := g.tp[s]
	return v, ok
}

// TStarP returns T*_P (line 9) and false when no server is registered.
func (g *Global) TStarP() (uint64, bool) {
	if len(g.tp) == 0 {
		return 0, false
	}
	m := ^uint64(0)
	for _, v := range g.tp {
		m = min(m, v)
	}
	return m, true
}

// Visibility is the coordinator's snapshot visibility: with deferred
// updates a committed write-set reaches the servers only when its client
// flushes it, so a new transaction may read at a timestamp only if every
// write-set committed at or below it has been reported flushed. Visibility
// holds the committed write-sets not yet reported flushed. Not safe for
// concurrent use (the coordinator holds its lock).
type Visibility struct {
	pending map[uint64]uint64 // ts -> client
	h       tsHeap
}

// Add records a committed write-set of client at ts.
func (v *Visibility) Add(ts, client uint64) {
	if v.pending == nil {
		v.pending = map[uint64]uint64{}
	}
	v.pending[ts] = client
	heap.Push(&v.h, ts)
}

// Flushed records that the write-set committed at ts is flushed.
func (v *Visibility) Flushed(ts uint64) { delete(v.pending, ts) }

// FlushedClient drops every pending write-set of client (it unregistered,
// or its recovery replayed them).
func (v *Visibility) FlushedClient(client uint64) {
	for ts, c := range v.pending {
		if c == client {
			delete(v.pending, ts)
		}
	}
}

// Visible returns the largest timestamp at or below now such that every
// committed write-set up to it has been flushed.
func (v *Visibility) Visible(now uint64) uint64 {
	for len(v.h) > 0 {
		if _, ok := v.pending[v.h[0]]; ok {
			return v.h[0] - 1
		}
		heap.Pop(&v.h)
	}
	return now
}
