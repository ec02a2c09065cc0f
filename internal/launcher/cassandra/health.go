package cassandra

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/faultbench/faultbench/internal/launcher"
)

// adminSession opens a CQL session to the one node at addr (host:port): no
// peer discovery, one connection, every request bounded by timeout.
func adminSession(addr string, timeout time.Duration) (*gocql.Session, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("bad port in %s", addr)
	}
	cl := gocql.NewCluster(h)
	cl.Port = port
	cl.ProtoVersion = 4
	cl.Timeout = timeout
	cl.ConnectTimeout = min(timeout, queryTimeout)
	cl.NumConns = 1
	cl.DisableInitialHostLookup = true
	cl.HostFilter = gocql.WhiteListHostFilter(h)
	cl.Events.DisableNodeStatusEvents = true
	cl.Events.DisableTopologyEvents = true
	cl.Events.DisableSchemaEvents = true
	cl.Consistency = gocql.One
	cl.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1, Interval: 100 * time.Millisecond}
	cl.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	cl.Logger = log.New(io.Discard, "", 0)
	return cl.CreateSession()
}

// gossipView is one node's gossip state of an endpoint.
type gossipView struct {
	generation int
	status     string
}

// sessions holds one admin session per node, replaced after an error.
type sessions struct {
	c  *launcher.Cluster
	ss []*gocql.Session
}

func (s *sessions) get(i int) (*gocql.Session, error) {
	if s.ss[i] == nil {
		sess, err := adminSession(s.c.Nodes[i].Addr, queryTimeout)
		if err != nil {
			return nil, err
		}
		s.ss[i] = sess
	}
	return s.ss[i], nil
}

func (s *sessions) failed(i int) {
	if s.ss[i] != nil {
		s.ss[i].Close()
		s.ss[i] = nil
	}
}

func (s *sessions) close() {
	for i := range s.ss {
		s.failed(i)
	}
}

// waitUp waits until the running nodes among the first upTo are up and see
// each other NORMAL (see notUp). starting is the index of a node being
// started (its exit ends the wait with its log), or -1.
func waitUp(ctx context.Context, c *launcher.Cluster, upTo, starting int) error {
	s := &sessions{c: c, ss: make([]*gocql.Session, len(c.Nodes))}
	defer s.close()
	last := ""
	for {
		if starting >= 0 {
			n := &c.Nodes[starting]
			if !launcher.Alive(n.PID) {
				return fmt.Errorf("%s (pid %d) %w:\n%s", n.Name, n.PID, errExited, launcher.LogTail(n.LogFile, 12))
			}
		}
		reason := notUp(ctx, c, s, upTo, starting)
		if reason == "" {
			return nil
		}
		// a check cut short by the deadline says less than the one before
		if ctx.Err() == nil || last == "" {
			last = reason
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cassandra %s not up: %s: %w", c.Name, last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// notUp returns "" when every running node among the first upTo (and the
// starting one) answers CQL, reports bootstrapped=COMPLETED in
// system.local, and appears in every such node's system_views.gossip_info
// with status NORMAL and its current generation (so the others have heard
// from it since it last started); else what is missing. It records each
// node's host_id as its ID.
func notUp(ctx context.Context, c *launcher.Cluster, s *sessions, upTo, starting int) string {
	var idx []int
	for i := 0; i < upTo && i < len(c.Nodes); i++ {
		n := &c.Nodes[i]
		if i == starting || launcher.RunsNode(n) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return "no node is running"
	}
	views := map[int]map[string]gossipView{}
	for _, i := range idx {
		n := &c.Nodes[i]
		if launcher.Stopped(n.PID) {
			return fmt.Sprintf("%s (pid %d) is paused", n.Name, n.PID)
		}
		sess, err := s.get(i)
		if err != nil {
			return fmt.Sprintf("%s (%s) not answering CQL: %v", n.Name, n.Addr, err)
		}
		var boot string
		var hostID gocql.UUID
		if err := sess.Query(`SELECT bootstrapped, host_id FROM system.local`).WithContext(ctx).Scan(&boot, &hostID); err != nil {
			s.failed(i)
			return fmt.Sprintf("%s: reading system.local: %v", n.Name, err)
		}
		if boot != "COMPLETED" {
			return fmt.Sprintf("%s: bootstrap state %s", n.Name, boot)
		}
		n.ID = hostID.String()
		v := map[string]gossipView{}
		iter := sess.Query(`SELECT address, generation, status, status_with_port FROM system_views.gossip_info`).WithContext(ctx).Iter()
		var addr net.IP
		var gen int
		var status, statusWithPort string
		for iter.Scan(&addr, &gen, &status, &statusWithPort) {
			if status == "" {
				status = statusWithPort
			}
			v[addr.String()] = gossipView{generation: gen, status: status}
		}
		if err := iter.Close(); err != nil {
			s.failed(i)
			return fmt.Sprintf("%s: reading system_views.gossip_info: %v", n.Name, err)
		}
		views[i] = v
	}
	for _, k := range idx {
		nk := &c.Nodes[k]
		hk := nodeHost(nk)
		own, ok := views[k][hk]
		if !ok {
			return fmt.Sprintf("%s has no gossip state of itself yet", nk.Name)
		}
		for _, j := range idx {
			seen, ok := views[j][hk]
			switch {
			case !ok:
				return fmt.Sprintf("%s does not know %s yet", c.Nodes[j].Name, nk.Name)
			case !strings.HasPrefix(seen.status, "NORMAL"):
				return fmt.Sprintf("%s sees %s as %q, not NORMAL", c.Nodes[j].Name, nk.Name, seen.status)
			case seen.generation != own.generation:
				return fmt.Sprintf("%s has not heard from %s since it restarted (generation %d, now %d)", c.Nodes[j].Name, nk.Name, seen.generation, own.generation)
			}
		}
	}
	return ""
}

// nodeHost is the IP part of n's client address.
func nodeHost(n *launcher.Node) string {
	h, _, err := net.SplitHostPort(n.Addr)
	if err != nil {
		return n.Addr
	}
	return h
}

// createKeyspace creates cfg.keyspace (SimpleStrategy, cfg.rf replicas) if
// missing, through the first running node, and waits for schema agreement.
func createKeyspace(ctx context.Context, c *launcher.Cluster, cfg config) error {
	var lastErr error
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if !launcher.RunsNode(n) {
			continue
		}
		sess, err := adminSession(n.Addr, schemaTimeout)
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", n.Name, err)
			continue
		}
		stmt := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}`, cfg.keyspace, cfg.rf)
		err = sess.Query(stmt).WithContext(ctx).Exec()
		if err == nil {
			err = sess.AwaitSchemaAgreement(ctx)
		}
		sess.Close()
		if err == nil {
			return nil
		}
		lastErr = fmt.Errorf("%s: creating keyspace %s: %w", n.Name, cfg.keyspace, err)
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no node is running")
	}
	return lastErr
}

// ping sends a native protocol v4 OPTIONS request to addr and waits (at
// most pingTimeout) for the SUPPORTED answer: the cheapest proof that the
// node's native transport serves.
func ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// header: version 4 request, flags 0, stream 1, opcode OPTIONS (0x05), body length 0
	if _, err := conn.Write([]byte{0x04, 0, 0, 1, 0x05, 0, 0, 0, 0}); err != nil {
		return fmt.Errorf("OPTIONS: %w", err)
	}
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return fmt.Errorf("OPTIONS: no answer: %w", err)
	}
	if hdr[0] != 0x84 || hdr[4] != 0x06 {
		return fmt.Errorf("OPTIONS: unexpected answer (version %#x, opcode %#x)", hdr[0], hdr[4])
	}
	if n := binary.BigEndian.Uint32(hdr[5:]); n > 1<<16 {
		return fmt.Errorf("OPTIONS: answer of %d bytes", n)
	}
	return nil
}
