package track

import (
	"errors"
	"testing"
)

// TestServerTPOutOfOrder is the paper's example (section 3.2): a server has
// received and persisted 20, 22 and 23 but not 21. T_P must stay at 20 while
// 21 may still come (T*_F <= 20), and move to 23 once T*_F says everything
// up to 23 has been flushed — whether or not the server takes part in 21.
func TestServerTPOutOfOrder(t *testing.T) {
	g := NewGlobal()
	const c1, c2, s1 = 1, 2, 100
	g.AddClient(c1, 19)
	g.AddClient(c2, 19)
	g.AddServer(s1, 19)

	// client 1 commits 20, 22, 23 and flushes them; client 2 commits 21 and
	// has not flushed it yet.
	cl1, cl2 := NewClient(19, 19), NewClient(19, 19)
	for id, ts := range map[uint64]uint64{1: 20, 2: 22, 3: 23} {
		cl1.CommitStarted(id)
		cl1.Committed(id, ts)
	}
	cl2.CommitStarted(1)
	cl2.Committed(1, 21)
	srv := NewServer(19)
	persisted := 0
	persist := func() error { persisted = srv.Pending(); return nil }
	for _, ts := range []uint64{23, 20, 22} { // flushes complete out of order
		srv.Received(ts)
		cl1.Flushed(ts)
	}

	g.ClientHeartbeat(c1, cl1.Heartbeat())
	g.ClientHeartbeat(c2, cl2.Heartbeat())
	if tf := cl1.TF(); tf != 23 {
		t.Errorf("T_F(c1) = %d, want 23 (all its commits are flushed)", tf)
	}
	if tf := cl2.TF(); tf != 20 {
		t.Errorf("T_F(c2) = %d, want 20 (21 is not flushed)", tf)
	}
	if got := g.TStarF(23); got != 20 {
		t.Fatalf("T*_F = %d, want 20", got)
	}
	srv.SetTStarF(g.TStarF(23))
	tp, err := srv.Heartbeat(persist)
	if err != nil || tp != 20 {
		t.Fatalf("T_P = %d (%v), want 20 while 21 is missing", tp, err)
	}
	if persisted != 3 || srv.Pending() != 0 {
		t.Errorf("persisted %d write-sets, pending %d; want 3 and 0", persisted, srv.Pending())
	}
	g.ServerHeartbeat(s1, tp)
	if p, _ := g.TStarP(); p != 20 {
		t.Errorf("T*_P = %d, want 20", p)
	}

	// 21 is flushed (to this server): T*_F and then T_P move to 23.
	srv.Received(21)
	cl2.Flushed(21)
	cl2.Observe(23) // the oracle's value, from c2's last heartbeat reply
	g.ClientHeartbeat(c2, cl2.Heartbeat())
	srv.SetTStarF(g.TStarF(23))
	if tp, _ = srv.Heartbeat(persist); tp != 23 {
		t.Errorf("T_P = %d after 21 arrived, want 23", tp)
	}
}

// TestServerTPNotParticipant: the server never receives 21 because it does
// not take part in it; T_P advances once T*_F passes 21.
func TestServerTPNotParticipant(t *testing.T) {
	srv := NewServer(19)
	for _, ts := range []uint64{20, 22, 23} {
		srv.Received(ts)
	}
	srv.SetTStarF(20)
	if tp, _ := srv.Heartbeat(func() error { return nil }); tp != 20 {
		t.Fatalf("T_P = %d, want 20", tp)
	}
	srv.SetTStarF(23)
	if tp, _ := srv.Heartbeat(func() error { return nil }); tp != 23 {
		t.Fatalf("T_P = %d, want 23", tp)
	}
	// T*_F never goes back
	srv.SetTStarF(21)
	if tp, _ := srv.Heartbeat(func() error { return nil }); tp != 23 {
		t.Fatalf("T_P = %d after a stale T*_F, want 23", tp)
	}
}

func TestServerPersistFailureHoldsTP(t *testing.T) {
	srv := NewServer(5)
	srv.Received(7)
	srv.SetTStarF(7)
	tp, err := srv.Heartbeat(func() error { return errors.New("disk full") })
	if err == nil || tp != 5 || srv.Pending() != 1 {
		t.Fatalf("tp %d err %v pending %d; want 5, an error, 1", tp, err, srv.Pending())
	}
}

// TestClientFlushesOutOfOrder: T_F(c) advances in local commit order only.
func TestClientFlushesOutOfOrder(t *testing.T) {
	c := NewClient(5, 5)
	for id, ts := range []uint64{10, 11, 12} {
		c.CommitStarted(uint64(id))
		c.Committed(uint64(id), ts)
	}
	c.Flushed(12)
	c.Flushed(11)
	if tf := c.Heartbeat(); tf != 9 {
		t.Fatalf("T_F = %d with 10 unflushed, want 9", tf)
	}
	c.Flushed(10)
	if tf := c.Heartbeat(); tf != 12 {
		t.Fatalf("T_F = %d with all flushed, want 12", tf)
	}
	if u, f := c.Pending(); u != 0 || f != 0 {
		t.Errorf("pending %d in flight %d", u, f)
	}
}

// TestClientInflightCommit: a commit whose timestamp is not known yet may
// get one below later commits' timestamps; T_F must wait for it.
func TestClientInflightCommit(t *testing.T) {
	c := NewClient(10, 12)
	c.CommitStarted(1) // may get anything > 12
	c.CommitStarted(2)
	c.Committed(2, 14)
	c.Flushed(14)
	if tf := c.Heartbeat(); tf != 12 {
		t.Fatalf("T_F = %d with commit 1 in flight, want 12", tf)
	}
	c.Committed(1, 13)
	if tf := c.Heartbeat(); tf != 12 {
		t.Fatalf("T_F = %d with 13 unflushed, want 12", tf)
	}
	c.Flushed(13)
	if tf := c.Heartbeat(); tf != 14 {
		t.Fatalf("T_F = %d, want 14", tf)
	}
	// an aborted commit leaves no trace
	c.CommitStarted(3)
	c.CommitEnded(3)
	c.Observe(40)
	if tf := c.Heartbeat(); tf != 40 {
		t.Fatalf("idle T_F = %d, want the oracle's 40", tf)
	}
	if tf := c.Heartbeat(); tf != 40 {
		t.Fatalf("T_F not stable: %d", tf)
	}
}

func TestServerInheritance(t *testing.T) {
	s := NewServer(30)
	s.SetTStarF(30)
	if !s.Inherit(25) || s.TP() != 25 {
		t.Fatalf("inherit: T_P = %d, want 25", s.TP())
	}
	if s.Inherit(27) {
		t.Fatal("inherit of a higher T_P must not apply")
	}
	if tp, _ := s.Heartbeat(func() error { return nil }); tp != 30 {
		t.Fatalf("after heartbeat T_P = %d, want 30", tp)
	}
	// an inheritance during the persist is kept until the next heartbeat
	s.SetTStarF(35)
	tp, _ := s.Heartbeat(func() error { s.Inherit(22); return nil })
	if tp != 22 {
		t.Fatalf("T_P = %d after an inheritance during the persist, want 22", tp)
	}
	if tp, _ = s.Heartbeat(func() error { return nil }); tp != 35 {
		t.Fatalf("T_P = %d, want 35", tp)
	}
}

func TestGlobal(t *testing.T) {
	g := NewGlobal()
	if g.TStarF(7) != 7 {
		t.Error("T*_F without clients must be the oracle's value")
	}
	if _, ok := g.TStarP(); ok {
		t.Error("T*_P without servers")
	}
	g.AddClient(1, 7)
	g.AddClient(2, 7)
	g.ClientHeartbeat(1, 10)
	g.ClientHeartbeat(2, 9)
	g.ClientHeartbeat(2, 8) // never backwards
	if g.TStarF(20) != 9 {
		t.Errorf("T*_F = %d, want 9", g.TStarF(20))
	}
	g.RemoveClient(2)
	if g.TStarF(20) != 10 {
		t.Errorf("T*_F = %d, want 10", g.TStarF(20))
	}
	if g.ClientHeartbeat(3, 1) {
		t.Error("heartbeat of an unknown client accepted")
	}
	g.AddServer(1, 5)
	g.AddServer(2, 5)
	g.ServerHeartbeat(1, 9)
	g.ServerHeartbeat(2, 8)
	if p, _ := g.TStarP(); p != 8 {
		t.Errorf("T*_P = %d, want 8", p)
	}
	g.ServerHeartbeat(2, 6) // inheritance may lower it
	if p, _ := g.TStarP(); p != 6 {
		t.Errorf("T*_P = %d, want 6", p)
	}
}
