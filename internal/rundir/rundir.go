// Package rundir owns the run directory (runs/<UTC time>-<name>/): the
// opener every run starts with (Open: the directory, env.json, events.jsonl),
// the schemas of the files every run has besides measurements — env.json
// (Env), summary.json (Summary, Totals) — shared by the writers and the
// report's reader, and atomic writes so a reader never sees half a file.
package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TimeFormat is the UTC timestamp at the start of a run directory's name.
const TimeFormat = "20060102T150405Z"

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Create makes a new run directory under base named "<UTC time>-<name>",
// adding -2, -3 ... if that name exists. It returns the directory's path.
func Create(base, name string, now time.Time) (string, error) {
	name = strings.Trim(unsafeName.ReplaceAllString(name, "-"), "-")
	if name == "" {
		name = "run"
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("runs directory: %w", err)
	}
	stem := now.UTC().Format(TimeFormat) + "-" + name
	for i := 1; i < 1000; i++ {
		dir := filepath.Join(base, stem)
		if i > 1 {
			dir += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", fmt.Errorf("creating run directory: %w", err)
		}
	}
	return "", fmt.Errorf("creating run directory: too many runs named %s", stem)
}

// WriteJSON writes v as indented JSON to path atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return WriteFile(path, append(b, '\n'))
}

// WriteFile writes b to path atomically (temp file + rename).
func WriteFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Env is the content of env.json.
type Env struct {
	Faultbench    string    `json:"faultbench_version"`
	Commit        string    `json:"faultbench_commit,omitempty"`
	GoVersion     string    `json:"go_version"`
	OS            string    `json:"os"`
	Arch          string    `json:"arch"`
	Hostname      string    `json:"hostname"`
	Kernel        string    `json:"kernel"`
	CPUs          int       `json:"cpus"`
	GoMaxProcs    int       `json:"client_gomaxprocs"` // cores faultbench's own goroutines may use
	CPUModel      string    `json:"cpu_model,omitempty"`
	MemoryBytes   int64     `json:"memory_bytes"`
	Target        string    `json:"target"`
	TargetVersion string    `json:"target_version,omitempty"`
	Command       []string  `json:"command"`
	Started       time.Time `json:"started"`
	Network       string    `json:"network,omitempty"` // nodes in network namespaces: how faults are made (netns.Describe)
	// Isolation is the isolation level of the SQL driver's transactions
	// (the run's sqldb.isolation: read-committed, repeatable-read or
	// serializable); omitted when unset, the server's default.
	Isolation string `json:"isolation,omitempty"`
	// Clients are the client hosts of a distributed run (--clients), with
	// the clock offset measured to each (docs/distributed.md).
	Clients []ClientHost `json:"clients,omitempty"`
	// ClientGroups says how the client groups ran when not as goroutines of
	// the one faultbench process: ClientGroupsProcesses (clients.process).
	ClientGroups string `json:"client_groups,omitempty"`
	// ClientSettings are the load client's settings that decide failover
	// figures (retries, timeouts, consistency levels, etcd's leader
	// requirement) with their effective values, defaults included, by
	// property key (docs/output.md; each target's in docs/targets-*.md).
	ClientSettings map[string]string `json:"client_settings,omitempty"`
	// TargetOptions are the launcher options of the cluster faultbench
	// started, as the launcher resolved and recorded them (defaults
	// included): its durability settings (redis.appendfsync,
	// postgres.synchronous-commit, ...) and the disk layer (disk: fuse).
	TargetOptions map[string]string `json:"target_options,omitempty"`
}

// ClientGroupsProcesses is Env.ClientGroups of a run whose client groups
// were local `faultbench worker` processes (clients.process=true).
const ClientGroupsProcesses = "processes"

// ClientHost is one client host of a distributed run as env.json records it.
type ClientHost struct {
	Client   int    `json:"client"` // its row in clients.csv
	Name     string `json:"name"`   // inventory name
	Address  string `json:"address"`
	Hostname string `json:"hostname,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
	CPUs     int    `json:"cpus,omitempty"`
	// ClockOffsetMs is the host's clock minus the coordinator's, measured
	// over the worker's SSH session from the round trip with the least
	// delay; ClockUncertaintyMs is half that round trip (the offset is
	// right within it).
	ClockOffsetMs      float64 `json:"clock_offset_ms"`
	ClockUncertaintyMs float64 `json:"clock_uncertainty_ms"`
}

// HostEnv fills the host part of Env from this machine.
func HostEnv(version, commit string) Env {
	e := Env{
		Faultbench: version, Commit: commit,
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), GoMaxProcs: runtime.GOMAXPROCS(0), Command: os.Args, Started: time.Now(),
	}
	e.Hostname, _ = os.Hostname()
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		e.Kernel = utsString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				e.MemoryBytes = kb * 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return e
}

func utsString(f []int8) string {
	var b bytes.Buffer
	for _, c := range f {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}
