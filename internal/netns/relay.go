package netns

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// RelayCommand is the hidden faultbench command that runs a delay relay
// inside a node's namespace (spawned through ExecCommand).
const RelayCommand = "netns-delay"

// RuleRelay is a delay relay process (Rule.Name is its token).
const RuleRelay = "relay"

// RelayPort is where a delay relay listens inside a node's namespace
// (node ports start at FirstPort, so it is free).
const RelayPort = 6999

// relayMark marks the relay's own connections so that its redirect rules
// leave them alone.
const relayMark = 0xfb

// DelaySpec is a delay with jitter: every chunk of data the node sends is
// held Delay ± Jitter (uniform) before it is forwarded, in order.
type DelaySpec struct {
	Delay, Jitter time.Duration
}

// Validate checks the ranges.
func (d DelaySpec) Validate() error {
	if d.Delay <= 0 || d.Delay > time.Minute {
		return fmt.Errorf("delay %v: want more than 0 and at most 1m", d.Delay)
	}
	if d.Jitter < 0 || d.Jitter > d.Delay {
		return fmt.Errorf("jitter %v: want 0 up to the delay (%v)", d.Jitter, d.Delay)
	}
	return nil
}

// ParseDelay reads "200ms", "200ms±20ms", "200ms+-20ms" or "200ms~20ms".
func ParseDelay(s string) (DelaySpec, error) {
	s = strings.TrimSpace(s)
	var d DelaySpec
	base, jit := s, ""
	for _, sep := range []string{"±", "+-", "~"} {
		if b, j, ok := strings.Cut(s, sep); ok {
			base, jit = b, j
			break
		}
	}
	var err error
	if d.Delay, err = time.ParseDuration(strings.TrimSpace(base)); err != nil {
		return d, fmt.Errorf("delay %q: want a duration with an optional jitter, e.g. 200ms or 200ms±20ms", s)
	}
	if jit != "" {
		if d.Jitter, err = time.ParseDuration(strings.TrimSpace(jit)); err != nil {
			return d, fmt.Errorf("delay %q: jitter %q is not a duration", s, jit)
		}
	}
	return d, d.Validate()
}

// String renders d as "200ms±20ms".
func (d DelaySpec) String() string {
	if d.Jitter == 0 {
		return d.Delay.String()
	}
	return d.Delay.String() + "±" + d.Jitter.String()
}

// Spawner starts a process (launcher.Env.Spawn) and returns its pid.
type Spawner func(argv []string, logFile string) (int, error)

// AddDelay delays what node sends by d: a relay process in the node's
// namespace (started with spawn as SELF netns-exec NS -- SELF netns-delay
// ...) takes every TCP connection the node opens to the cluster network and
// every connection opened to the node (nftables redirects in the node's
// namespace), and holds the data flowing out of the node for d before
// forwarding it. The relay is recorded (by its token, owner) before it is
// started and the redirect table before it is added.
func (nw *Network) AddDelay(ctx context.Context, node, owner, self, logFile string, d DelaySpec, spawn Spawner) error {
	if err := d.Validate(); err != nil {
		return err
	}
	st, err := nw.State()
	if err != nil {
		return err
	}
	nd, err := st.Node(node)
	if err != nil {
		return err
	}
	for _, r := range st.Rules {
		if r.Kind == RuleRelay && r.Node == node {
			return fmt.Errorf("%s already has a delay (fault %s): heal first", node, r.Owner)
		}
	}
	relay := Rule{Kind: RuleRelay, Node: node, Name: owner, Owner: owner, What: "delay relay " + d.String()}
	argv := []string{self, ExecCommand, nd.NS, "--", self, RelayCommand,
		"--token", owner, "--ip", nd.IP, "--port", strconv.Itoa(RelayPort),
		"--delay", d.Delay.String(), "--jitter", d.Jitter.String()}
	err = nw.addRuleFor(node, &relay, nil, func() error {
		if _, err := spawn(argv, logFile); err != nil {
			return err
		}
		// wait until it listens
		addr := net.JoinHostPort(nd.IP, strconv.Itoa(RelayPort))
		deadline := time.Now().Add(10 * time.Second)
		for {
			if listening(nd.NS, addr) {
				return nil
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("delay relay on %s not listening on %s after 10s (log %s)", node, addr, logFile)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if err != nil {
		return err
	}
	_, subnet, err := net.ParseCIDR(st.Subnet)
	if err != nil {
		return err
	}
	redirect := Rule{Kind: RuleNFTable, Node: node, Name: TableName(owner), Owner: owner, What: "redirect TCP through the delay relay"}
	return nw.addRuleFor(node, &redirect, nil, func() error {
		return redirectTable(nd.NS, redirect.Name, net.ParseIP(nd.IP).To4(), subnet)
	})
}

// redirectTable adds table name (family ip) in ns with two nat chains:
// output redirects the node's own new TCP connections to other cluster
// addresses, prerouting redirects new TCP connections to the node's
// address, both to the relay, except the relay's own (marked) ones.
func redirectTable(ns, name string, own net.IP, subnet *net.IPNet) error {
	c, closeNS, err := nftIn(ns)
	if err != nil {
		return err
	}
	defer closeNS()
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: name})
	out := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	pre := c.AddChain(&nftables.Chain{Name: "prerouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	tcp := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
	}
	notMarked := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(relayMark)},
	}
	daddr := &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}
	redir := []expr.Any{
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(RelayPort)},
		&expr.Redir{RegisterProtoMin: 1},
	}
	var outRule []expr.Any
	outRule = append(outRule, tcp...)
	outRule = append(outRule, notMarked...)
	outRule = append(outRule,
		daddr,
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: subnet.Mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: subnet.IP.To4()},
		daddr,
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: own},
	)
	outRule = append(outRule, redir...)
	c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: outRule})
	var preRule []expr.Any
	preRule = append(preRule, tcp...)
	preRule = append(preRule, daddr, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: own})
	preRule = append(preRule, redir...)
	c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: preRule})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("adding nftables table %s in %s: %w", name, ns, err)
	}
	return nil
}

// killRelay ends the relay processes carrying token (found in /proc by
// their command line: netns-delay --token TOKEN).
func killRelay(token string) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	want := "\x00" + RelayCommand + "\x00--token\x00" + token + "\x00"
	var errs []error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), want) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("ending delay relay pid %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// RunRelay is the body of `faultbench netns-delay --token T --ip IP --port
// P --delay D --jitter J`, run inside a node's namespace: it accepts the
// connections the redirect rules send it, connects (marked, so not
// redirected again) to each one's original destination, and copies both
// ways; data leaving the node (towards the original destination for the
// node's own connections, towards the peer for connections to the node) is
// held for D ± J, in order. It runs until ctx ends.
func RunRelay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet(RelayCommand, flag.ContinueOnError)
	token := fs.String("token", "", "the fault's token (how cleanup finds this process)")
	ip := fs.String("ip", "", "the node's address")
	port := fs.Int("port", RelayPort, "port to listen on")
	delay := fs.Duration("delay", 0, "delay of data leaving the node")
	jitter := fs.Duration("jitter", 0, "uniform jitter around the delay")
	if err := fs.Parse(args); err != nil {
		return err
	}
	spec := DelaySpec{Delay: *delay, Jitter: *jitter}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("%s: %w", RelayCommand, err)
	}
	own := net.ParseIP(*ip).To4()
	if *token == "" || own == nil {
		return fmt.Errorf("%s: --token and --ip are required", RelayCommand)
	}
	lg := log.New(os.Stderr, RelayCommand+" "+*token+": ", log.LstdFlags|log.LUTC)
	l, err := net.Listen("tcp4", net.JoinHostPort("0.0.0.0", strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("%s: %w", RelayCommand, err)
	}
	go func() { <-ctx.Done(); l.Close() }()
	lg.Printf("delaying data sent by %s by %s, listening on :%d", *ip, spec, *port)
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: accept: %w", RelayCommand, err)
		}
		go relayConn(ctx, lg, c.(*net.TCPConn), own, spec)
	}
}

// originalDst returns the destination a redirected connection was opened to.
func originalDst(c *net.TCPConn) (*net.TCPAddr, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var addr *net.TCPAddr
	var serr error
	err = rc.Control(func(fd uintptr) {
		// struct sockaddr_in, as returned for SO_ORIGINAL_DST
		mreq, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			serr = err
			return
		}
		b := mreq.Multiaddr
		addr = &net.TCPAddr{IP: net.IPv4(b[4], b[5], b[6], b[7]), Port: int(binary.BigEndian.Uint16(b[2:4]))}
	})
	if err == nil {
		err = serr
	}
	return addr, err
}

func relayConn(ctx context.Context, lg *log.Logger, in *net.TCPConn, own net.IP, spec DelaySpec) {
	defer in.Close()
	dst, err := originalDst(in)
	if err != nil {
		lg.Printf("original destination of %s: %v", in.RemoteAddr(), err)
		return
	}
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, relayMark)
		}); err != nil {
			return err
		}
		return serr
	}}
	oc, err := d.DialContext(ctx, "tcp4", dst.String())
	if err != nil {
		return // the client sees its connection close, as with a refused one
	}
	out := oc.(*net.TCPConn)
	defer out.Close()
	// Data leaves the node towards the original destination when the node
	// opened the connection, towards the client when the node is the destination.
	incoming := dst.IP.Equal(own)
	done := make(chan struct{}, 2)
	pipe := func(dstc, srcc *net.TCPConn, delayed bool) {
		defer func() { done <- struct{}{} }()
		if delayed {
			delayedCopy(dstc, srcc, spec)
		} else {
			_, _ = io.Copy(dstc, srcc)
		}
		_ = dstc.CloseWrite()
	}
	go pipe(out, in, !incoming)
	go pipe(in, out, incoming)
	<-done
	<-done
}

// chunk is data read at one time, due for sending at due.
type chunk struct {
	b   []byte
	due time.Time
}

// delayedCopy copies src to dst, holding each chunk read for spec's delay
// (plus uniform jitter) after it was read, never reordering.
func delayedCopy(dst, src *net.TCPConn, spec DelaySpec) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		var last time.Time
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				d := spec.Delay
				if spec.Jitter > 0 {
					d += time.Duration(rand.Int64N(int64(2*spec.Jitter)+1)) - spec.Jitter
				}
				due := time.Now().Add(d)
				if due.Before(last) {
					due = last
				}
				last = due
				q <- chunk{b: buf[:n], due: due}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			for range q { // drain so the reader ends
			}
			return
		}
	}
}

// listening reports whether a TCP connect from inside ns to addr succeeds.
func listening(ns, addr string) bool {
	ok := false
	_ = Do(ns, func() error {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			ok = true
		}
		return nil
	})
	return ok
}
