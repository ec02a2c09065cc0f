// Package sshtest gives tests real SSH hosts on this machine: a network
// namespace per host (internal/netns, 198.18.0.0/15), each running Debian's
// OpenSSH server (/usr/sbin/sshd) on port 22 of its own address, with a
// generated host key, a generated client key and a known_hosts file that
// lists every host key, all in one directory. It is the harness of the
// distributed tests (docs/distributed.md); it needs root and openssh-server
// (scripts/setup.sh --only ssh).
package sshtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"gopkg.in/yaml.v3"

	"github.com/faultbench/faultbench/internal/netns"
	"github.com/faultbench/faultbench/internal/procstat"
	"github.com/faultbench/faultbench/internal/remote"
)

// SSHD is the OpenSSH server binary (Debian's openssh-server).
const SSHD = "/usr/sbin/sshd"

// privsepDir is the directory Debian's sshd insists on (its privilege
// separation chroot); the package's service normally creates it.
const privsepDir = "/run/sshd"

// Available returns nil when hosts can be started here, else why not (for
// a test's skip message).
func Available() error {
	if err := netns.RequireRoot(); err != nil {
		return err
	}
	if _, err := os.Stat(SSHD); err != nil {
		return fmt.Errorf("%s missing: run scripts/setup.sh --only ssh (Debian's openssh-server)", SSHD)
	}
	return nil
}

// Hosts are the running SSH hosts.
type Hosts struct {
	// Dir holds keys, configs, known_hosts, the inventory and each host's
	// faultbench directory (Dir/hostN).
	Dir string
	// Inventory is the inventory file listing every host.
	Inventory string
	// Hosts are the inventory's hosts, in order.
	Hosts []remote.Host
	// Network is the namespaces' network; host i is its node i.
	Network *netns.Network

	stateDir   string
	procs      []*exec.Cmd
	madePriv   bool
	nodeIPs    []string
	namespaces []string
}

// Start creates n namespaces (in a network recorded under dir/state) and
// starts sshd in each; roles[i] are host i's roles in the inventory
// (default client). On error it removes what it made.
func Start(ctx context.Context, dir string, n int, roles [][]remote.Role) (h *Hosts, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	h = &Hosts{Dir: dir, stateDir: filepath.Join(dir, "state")}
	defer func() {
		if err != nil {
			if cerr := h.Close(context.WithoutCancel(ctx)); cerr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
			}
			h = nil
		}
	}()
	if _, err := os.Stat(privsepDir); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(privsepDir, 0o755); err != nil {
			return h, err
		}
		h.madePriv = true
	}
	nw, err := netns.Create(ctx, h.stateDir, "sshtest", n)
	if err != nil {
		return h, err
	}
	h.Network = nw
	st, err := nw.State()
	if err != nil {
		return h, err
	}
	h.namespaces = append([]string(nil), st.Namespaces...)
	clientKey := filepath.Join(dir, "client_ed25519")
	clientPub, err := writeKey(clientKey)
	if err != nil {
		return h, err
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		return h, err
	}
	u, err := user.Current()
	if err != nil {
		return h, err
	}
	var known strings.Builder
	inv := struct {
		SSH   map[string]any `yaml:"ssh"`
		Hosts []remote.Host  `yaml:"hosts"`
	}{SSH: map[string]any{"user": u.Username, "key": clientKey, "known_hosts": filepath.Join(dir, "known_hosts")}}
	for i := range n {
		nd := st.Nodes[i]
		hdir := filepath.Join(dir, "host"+strconv.Itoa(i+1))
		if err := os.MkdirAll(hdir, 0o700); err != nil {
			return h, err
		}
		hostPub, err := writeKey(filepath.Join(hdir, "ssh_host_ed25519_key"))
		if err != nil {
			return h, err
		}
		known.WriteString(knownhosts.Line([]string{knownhosts.Normalize(nd.IP + ":22")}, hostPub) + "\n")
		cfg := filepath.Join(hdir, "sshd_config")
		conf := strings.Join([]string{
			"ListenAddress " + nd.IP + ":22",
			"HostKey " + filepath.Join(hdir, "ssh_host_ed25519_key"),
			"AuthorizedKeysFile " + auth,
			"PidFile none",
			"StrictModes no",
			"UsePAM no",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"PermitRootLogin prohibit-password",
			"UseDNS no",
			"LogLevel ERROR",
			"MaxSessions 64",
			"MaxStartups 64",
			"",
		}, "\n")
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			return h, err
		}
		cmd := exec.Command(SSHD, "-D", "-e", "-f", cfg)
		logf, err := os.Create(filepath.Join(hdir, "sshd.log"))
		if err != nil {
			return h, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		// forked from a thread inside the namespace, sshd lives there
		serr := netns.Do(nd.NS, cmd.Start)
		logf.Close()
		if serr != nil {
			return h, fmt.Errorf("starting sshd in %s: %w", nd.NS, serr)
		}
		h.procs = append(h.procs, cmd)
		h.nodeIPs = append(h.nodeIPs, nd.IP)
		r := []remote.Role{remote.RoleClient}
		if i < len(roles) && len(roles[i]) > 0 {
			r = roles[i]
		}
		inv.Hosts = append(inv.Hosts, remote.Host{Name: "h" + strconv.Itoa(i+1), Address: nd.IP, Roles: r, Dir: hdir})
	}
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known.String()), 0o600); err != nil {
		return h, err
	}
	b, err := yaml.Marshal(inv)
	if err != nil {
		return h, err
	}
	h.Inventory = filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(h.Inventory, b, 0o600); err != nil {
		return h, err
	}
	parsed, err := remote.Load(h.Inventory)
	if err != nil {
		return h, err
	}
	h.Hosts = parsed.Hosts
	// wait until every sshd accepts connections
	deadline := time.Now().Add(20 * time.Second)
	for i, ip := range h.nodeIPs {
		for {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "22"), time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(filepath.Join(dir, "host"+strconv.Itoa(i+1), "sshd.log"))
				return h, fmt.Errorf("sshd on %s not accepting connections after 20s: %v; its log: %s", ip, err, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return h, nil
}

// writeKey writes a new ed25519 private key (OpenSSH format) to path and
// returns its public key.
func writeKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
}

// Close stops every sshd and the sessions it forked, removes the
// namespaces and the privilege separation directory if Start made it. The
// directory itself is the caller's (a test's TempDir).
func (h *Hosts) Close(ctx context.Context) error {
	var errs []error
	for _, cmd := range h.procs {
		kids := children(cmd.Process.Pid)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	h.procs = nil
	if h.Network != nil {
		if err := h.Network.Destroy(ctx); err != nil {
			errs = append(errs, err)
		}
		h.Network = nil
	}
	if h.madePriv {
		if err := os.Remove(privsepDir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		h.madePriv = false
	}
	return errors.Join(errs...)
}

// Namespaces returns every namespace of the hosts' network, the bridge's
// included (for leak checks).
func (h *Hosts) Namespaces() []string { return append([]string(nil), h.namespaces...) }

// children returns the pids whose parent is pid (sshd's per-connection
// processes).
func children(pid int) []int {
	tab, _ := procstat.Scan(procstat.Root)
	return tab.Children(pid)
}
