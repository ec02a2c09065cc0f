package diskfs

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Op is a class of file-system operations a fault acts on.
type Op string

// The operation classes.
const (
	OpRead  Op = "read"  // read
	OpWrite Op = "write" // write, fallocate
	OpFsync Op = "fsync" // fsync and fdatasync of files and directories
	// opCreate names a new entry (create, mkdir, mknod, symlink, link):
	// disk-full refuses it, disk-stall blocks it.
	opCreate Op = "create"
	// opMeta is every other call that changes names or attributes
	// (unlink, rmdir, rename, setattr) and open: disk-stall blocks it.
	opMeta Op = "meta"
)

// DataOps are the operation classes disk-delay and disk-error take.
var DataOps = []Op{OpRead, OpWrite, OpFsync}

// ParseOps reads a list of operation classes such as "read,write" or
// "fsync"; "all" is every one of DataOps.
func ParseOps(s string) ([]Op, error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return slices.Clone(DataOps), nil
	}
	var out []Op
	for _, p := range strings.Split(s, ",") {
		op := Op(strings.TrimSpace(p))
		if !slices.Contains(DataOps, op) {
			return nil, fmt.Errorf("operation %q: want read, write, fsync (comma separated) or all", p)
		}
		if !slices.Contains(out, op) {
			out = append(out, op)
		}
	}
	return out, nil
}

// Latency distributions of disk-delay.
const (
	DistConstant    = "constant"    // every operation waits the mean
	DistUniform     = "uniform"     // uniform in mean ± jitter (jitter defaults to the mean)
	DistExponential = "exponential" // exponential with the mean (a long tail)
	DistNormal      = "normal"      // normal with the mean and standard deviation jitter (default mean/4), cut at 0
)

// Distributions lists the latency distributions.
var Distributions = []string{DistConstant, DistUniform, DistExponential, DistNormal}

// MaxLatency bounds one operation's mean latency and jitter.
const MaxLatency = 10 * time.Second

// Delay is disk-delay: latency added to operations before they run.
type Delay struct {
	Read  time.Duration `json:"read,omitempty"`  // mean latency added to each read
	Write time.Duration `json:"write,omitempty"` // to each write or fallocate
	Fsync time.Duration `json:"fsync,omitempty"` // to each fsync or fdatasync
	// Distribution is one of Distributions ("" is constant).
	Distribution string `json:"distribution,omitempty"`
	// Jitter is the spread: uniform's half width (default the mean),
	// normal's standard deviation (default a quarter of the mean).
	Jitter time.Duration `json:"jitter,omitempty"`
}

// Validate checks the delay.
func (d Delay) Validate() error {
	var errs []error
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"read", d.Read}, {"write", d.Write}, {"fsync", d.Fsync}, {"jitter", d.Jitter}} {
		if v.d < 0 || v.d > MaxLatency {
			errs = append(errs, fmt.Errorf("%s %v: allowed 0..%v", v.name, v.d, MaxLatency))
		}
	}
	if d.Read == 0 && d.Write == 0 && d.Fsync == 0 {
		errs = append(errs, errors.New("disk-delay needs a latency for at least one of read, write and fsync"))
	}
	if d.Distribution != "" && !slices.Contains(Distributions, d.Distribution) {
		errs = append(errs, fmt.Errorf("distribution %q: want %s", d.Distribution, strings.Join(Distributions, ", ")))
	}
	return errors.Join(errs...)
}

// mean is the delay's mean for op.
func (d Delay) mean(op Op) time.Duration {
	switch op {
	case OpRead:
		return d.Read
	case OpWrite:
		return d.Write
	case OpFsync:
		return d.Fsync
	}
	return 0
}

// sample draws one operation's latency.
func (d Delay) sample(op Op) time.Duration {
	m := d.mean(op)
	if m <= 0 {
		return 0
	}
	var v float64
	switch d.Distribution {
	case DistUniform:
		j := d.Jitter
		if j == 0 {
			j = m
		}
		v = float64(m-j) + rand.Float64()*float64(2*j)
	case DistExponential:
		v = rand.ExpFloat64() * float64(m)
	case DistNormal:
		j := d.Jitter
		if j == 0 {
			j = m / 4
		}
		v = float64(m) + rand.NormFloat64()*float64(j)
	default:
		v = float64(m)
	}
	return time.Duration(math.Max(0, math.Min(v, float64(4*MaxLatency))))
}

// ErrorFault is disk-error: EIO from a share of the operations of the
// classes given.
type ErrorFault struct {
	Ops     []Op `json:"ops"`     // of DataOps
	Percent int  `json:"percent"` // 1..100
}

// Validate checks the fault.
func (e ErrorFault) Validate() error {
	if len(e.Ops) == 0 {
		return errors.New("disk-error needs the operations it fails (read, write, fsync)")
	}
	for _, op := range e.Ops {
		if !slices.Contains(DataOps, op) {
			return fmt.Errorf("disk-error: operation %q: want read, write or fsync", op)
		}
	}
	if e.Percent < 1 || e.Percent > 100 {
		return fmt.Errorf("disk-error: percent %d: allowed 1..100", e.Percent)
	}
	return nil
}

// Faults are the disk faults in effect on one node's layer; the zero
// value is none.
type Faults struct {
	Delay *Delay      `json:"delay,omitempty"`
	Error *ErrorFault `json:"error,omitempty"`
	// Full makes every write, fallocate and new entry fail with ENOSPC,
	// and statfs report no free space.
	Full bool `json:"full,omitempty"`
	// Stall blocks every operation that reads or changes data or names
	// until the stall is cleared.
	Stall bool `json:"stall,omitempty"`
}

// Validate checks every fault set.
func (f Faults) Validate() error {
	var errs []error
	if f.Delay != nil {
		errs = append(errs, f.Delay.Validate())
	}
	if f.Error != nil {
		errs = append(errs, f.Error.Validate())
	}
	return errors.Join(errs...)
}

// None reports whether no fault is set.
func (f Faults) None() bool { return f.Delay == nil && f.Error == nil && !f.Full && !f.Stall }

// Fault names as Set and Clear take them: one per kind of disk fault.
const (
	FaultDelay = "delay"
	FaultError = "error"
	FaultFull  = "full"
	FaultStall = "stall"
)

// Merge returns f with the faults set in g replacing f's of the same kind.
func (f Faults) Merge(g Faults) Faults {
	if g.Delay != nil {
		f.Delay = g.Delay
	}
	if g.Error != nil {
		f.Error = g.Error
	}
	f.Full = f.Full || g.Full
	f.Stall = f.Stall || g.Stall
	return f
}

// Without returns f without the faults named (FaultDelay ...); no names
// means all.
func (f Faults) Without(names []string) Faults {
	if len(names) == 0 {
		return Faults{}
	}
	for _, n := range names {
		switch n {
		case FaultDelay:
			f.Delay = nil
		case FaultError:
			f.Error = nil
		case FaultFull:
			f.Full = false
		case FaultStall:
			f.Stall = false
		}
	}
	return f
}

// injector applies the faults in effect before each operation.
type injector struct {
	mu    sync.Mutex
	f     Faults
	stall chan struct{} // closed when a stall ends; nil without one
}

// set replaces the faults in effect.
func (in *injector) set(f Faults) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case f.Stall && in.stall == nil:
		in.stall = make(chan struct{})
	case !f.Stall && in.stall != nil:
		close(in.stall)
		in.stall = nil
	}
	in.f = f
}

// get returns the faults in effect.
func (in *injector) get() (Faults, chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.f, in.stall
}

// before runs before an operation of class op: it blocks while the disk
// stalls, sleeps the delay, and returns the error the operation fails with
// (0: run it). cancel is the request's interrupt.
func (in *injector) before(cancel <-chan struct{}, op Op) syscall.Errno {
	f, stall := in.get()
	if f.None() {
		return 0
	}
	if stall != nil {
		select {
		case <-stall:
		case <-cancel:
			return syscall.EINTR
		}
	}
	if f.Delay != nil {
		if d := f.Delay.sample(op); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-cancel:
				t.Stop()
				return syscall.EINTR
			}
		}
	}
	if f.Error != nil && slices.Contains(f.Error.Ops, op) && rand.IntN(100) < f.Error.Percent {
		return syscall.EIO
	}
	if f.Full && (op == OpWrite || op == opCreate) {
		return syscall.ENOSPC
	}
	return 0
}
