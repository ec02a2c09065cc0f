// Package clientproc runs a txkv client library instance in a process of
// its own, so that a client failure (the paper's section 3.1) can be a
// real kill -9 of a client process instead of an in-process simulation:
// the child (Serve, the body of `faultbench node txkv-client`) registers
// with the coordinator, heartbeats, commits and flushes; the parent drives
// transactions through it over net/rpc on 127.0.0.1 (Start, Proc, Txn) and
// kills it with SIGKILL (Proc.Kill), after which the coordinator's
// client-failure path must replay what it committed and had not flushed.
//
// The child exits when its standard input ends, so it never outlives the
// process that started it. (It is not spawned with Pdeathsig: that signal
// follows the OS thread that forked it, which the Go runtime may end, and
// a spurious kill would be a client crash nobody asked for.)
package clientproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/client"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// Error codes carried in replies, mapped back to the client library's
// errors by the parent.
const (
	codeAborted      = "aborted"
	codeNotCommitted = "not-committed"
	codeUnknown      = "unknown-outcome"
	codeClosed       = "closed"
	codeDeadline     = "deadline"
	codeOther        = "error"
	codeNoTxn        = "no-txn"
)

// Reply is embedded in every reply: an empty Code is success.
type Reply struct {
	Code string
	Msg  string
}

func replyOf(err error) Reply {
	switch {
	case err == nil:
		return Reply{}
	case errors.Is(err, client.ErrAborted):
		return Reply{codeAborted, err.Error()}
	case errors.Is(err, client.ErrNotCommitted):
		return Reply{codeNotCommitted, err.Error()}
	case errors.Is(err, client.ErrUnknownOutcome):
		return Reply{codeUnknown, err.Error()}
	case errors.Is(err, client.ErrClosed):
		return Reply{codeClosed, err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return Reply{codeDeadline, err.Error()}
	}
	return Reply{codeOther, err.Error()}
}

// errNoTxn: the child does not know the transaction (it ended).
var errNoTxn = errors.New("clientproc: no such transaction")

func (r Reply) err() error {
	var base error
	switch r.Code {
	case "":
		return nil
	case codeAborted:
		base = client.ErrAborted
	case codeNotCommitted:
		base = client.ErrNotCommitted
	case codeUnknown:
		base = client.ErrUnknownOutcome
	case codeClosed:
		base = client.ErrClosed
	case codeDeadline:
		base = context.DeadlineExceeded
	case codeNoTxn:
		base = errNoTxn
	default:
		return errors.New(r.Msg)
	}
	return fmt.Errorf("client process: %s: %w", r.Msg, base)
}

// Args is what every call carries: the transaction, and how long the
// caller's context has left (0: no deadline).
type Args struct {
	Txn     uint64
	Timeout time.Duration
	Table   string
	Key     string
	Fields  []string
	Count   int
	Values  map[string][]byte
}

// BeginReply answers Begin.
type BeginReply struct {
	Reply
	Txn     uint64
	StartTS uint64
}

// ReadReply answers Read.
type ReadReply struct {
	Reply
	Values map[string][]byte
	Found  bool
}

// ScanReply answers Scan.
type ScanReply struct {
	Reply
	Rows []wire.Row
}

// CommitReply answers Commit.
type CommitReply struct {
	Reply
	TS uint64
}

// InfoReply describes the child's client instance.
type InfoReply struct {
	Reply
	Name        string
	ID          uint64
	TF          uint64
	Commits     int64
	Flushes     int64
	Persistence wire.Persistence
	Status      wire.ClusterStatus
}

// ---- the child ----

type service struct {
	cl   *client.Client
	mu   sync.Mutex
	next uint64
	txns map[uint64]*client.Txn
}

func (s *service) ctx(a *Args) (context.Context, context.CancelFunc) {
	if a.Timeout > 0 {
		return context.WithTimeout(context.Background(), a.Timeout)
	}
	return context.WithCancel(context.Background())
}

func (s *service) txn(id uint64, remove bool) *client.Txn {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.txns[id]
	if remove {
		delete(s.txns, id)
	}
	return t
}

// Begin starts a transaction.
func (s *service) Begin(a *Args, r *BeginReply) error {
	ctx, cancel := s.ctx(a)
	defer cancel()
	t, err := s.cl.Begin(ctx)
	if err != nil {
		r.Reply = replyOf(err)
		return nil
	}
	s.mu.Lock()
	s.next++
	r.Txn = s.next
	s.txns[r.Txn] = t
	s.mu.Unlock()
	r.StartTS = t.StartTS()
	return nil
}

// Read reads a row in the transaction's snapshot.
func (s *service) Read(a *Args, r *ReadReply) error {
	t := s.txn(a.Txn, false)
	if t == nil {
		r.Reply = Reply{codeNoTxn, "read: transaction ended"}
		return nil
	}
	ctx, cancel := s.ctx(a)
	defer cancel()
	m, ok, err := t.Read(ctx, a.Table, a.Key, a.Fields)
	r.Values, r.Found, r.Reply = m, ok, replyOf(err)
	return nil
}

// Scan scans rows in the transaction's snapshot.
func (s *service) Scan(a *Args, r *ScanReply) error {
	t := s.txn(a.Txn, false)
	if t == nil {
		r.Reply = Reply{codeNoTxn, "scan: transaction ended"}
		return nil
	}
	ctx, cancel := s.ctx(a)
	defer cancel()
	rows, err := t.Scan(ctx, a.Table, a.Key, a.Count, a.Fields)
	r.Rows, r.Reply = rows, replyOf(err)
	return nil
}

// Write buffers a write in the transaction.
func (s *service) Write(a *Args, r *Reply) error {
	t := s.txn(a.Txn, false)
	if t == nil {
		*r = Reply{codeNoTxn, "write: transaction ended"}
		return nil
	}
	*r = replyOf(t.Write(a.Table, a.Key, a.Values))
	return nil
}

// Delete buffers a delete in the transaction.
func (s *service) Delete(a *Args, r *Reply) error {
	t := s.txn(a.Txn, false)
	if t == nil {
		*r = Reply{codeNoTxn, "delete: transaction ended"}
		return nil
	}
	*r = replyOf(t.Delete(a.Table, a.Key))
	return nil
}

// Commit commits the transaction.
func (s *service) Commit(a *Args, r *CommitReply) error {
	t := s.txn(a.Txn, true)
	if t == nil {
		r.Reply = Reply{codeNoTxn, "commit: transaction ended"}
		return nil
	}
	ctx, cancel := s.ctx(a)
	defer cancel()
	ts, err := t.Commit(ctx)
	r.TS, r.Reply = ts, replyOf(err)
	return nil
}

// Abort ends the transaction without committing.
func (s *service) Abort(a *Args, r *Reply) error {
	if t := s.txn(a.Txn, true); t != nil {
		t.Abort()
	}
	return nil
}

// Info describes the instance, with the coordinator's status when asked
// (Count > 0).
func (s *service) Info(a *Args, r *InfoReply) error {
	r.Name, r.ID, r.TF = s.cl.Name(), s.cl.ID(), s.cl.TF()
	r.Commits, _, r.Flushes = s.cl.Stats()
	r.Persistence = s.cl.Config().Persistence
	if a.Count > 0 {
		ctx, cancel := s.ctx(a)
		defer cancel()
		st, err := s.cl.ClusterStatus(ctx)
		r.Status, r.Reply = st, replyOf(err)
	}
	return nil
}

// Close closes the client cleanly (its flushes end, it unregisters); the
// process ends when the parent then closes its standard input (ending it
// here could cut this reply off).
func (s *service) Close(a *Args, r *Reply) error {
	ctx, cancel := s.ctx(a)
	defer cancel()
	*r = replyOf(s.cl.Close(ctx))
	return nil
}

// Serve is the child: it opens a client library instance with cfg, serves
// it on 127.0.0.1 and writes "ready ADDR" to out; it returns when ctx ends
// (the client is closed cleanly) or when in ends: the parent let go after
// a Close call, or is gone (the client is then abandoned, as a crash would
// leave it; after Close, abandoning it changes nothing).
func Serve(ctx context.Context, cfg client.Config, in io.Reader, out io.Writer) error {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cl, err := client.Open(octx, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("client process %s: %w", cfg.Name, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cl.Abandon()
		return fmt.Errorf("client process %s: %w", cfg.Name, err)
	}
	svc := &service{cl: cl, txns: map[uint64]*client.Txn{}}
	parentGone := make(chan struct{})
	srv := rpc.NewServer()
	if err := srv.RegisterName("Proc", svc); err != nil {
		l.Close()
		cl.Abandon()
		return fmt.Errorf("client process: %w", err)
	}
	serveDone := make(chan struct{})
	go func() { wire.Serve(l, srv, nil); close(serveDone) }()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(parentGone) // the parent is gone or let go
	}()
	if _, err := fmt.Fprintf(out, "ready %s\n", l.Addr()); err != nil {
		l.Close()
		<-serveDone
		cl.Abandon()
		return fmt.Errorf("client process: %w", err)
	}
	var closed bool
	select {
	case <-ctx.Done():
		closed = true
	case <-parentGone:
	}
	if closed {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = cl.Close(cctx)
		cancel()
	} else {
		cl.Abandon()
	}
	l.Close()
	<-serveDone
	return nil
}

// ---- the parent ----

// Command is the command line of a client process: `SELF node txkv-client
// --coordinator ADDR --name NAME [--skip-flush]`.
func Command(self, coordinator, name string, skipFlush bool) []string {
	argv := []string{self, "node", "txkv-client", "--coordinator", coordinator, "--name", name}
	if skipFlush {
		argv = append(argv, "--skip-flush")
	}
	return argv
}

// Proc is a running client process.
type Proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	conn  *wire.Conn
	exit  chan struct{}
	err   error // Wait's result, set before exit is closed
}

// Start starts argv (Command, or a test binary standing in for it) with
// stderr going to errOut (nil: discarded) and waits, within ctx, until the
// child's client registered and serves.
func Start(ctx context.Context, name string, argv []string, errOut io.Writer) (*Proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("client process: empty command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if errOut == nil {
		errOut = io.Discard
	}
	cmd.Stderr = errOut
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("client process %s: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("client process %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("client process %s: starting %s: %w", name, argv[0], err)
	}
	p := &Proc{name: name, cmd: cmd, stdin: stdin, exit: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		close(p.exit)
	}()
	select {
	case s := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(s), "ready ")
		if !ok {
			p.Kill()
			return nil, fmt.Errorf("client process %s did not start (%q; %v)", name, strings.TrimSpace(s), p.err)
		}
		p.conn = wire.NewConn(addr)
		return p, nil
	case <-ctx.Done():
		p.Kill()
		return nil, fmt.Errorf("client process %s: waiting for it to register: %w", name, ctx.Err())
	}
}

// Name returns the client's name.
func (p *Proc) Name() string { return p.name }

// Pid returns the child's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Kill kills the child with SIGKILL (a client crash: no unregistering,
// flushes under way end where they are) and waits until it is gone.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exit
	if p.conn != nil {
		p.conn.Close()
	}
}

// Close closes the child's client cleanly (pending flushes finish, it
// unregisters) and waits for the process to end; when ctx ends first the
// child is killed.
func (p *Proc) Close(ctx context.Context) error {
	var r Reply
	err := p.conn.Call(ctx, "Proc.Close", &Args{Timeout: timeout(ctx)}, &r)
	if err == nil {
		err = r.err()
	}
	p.stdin.Close()
	select {
	case <-p.exit:
	case <-ctx.Done():
		p.Kill()
		if err == nil {
			err = fmt.Errorf("client process %s: waiting for it to exit: %w", p.name, ctx.Err())
		}
	}
	p.conn.Close()
	return err
}

func timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// call runs method; a transport failure (the child died) is reported as
// gone.
func (p *Proc) call(ctx context.Context, method string, a *Args, r any) error {
	a.Timeout = timeout(ctx)
	if err := p.conn.Call(ctx, method, a, r); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("client process %s: %s: %w", p.name, method, ctx.Err())
		}
		return fmt.Errorf("client process %s: %s: %w: %v", p.name, method, ErrGone, err)
	}
	return nil
}

// ErrGone is wrapped by errors of calls the child did not answer (it
// crashed or was killed).
var ErrGone = errors.New("the client process is gone")

// Info describes the child's client instance; with status it also asks
// the coordinator's status through it.
func (p *Proc) Info(ctx context.Context, status bool) (InfoReply, error) {
	var r InfoReply
	a := &Args{}
	if status {
		a.Count = 1
	}
	if err := p.call(ctx, "Proc.Info", a, &r); err != nil {
		return r, err
	}
	return r, r.err()
}

// Txn is a transaction run by the child.
type Txn struct {
	p       *Proc
	id      uint64
	startTS uint64
}

// Begin starts a transaction in the child.
func (p *Proc) Begin(ctx context.Context) (*Txn, error) {
	var r BeginReply
	if err := p.call(ctx, "Proc.Begin", &Args{}, &r); err != nil {
		return nil, err
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return &Txn{p: p, id: r.Txn, startTS: r.StartTS}, nil
}

// StartTS is the transaction's snapshot.
func (t *Txn) StartTS() uint64 { return t.startTS }

// Read reads a row (client.Txn.Read).
func (t *Txn) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, bool, error) {
	var r ReadReply
	if err := t.p.call(ctx, "Proc.Read", &Args{Txn: t.id, Table: table, Key: key, Fields: fields}, &r); err != nil {
		return nil, false, err
	}
	return r.Values, r.Found, r.err()
}

// Scan scans rows (client.Txn.Scan).
func (t *Txn) Scan(ctx context.Context, table, key string, count int, fields []string) ([]wire.Row, error) {
	var r ScanReply
	if err := t.p.call(ctx, "Proc.Scan", &Args{Txn: t.id, Table: table, Key: key, Count: count, Fields: fields}, &r); err != nil {
		return nil, err
	}
	return r.Rows, r.err()
}

// Write buffers a write (client.Txn.Write).
func (t *Txn) Write(ctx context.Context, table, key string, values map[string][]byte) error {
	var r Reply
	if err := t.p.call(ctx, "Proc.Write", &Args{Txn: t.id, Table: table, Key: key, Values: values}, &r); err != nil {
		return err
	}
	return r.err()
}

// Delete buffers a delete (client.Txn.Delete).
func (t *Txn) Delete(ctx context.Context, table, key string) error {
	var r Reply
	if err := t.p.call(ctx, "Proc.Delete", &Args{Txn: t.id, Table: table, Key: key}, &r); err != nil {
		return err
	}
	return r.err()
}

// Commit commits (client.Txn.Commit). A child that dies before it answers
// leaves the outcome unknown: the error wraps client.ErrUnknownOutcome.
func (t *Txn) Commit(ctx context.Context) (uint64, error) {
	var r CommitReply
	if err := t.p.call(ctx, "Proc.Commit", &Args{Txn: t.id}, &r); err != nil {
		if errors.Is(err, ErrGone) {
			return 0, fmt.Errorf("%w: %w", client.ErrUnknownOutcome, err)
		}
		return 0, err
	}
	return r.TS, r.err()
}

// Abort ends the transaction without committing; it waits at most a
// second for the child.
func (t *Txn) Abort() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var r Reply
	_ = t.p.call(ctx, "Proc.Abort", &Args{Txn: t.id}, &r)
}

// ---- the node command ----

// RunNode is the body of `faultbench node txkv-client --coordinator ADDR
// --name NAME [--skip-flush]`: a client process (Serve on stdin/stdout).
func RunNode(ctx context.Context, args []string) error {
	var cfg client.Config
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--coordinator", "--name":
			if i+1 >= len(args) {
				return fmt.Errorf("node txkv-client: %s needs a value", a)
			}
			if a == "--coordinator" {
				cfg.Coordinator = args[i+1]
			} else {
				cfg.Name = args[i+1]
			}
			i++
		case "--skip-flush":
			cfg.SkipFlush = true
		default:
			return fmt.Errorf("node txkv-client: unexpected argument %s", strconv.Quote(a))
		}
	}
	if cfg.Coordinator == "" || cfg.Name == "" {
		return errors.New("node txkv-client: --coordinator and --name are required")
	}
	return Serve(ctx, cfg, os.Stdin, os.Stdout)
}
