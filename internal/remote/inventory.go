// Package remote reaches the hosts of a distributed run over SSH: the
// inventory file (which hosts, how to log in, what each is for), a pool of
// SSH connections (golang.org/x/crypto/ssh, host keys checked against
// known_hosts), remote commands as argument vectors quoted once, and the
// copy of the faultbench binary a host runs (checked by its SHA-256).
// docs/distributed.md describes the inventory and the rules.
package remote

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Role is what a host is for.
type Role string

// Roles.
const (
	// RoleClient hosts run `faultbench worker`: a share of the load.
	RoleClient Role = "client"
	// RoleNode hosts run database nodes.
	RoleNode Role = "node"
)

// DefaultDir is where, relative to the login directory, faultbench keeps
// its binary and node data on a host unless the inventory says otherwise.
const DefaultDir = ".faultbench"

// Host is one machine of the inventory, with its SSH defaults filled in.
type Host struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"` // IP or DNS name
	Port    int    `yaml:"port"`    // SSH port
	User    string `yaml:"user"`    // SSH user
	Key     string `yaml:"key"`     // private key file (OpenSSH format)
	Roles   []Role `yaml:"roles"`
	// Dir is faultbench's directory on the host (binary, node data),
	// absolute or relative to the login directory.
	Dir string `yaml:"dir"`
}

// Addr is the host's SSH address, host:port.
func (h Host) Addr() string { return net.JoinHostPort(h.Address, fmt.Sprint(h.Port)) }

// Has reports whether the host has role r.
func (h Host) Has(r Role) bool { return slices.Contains(h.Roles, r) }

// SSH holds the inventory-wide SSH settings; its user, key, port and dir
// are every host's defaults.
type SSH struct {
	User string `yaml:"user"`
	Key  string `yaml:"key"`
	Port int    `yaml:"port"`
	Dir  string `yaml:"dir"`
	// KnownHosts is the known_hosts file host keys are checked against
	// (default ~/.ssh/known_hosts).
	KnownHosts string `yaml:"known_hosts"`
	// AcceptNewHostKeys adds the key of a host that known_hosts does not
	// list yet (OpenSSH's StrictHostKeyChecking=accept-new); a host whose
	// key differs from the recorded one is refused either way.
	AcceptNewHostKeys bool `yaml:"accept_new_host_keys"`
}

// Inventory is a parsed, validated hosts file.
type Inventory struct {
	SSH   SSH    `yaml:"ssh"`
	Hosts []Host `yaml:"hosts"`
	// Cluster, when set, describes an existing cluster on the hosts that
	// faultbench drives and breaks without installing or starting it.
	Cluster *Existing `yaml:"cluster"`
	// Path is the file it was read from ("" when parsed from bytes).
	Path string `yaml:"-"`
}

// Load reads and validates the inventory file at path.
func Load(path string) (*Inventory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return Parse(b, path)
}

// Parse parses and validates an inventory; path names it in errors.
// Unknown fields are errors; defaults are filled in (port 22, user and key
// from ssh:, dir .faultbench, known_hosts ~/.ssh/known_hosts, ~ expanded).
func Parse(b []byte, path string) (*Inventory, error) {
	if path == "" {
		path = "inventory"
	}
	inv := &Inventory{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(inv); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	inv.Path = path
	if err := inv.fill(); err != nil {
		return nil, err
	}
	if err := inv.Validate(); err != nil {
		return nil, err
	}
	return inv, nil
}

func (inv *Inventory) fill() error {
	home, _ := os.UserHomeDir()
	expand := func(p string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
			return filepath.Join(home, rest)
		}
		return p
	}
	if inv.SSH.Port == 0 {
		inv.SSH.Port = 22
	}
	if inv.SSH.Dir == "" {
		inv.SSH.Dir = DefaultDir
	}
	if inv.SSH.KnownHosts == "" && home != "" {
		inv.SSH.KnownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	inv.SSH.KnownHosts = expand(inv.SSH.KnownHosts)
	inv.SSH.Key = expand(inv.SSH.Key)
	for i := range inv.Hosts {
		h := &inv.Hosts[i]
		if h.Port == 0 {
			h.Port = inv.SSH.Port
		}
		if h.User == "" {
			h.User = inv.SSH.User
		}
		if h.Key == "" {
			h.Key = inv.SSH.Key
		}
		if h.Dir == "" {
			h.Dir = inv.SSH.Dir
		}
		h.Key = expand(h.Key)
	}
	return nil
}

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)
	// a DNS name or an IPv4 address; IPv6 is checked with net.ParseIP
	hostRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)
	userRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$`)
	// dir: no shell-special characters are needed (argv is quoted anyway),
	// but a path with control characters or a newline is a mistake
	dirRE = regexp.MustCompile(`^[A-Za-z0-9._/~+-]+$`)
)

// Validate checks every field and reports every problem, each naming the
// file, the host and the field.
func (inv *Inventory) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{inv.Path}, args...)...))
	}
	if len(inv.Hosts) == 0 {
		bad("hosts: empty (list at least one host: {name, address, roles: [client|node]})")
	}
	if inv.SSH.KnownHosts == "" {
		bad("ssh.known_hosts: empty and no home directory to default to ~/.ssh/known_hosts")
	}
	names := map[string]bool{}
	addrs := map[string]string{}
	for i, h := range inv.Hosts {
		where := fmt.Sprintf("hosts[%d]", i)
		if h.Name != "" {
			where += " (" + h.Name + ")"
		}
		switch {
		case h.Name == "":
			bad("%s.name: empty (a short name: letters, digits, '-', '_')", where)
		case !nameRE.MatchString(h.Name):
			bad("%s.name %q: allowed letters, digits, '-' and '_' (at most 63)", where, h.Name)
		case names[h.Name]:
			bad("%s.name %q: used twice", where, h.Name)
		}
		names[h.Name] = true
		switch {
		case h.Address == "":
			bad("%s.address: empty (an IP address or a DNS name)", where)
		case net.ParseIP(h.Address) == nil && !hostRE.MatchString(h.Address):
			bad("%s.address %q: not an IP address or a DNS name", where, h.Address)
		}
		if h.Port < 1 || h.Port > 65535 {
			bad("%s.port %d: allowed 1..65535", where, h.Port)
		}
		if other, dup := addrs[h.Addr()]; dup && h.Address != "" {
			bad("%s: %s is also host %s", where, h.Addr(), other)
		}
		addrs[h.Addr()] = h.Name
		switch {
		case h.User == "":
			bad("%s.user: empty (set it on the host or in ssh.user)", where)
		case !userRE.MatchString(h.User):
			bad("%s.user %q: not a user name", where, h.User)
		}
		if h.Key == "" {
			bad("%s.key: empty (a private key file, on the host or in ssh.key)", where)
		}
		if !dirRE.MatchString(h.Dir) {
			bad("%s.dir %q: allowed letters, digits and ._/~+-", where, h.Dir)
		}
		if len(h.Roles) == 0 {
			bad("%s.roles: empty (allowed client, node)", where)
		}
		seen := map[Role]bool{}
		for _, r := range h.Roles {
			if r != RoleClient && r != RoleNode {
				bad("%s.roles: %q: allowed client, node", where, r)
			}
			if seen[r] {
				bad("%s.roles: %q twice", where, r)
			}
			seen[r] = true
		}
	}
	inv.validateExisting(bad)
	return errors.Join(errs...)
}

// WithRole returns the hosts with role r, in file order.
func (inv *Inventory) WithRole(r Role) []Host {
	var out []Host
	for _, h := range inv.Hosts {
		if h.Has(r) {
			out = append(out, h)
		}
	}
	return out
}
