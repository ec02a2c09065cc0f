package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// DialTimeout bounds one TCP connect.
const DialTimeout = time.Second

// Conn is a net/rpc client that reconnects on demand: a call on a broken
// connection drops it, and the next call dials again. Calls honour their
// context (the reply of an abandoned call is discarded). Safe for
// concurrent use.
type Conn struct {
	addr string

	mu     sync.Mutex
	c      *rpc.Client
	closed bool
}

// NewConn returns a connection to addr; it dials on first use.
func NewConn(addr string) *Conn { return &Conn{addr: addr} }

// Addr returns the peer address.
func (c *Conn) Addr() string { return c.addr }

// ErrClosed is returned by calls on a closed Conn.
var ErrClosed = errors.New("connection closed")

func (c *Conn) get(ctx context.Context) (*rpc.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.c != nil {
		return c.c, nil
	}
	d := net.Dialer{Timeout: DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", c.addr, err)
	}
	c.c = rpc.NewClient(nc)
	return c.c, nil
}

func (c *Conn) drop(cl *rpc.Client) {
	c.mu.Lock()
	if c.c == cl {
		c.c = nil
	}
	c.mu.Unlock()
	cl.Close()
}

// Call invokes method (e.g. "Coord.Begin") with args and fills reply. A
// non-nil error is a transport problem or ctx's end: the call may or may
// not have reached the peer. Application outcomes are in the reply's Status.
func (c *Conn) Call(ctx context.Context, method string, args, reply any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cl, err := c.get(ctx)
	if err != nil {
		return err
	}
	// The reply is decoded into a private copy and handed over only when the
	// call completes: a call abandoned at ctx's end goes on decoding its
	// reply in net/rpc's reader, which must not race with the caller's use
	// of reply after Call returned.
	dst := reflect.ValueOf(reply)
	if dst.Kind() != reflect.Pointer || dst.IsNil() {
		return fmt.Errorf("%s to %s: reply must be a non-nil pointer, got %T", method, c.addr, reply)
	}
	priv := reflect.New(dst.Elem().Type())
	call := cl.Go(method, args, priv.Interface(), make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if call.Error != nil {
			var se rpc.ServerError
			if !errors.As(call.Error, &se) {
				c.drop(cl)
			}
			return fmt.Errorf("%s to %s: %w", method, c.addr, call.Error)
		}
		dst.Elem().Set(priv.Elem())
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s to %s: %w", method, c.addr, ctx.Err())
	}
}

// Close closes the connection; later calls fail with ErrClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.c != nil {
		err := c.c.Close()
		c.c = nil
		return err
	}
	return nil
}

// Pool holds one Conn per address.
type Pool struct {
	mu    sync.Mutex
	conns map[string]*Conn
}

// Get returns the connection to addr, creating it.
func (p *Pool) Get(addr string) *Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[string]*Conn{}
	}
	c, ok := p.conns[addr]
	if !ok {
		c = NewConn(addr)
		p.conns[addr] = c
	}
	return c
}

// Close closes every connection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Mute makes a served process fall silent as a kill -9 would, for the
// in-process crashes of tests and for a fail-stop: once Set, no reply
// leaves it (a connection is closed instead of answered). A handler that
// changed state after the process decided to stop (it writes nothing to
// stable storage any more) must not tell a peer that the change happened:
// the peer would act on a state that a restart does not find. The zero
// value is not muted.
type Mute struct{ on atomic.Bool }

// Set mutes; it cannot be undone.
func (m *Mute) Set() { m.on.Store(true) }

// On reports whether Set was called.
func (m *Mute) On() bool { return m.on.Load() }

// mutedConn drops every write after its Mute was set, closing the
// connection instead.
type mutedConn struct {
	net.Conn
	m *Mute
}

func (c mutedConn) Write(b []byte) (int, error) {
	if c.m.On() {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

// Serve accepts connections on l and serves srv on each until l is closed.
// It returns when l is closed; the connections it served are closed too.
// With a non-nil m, nothing is written to a connection once m is set.
func Serve(l net.Listener, srv *rpc.Server, m *Mute) {
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	defer func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		go func() {
			var sc net.Conn = c
			if m != nil {
				sc = mutedConn{Conn: c, m: m}
			}
			srv.ServeConn(sc)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}
