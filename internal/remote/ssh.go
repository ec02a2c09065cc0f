package remote

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/faultbench/faultbench/internal/outcome"
)

// Timeouts of the SSH layer.
const (
	// DialTimeout bounds the TCP connect plus the SSH handshake.
	DialTimeout = 15 * time.Second
	// DefaultCallTimeout bounds a Run whose context has no deadline.
	DefaultCallTimeout = 2 * time.Minute
)

// Pool keeps one SSH connection per host and hands it to every call for
// that host (connection reuse). It is safe for concurrent use.
type Pool struct {
	knownHosts string
	acceptNew  bool

	khMu  sync.Mutex // known_hosts reads and appends
	mu    sync.Mutex
	conns map[string]*Conn
	dials map[string]*sync.Mutex // one dial at a time per host
}

// NewPool returns a pool for inv's hosts. acceptNew (or the inventory's
// ssh.accept_new_host_keys) adds unknown host keys to known_hosts instead
// of refusing the host.
func NewPool(inv *Inventory, acceptNew bool) *Pool {
	return &Pool{
		knownHosts: inv.SSH.KnownHosts,
		acceptNew:  acceptNew || inv.SSH.AcceptNewHostKeys,
		conns:      map[string]*Conn{},
		dials:      map[string]*sync.Mutex{},
	}
}

// Conn is one host's SSH connection.
type Conn struct {
	Host      Host
	c         *ssh.Client
	installMu sync.Mutex // one binary install at a time per host
}

// Get returns the connection to h, dialling it the first time.
func (p *Pool) Get(ctx context.Context, h Host) (*Conn, error) {
	p.mu.Lock()
	if c, ok := p.conns[h.Name]; ok {
		p.mu.Unlock()
		return c, nil
	}
	dm, ok := p.dials[h.Name]
	if !ok {
		dm = &sync.Mutex{}
		p.dials[h.Name] = dm
	}
	p.mu.Unlock()
	dm.Lock()
	defer dm.Unlock()
	p.mu.Lock()
	if c, ok := p.conns[h.Name]; ok {
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := p.dial(ctx, h)
	// a handshake the server cut (reset, EOF) is tried again twice: a
	// loaded host's sshd drops a connection now and then (seen at load 37
	// with six sshd in namespaces); a host key problem is never retried
	for try := 1; try <= 2 && err != nil && transientDial(err) && ctx.Err() == nil; try++ {
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(try) * 500 * time.Millisecond):
			c, err = p.dial(ctx, h)
		}
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.conns[h.Name] = c
	p.mu.Unlock()
	return c, nil
}

// Close closes every connection.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for name, c := range p.conns {
		if err := c.c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("ssh %s: %w", name, err))
		}
		delete(p.conns, name)
	}
	return errors.Join(errs...)
}

func (p *Pool) dial(ctx context.Context, h Host) (*Conn, error) {
	signer, err := loadKey(h.Key)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	algos, err := p.knownAlgorithms(h)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	cfg := &ssh.ClientConfig{
		User:              h.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   p.hostKeyCallback(h),
		HostKeyAlgorithms: algos,
		Timeout:           DialTimeout,
	}
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", h.Addr())
	if err != nil {
		return nil, outcome.Classified(outcome.GenericClass(err), "ssh dial", fmt.Errorf("%s (%s): %w", h.Name, h.Addr(), err))
	}
	deadline, _ := dctx.Deadline()
	_ = nc.SetDeadline(deadline)
	cc, chans, reqs, err := ssh.NewClientConn(nc, h.Addr(), cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("ssh %s@%s (%s): %w", h.User, h.Addr(), h.Name, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return &Conn{Host: h, c: ssh.NewClient(cc, chans, reqs)}, nil
}

// loadKey reads an unencrypted private key file.
func loadKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssh key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	var pp *ssh.PassphraseMissingError
	if errors.As(err, &pp) {
		return nil, fmt.Errorf("ssh key %s is protected by a passphrase: faultbench needs a key without one (a dedicated benchmark key)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh key %s: %w", path, err)
	}
	return s, nil
}

// knownAlgorithms returns the host key algorithms known_hosts records for
// h (so the server is asked for a key that can be checked), or nil when it
// records none.
func (p *Pool) knownAlgorithms(h Host) ([]string, error) {
	p.khMu.Lock()
	defer p.khMu.Unlock()
	cb, err := p.readKnownHosts()
	if err != nil || cb == nil {
		return nil, err
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	addr := &net.TCPAddr{IP: net.ParseIP(h.Address), Port: h.Port}
	var ke *knownhosts.KeyError
	if err := cb(h.Addr(), addr, probe); !errors.As(err, &ke) {
		return nil, nil
	}
	var algos []string
	for _, k := range ke.Want {
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algos = append(algos, t)
		}
	}
	return algos, nil
}

// readKnownHosts parses the known_hosts file; nil (no error) when it does
// not exist yet. Called with khMu held.
func (p *Pool) readKnownHosts() (ssh.HostKeyCallback, error) {
	if _, err := os.Stat(p.knownHosts); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	cb, err := knownhosts.New(p.knownHosts)
	if err != nil {
		return nil, fmt.Errorf("known_hosts %s: %w", p.knownHosts, err)
	}
	return cb, nil
}

// hostKeyCallback checks the server's key against known_hosts: a known
// key passes, a different key for a known host is refused, an unknown host
// is refused unless new keys are accepted (then its key is appended).
func (p *Pool) hostKeyCallback(h Host) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		p.khMu.Lock()
		defer p.khMu.Unlock()
		cb, err := p.readKnownHosts()
		if err != nil {
			return err
		}
		if cb != nil {
			err = cb(hostname, remote, key)
			if err == nil {
				return nil
			}
			var ke *knownhosts.KeyError
			if !errors.As(err, &ke) {
				return err
			}
			if len(ke.Want) > 0 {
				return fmt.Errorf("host key of %s (%s, %s %s) does not match the one in %s line %d: refusing (a reinstalled host, or someone in between; remove the old line if you trust the new key)",
					h.Name, hostname, key.Type(), ssh.FingerprintSHA256(key), ke.Want[0].Filename, ke.Want[0].Line)
			}
		}
		if !p.acceptNew {
			return fmt.Errorf("host key of %s (%s, %s %s) is not in %s: add it (ssh-keyscan -p %d %s >> %s, after checking the fingerprint), or accept new keys with --accept-new-host-keys or ssh.accept_new_host_keys: true",
				h.Name, hostname, key.Type(), ssh.FingerprintSHA256(key), p.knownHosts, h.Port, h.Address, p.knownHosts)
		}
		if err := os.MkdirAll(filepath.Dir(p.knownHosts), 0o700); err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		f, err := os.OpenFile(p.knownHosts, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
		if _, err := f.WriteString(line); err != nil {
			f.Close()
			return fmt.Errorf("known_hosts %s: %w", p.knownHosts, err)
		}
		return f.Close()
	}
}

// Quote renders argv as one command line for the remote login shell, each
// argument single-quoted once where it holds anything but plain characters,
// so that no argument is ever interpreted by that shell.
func Quote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteArg(a))
	}
	return b.String()
}

func quoteArg(a string) string {
	if a == "" {
		return "''"
	}
	plain := true
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./=:,@%+", r)) {
			plain = false
			break
		}
	}
	if plain {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// ExitError is a remote command that ran and exited non-zero (or was
// killed by a signal).
type ExitError struct {
	Host   string
	Argv   []string
	Status int
	Signal string
	Stderr string // its last lines
}

func (e *ExitError) Error() string {
	how := fmt.Sprintf("exit status %d", e.Status)
	if e.Signal != "" {
		how = "killed by SIG" + e.Signal
	}
	msg := fmt.Sprintf("%s: %s: %s", e.Host, Quote(e.Argv), how)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// tail returns the last n bytes of b, from a line start where possible.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

func (c *Conn) exitErr(argv []string, err error, stderr []byte) error {
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Host: c.Host.Name, Argv: argv, Status: ee.ExitStatus(), Signal: ee.Signal(), Stderr: tail(stderr, 2000)}
	}
	return fmt.Errorf("%s: %s: %w", c.Host.Name, Quote(argv), err)
}

// Run runs argv on the host and returns its standard output; stdin may be
// nil. The call ends by ctx's deadline (DefaultCallTimeout when ctx has
// none): the remote command is then sent SIGKILL and its session closed.
func (c *Conn) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("remote: empty command")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCallTimeout)
		defer cancel()
	}
	s, err := c.c.NewSession()
	if err != nil {
		return nil, outcome.Classified(outcome.Unavailable, "ssh session", fmt.Errorf("%s: %w", c.Host.Name, err))
	}
	defer s.Close()
	var out, errb bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = stdin, &out, &errb
	if err := s.Start(Quote(bounded(ctx, argv))); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", c.Host.Name, Quote(argv), err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			// timeout(1) ended it at the deadline
			return out.Bytes(), outcome.Classified(outcome.Timeout, "ssh run", fmt.Errorf("%s: %s: %w", c.Host.Name, Quote(argv), ctx.Err()))
		}
		if err != nil {
			return out.Bytes(), c.exitErr(argv, err, errb.Bytes())
		}
		return out.Bytes(), nil
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		s.Close()
		// timeout(1) ends the command on the host at the deadline; do not
		// wait for a session that does not close
		select {
		case <-done:
		case <-time.After(killGrace):
		}
		return out.Bytes(), outcome.Classified(outcome.Timeout, "ssh run", fmt.Errorf("%s: %s: %w", c.Host.Name, Quote(argv), ctx.Err()))
	}
}

// killGrace is how long after its deadline a remote command is waited for
// (timeout(1) sends it SIGTERM at the deadline and SIGKILL a second later).
const killGrace = 3 * time.Second

// bounded wraps argv in coreutils' timeout(1) with ctx's remaining time, so
// that the command ends on the host at the deadline even when the SSH
// server ignores signal requests (OpenSSH refuses them for some sessions)
// and the command does not read its standard input.
func bounded(ctx context.Context, argv []string) []string {
	dl, ok := ctx.Deadline()
	if !ok {
		return argv
	}
	secs := max(time.Until(dl).Seconds(), 0.1)
	return append([]string{"timeout", "-k", "1", strconv.FormatFloat(secs, 'f', 1, 64)}, argv...)
}

// Proc is a remote command started by Start: write its standard input,
// read its standard output, then Wait.
type Proc struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	conn   *Conn
	argv   []string
	s      *ssh.Session
	stderr *bytes.Buffer
	done   chan error
	stop   func() bool
}

// Start starts argv on the host. It runs until it exits, ctx is done (then
// it is sent SIGKILL and its session closed, which also closes its
// standard input) or Close is called.
func (c *Conn) Start(ctx context.Context, argv []string) (*Proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("remote: empty command")
	}
	s, err := c.c.NewSession()
	if err != nil {
		return nil, outcome.Classified(outcome.Unavailable, "ssh session", fmt.Errorf("%s: %w", c.Host.Name, err))
	}
	p := &Proc{conn: c, argv: argv, s: s, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	if p.Stdin, err = s.StdinPipe(); err != nil {
		s.Close()
		return nil, err
	}
	if p.Stdout, err = s.StdoutPipe(); err != nil {
		s.Close()
		return nil, err
	}
	s.Stderr = &lockedBuffer{b: p.stderr}
	if err := s.Start(Quote(bounded(ctx, argv))); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %s: %w", c.Host.Name, Quote(argv), err)
	}
	go func() { p.done <- s.Wait() }()
	p.stop = context.AfterFunc(ctx, p.kill)
	return p, nil
}

func (p *Proc) kill() {
	_ = p.s.Signal(ssh.SIGKILL)
	p.s.Close()
}

// Close kills the command and closes its session.
func (p *Proc) Close() { p.kill() }

// Wait waits for the command to end; bounded by the context given to
// Start.
func (p *Proc) Wait() error {
	err := <-p.done
	p.stop()
	p.done <- err // Wait may be called again
	if err != nil {
		lb := p.s.Stderr.(*lockedBuffer)
		return p.conn.exitErr(p.argv, err, lb.bytes())
	}
	return nil
}

// Stderr returns the last of what the command wrote to its standard error.
func (p *Proc) Stderr() string { return tail(p.s.Stderr.(*lockedBuffer).bytes(), 2000) }

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

// transientDial reports whether a dial failed because the server cut the
// connection (reset, EOF) rather than refused it for a reason (host key,
// authentication).
func transientDial(err error) bool {
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset by peer")
}
