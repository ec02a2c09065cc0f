package kind

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limits and choices of the disk kinds' parameters (internal/diskfs
// checks the same again where it applies them).
const MaxDiskLatency = 10 * time.Second

// DiskDistributions are disk-delay's latency distributions.
var DiskDistributions = []string{"constant", "uniform", "exponential", "normal"}

// DiskOps are the operation classes disk-delay and disk-error act on.
var DiskOps = []string{"read", "write", "fsync"}

// ParseDiskOps reads disk-error's ops: "read,write,fsync" (any of them,
// comma separated) or "all".
func ParseDiskOps(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return slices.Clone(DiskOps), nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(DiskOps, p) {
			return nil, fmt.Errorf("ops %q: want read, write, fsync (comma separated) or all", s)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func latencyParam(name, doc string) Param {
	return Param{Name: name, Type: Duration, Doc: doc, Validate: func(v any) error {
		if d := v.(time.Duration); d < 0 || d > MaxDiskLatency {
			return fmt.Errorf("%s %v: allowed 0..%v", name, d, MaxDiskLatency)
		}
		return nil
	}}
}

// diskKinds are the kinds that act through the file-system layer under
// the nodes' data directories (internal/diskfs). power-loss is of the
// process family: what it breaks is the node's processes (with their
// un-fsynced writes), and start, a process kind, brings the node back.
func diskKinds() []Kind {
	heal := []string{"disk-heal"}
	return []Kind{
		{Name: "power-loss", Family: Process, Restores: []string{"start"}, Color: colDisk},
		{Name: "disk-delay", Family: Disk, Restores: heal, Color: colDisk, Params: []Param{
			latencyParam("read", "mean latency added to every read (0..10s)"),
			latencyParam("write", "mean latency added to every write and fallocate (0..10s)"),
			latencyParam("fsync", "mean latency added to every fsync and fdatasync (0..10s)"),
			{Name: "distribution", Type: String, Doc: "constant (default), uniform (mean ± jitter), exponential (the mean), normal (mean, standard deviation jitter)",
				Validate: func(v any) error {
					if s := v.(string); !slices.Contains(DiskDistributions, s) {
						return fmt.Errorf("distribution %q: want %s", s, strings.Join(DiskDistributions, ", "))
					}
					return nil
				}},
			latencyParam("jitter", "uniform: the half width (default the mean); normal: the standard deviation (default a quarter of the mean)"),
		}, Check: func(v Values) error {
			if v.Duration("read") == 0 && v.Duration("write") == 0 && v.Duration("fsync") == 0 {
				return &ParamError{Param: "write", Kind: "disk-delay", Err: errors.New("disk-delay needs a latency: read, write or fsync (e.g. params: {fsync: 50ms})")}
			}
			return nil
		}},
		{Name: "disk-error", Family: Disk, Restores: heal, Color: colDisk, Params: []Param{
			{Name: "ops", Type: String, Doc: "the operations that fail: read, write, fsync (comma separated) or all (default)",
				Validate: func(v any) error { _, err := ParseDiskOps(v.(string)); return err }},
			{Name: "percent", Type: Int, Doc: "the share of those operations that fail with EIO, in percent (1..100, default 100)",
				Validate: func(v any) error {
					if n := v.(int); n < 1 || n > 100 {
						return fmt.Errorf("percent %d: allowed 1..100", n)
					}
					return nil
				}},
		}},
		{Name: "disk-full", Family: Disk, Restores: heal, Color: colDisk},
		{Name: "disk-stall", Family: Disk, Restores: heal, Color: colDisk},
		{Name: "disk-heal", Family: Disk, Color: colDisk},
		// disk-sync makes what the nodes wrote so far durable, as the
		// kernel's writeback and the file system's journal would in
		// time: a starting point for a power loss (the loaded data and
		// the schema are not at stake, the measured run's writes are)
		{Name: "disk-sync", Family: Disk, Color: colDisk},
	}
}
