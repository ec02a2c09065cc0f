package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
)

// Clock fault actions. They need the nodes started under libfaketime
// (`cluster up --clock-faults`, target option clock: faketime;
// internal/launcher) and move the wall clock the node's processes read:
// only nodes of C and JVM binaries, whose clock calls go through libc.
const (
	ActionClockOffset Action = "clock-offset" // the clock runs at a fixed offset from the real one
	ActionClockBump   Action = "clock-bump"   // the clock jumps forward or backward by delta
	ActionClockStrobe Action = "clock-strobe" // the clock flips between two offsets every period
	ActionClockReset  Action = "clock-reset"  // the clock is right again (offset 0)
)

// registerClock adds the clock kinds' constructors to r.
func registerClock(r *Registry) {
	for _, a := range []Action{ActionClockOffset, ActionClockBump, ActionClockStrobe} {
		r.m[a] = func() Fault { return &clockFault{action: a} }
	}
	r.m[ActionClockReset] = func() Fault { return &clockResetFault{} }
}

// isClockAction reports whether a moves a node's clock.
func isClockAction(a Action) bool {
	switch a {
	case ActionClockOffset, ActionClockBump, ActionClockStrobe, ActionClockReset:
		return true
	}
	return false
}

// CheckClock refuses, before anything starts, a schedule with clock faults
// on a cluster that cannot take them: a kind whose nodes do not read the
// clock through libc (libcClock false; why says why), or a cluster without
// libfaketime under its nodes (options opts lack clock: faketime). Each
// refused step is named.
func CheckClock(sched Schedule, opts map[string]string, libcClock bool, why error) error {
	var errs []error
	for i, st := range sched {
		if !isClockAction(st.Action) {
			continue
		}
		switch {
		case !libcClock:
			errs = append(errs, fmt.Errorf("schedule step %d (%s): %s cannot act on this target: %w", i+1, st, st.Action, why))
		case !launcher.ClockWanted(opts):
			errs = append(errs, fmt.Errorf("schedule step %d (%s): %s needs the nodes started under libfaketime: set target options %s: %s (`faultbench cluster up --clock-faults`; docs/faults.md)", i+1, st, st.Action, launcher.OptClock, launcher.ClockFaketime))
		}
	}
	return errors.Join(errs...)
}

// clockFileOf returns the libfaketime control file of node name, or why
// the node has none.
func clockFileOf(t *Cluster, name string) (launcher.Node, string, error) {
	c := t.Snapshot()
	if !launcher.ClockWanted(c.Options) {
		return launcher.Node{}, "", fmt.Errorf("clock faults need the nodes started under libfaketime: start the cluster with `faultbench cluster up %s --clock-faults` (scenario: target options %s: %s); kinds whose nodes are Go programs (etcd, txkv) cannot take them", c.Kind, launcher.OptClock, launcher.ClockFaketime)
	}
	n, err := c.Node(name)
	if err != nil {
		return launcher.Node{}, "", err
	}
	if n.Host != "" {
		return *n, "", fmt.Errorf("%s runs on host %s: clock faults act on nodes of this machine only", name, n.Host)
	}
	if n.LogFile == "" {
		return *n, "", fmt.Errorf("%s has no log file, so no clock control file next to it", name)
	}
	return *n, launcher.ClockFile(n.LogFile), nil
}

// clockFile returns the libfaketime control file of node name, after
// checking that the node's running process reads it.
func clockFile(ctx context.Context, t *Cluster, name string) (string, error) {
	if _, _, err := clockFileOf(t, name); err != nil {
		return "", err
	}
	n, err := ownedProcess(ctx, t, name)
	if err != nil {
		return "", err
	}
	f := launcher.ClockFile(n.LogFile)
	// the environment is not a witness: Redis and PostgreSQL write their
	// process titles over it; the mapped libraries are
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", n.PID))
	if err != nil {
		return "", fmt.Errorf("%s: reading the memory map of pid %d: %w", name, n.PID, err)
	}
	if !bytes.Contains(maps, []byte("/libfaketime")) {
		return "", fmt.Errorf("%s (pid %d) was not started under libfaketime (started before clock faults were asked for?): restart it", name, n.PID)
	}
	if _, err := os.Stat(f); err != nil {
		return "", fmt.Errorf("%s: its clock control file: %w", name, err)
	}
	return f, nil
}

// readOffset reads the offset in control file f (libfaketime's "+10.5"
// seconds; a missing or empty file is 0).
func readOffset(f string) (time.Duration, error) {
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading clock control file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("clock control file %s holds %q: not an offset faultbench wrote", f, s)
	}
	return time.Duration(math.Round(v * 1e9)), nil
}

// offsetText is d in libfaketime's relative syntax: seconds with a sign.
func offsetText(d time.Duration) string { return fmt.Sprintf("%+.6f", d.Seconds()) }

// updateOffset sets the offset in control file f to what fn makes of the
// current one, under a lock of the file (a strobe and a clock-reset do not
// interleave); fn returning false leaves the file as it is.
func updateOffset(f string, fn func(cur time.Duration) (time.Duration, bool, error)) error {
	lf, err := os.OpenFile(f+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("locking clock control file: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking clock control file: %w", err)
	}
	cur, err := readOffset(f)
	if err != nil {
		return err
	}
	d, write, err := fn(cur)
	if err != nil || !write {
		return err
	}
	return launcher.WriteClockOffset(f, offsetText(d))
}

// writeOffset sets the offset in control file f.
func writeOffset(f string, d time.Duration) error {
	return updateOffset(f, func(time.Duration) (time.Duration, bool, error) { return d, true, nil })
}

// errStrobeOver ends a strobe whose clock someone else set.
var errStrobeOver = errors.New("the clock was set by another fault")

// clockFault is clock-offset, clock-bump and clock-strobe. It keeps the
// offsets it set to check them; a strobe runs in a goroutine of this
// process until Restore, Cleanup or its duration.
type clockFault struct {
	action Action
	vals   kind.Values

	mu     sync.Mutex
	files  map[string]string        // node -> control file
	want   map[string]time.Duration // node -> the offset set (strobe: the first)
	stop   context.CancelFunc       // strobe
	done   chan struct{}            // strobe: closed when it ended
	flips  int                      // strobe: flips made
	strobe error                    // strobe: the error that ended it
}

func (f *clockFault) Name() Action { return f.action }

// ConfigureStep implements StepConfigurer.
func (f *clockFault) ConfigureStep(st Step, _ string) error {
	f.vals = st.Values
	return nil
}

func (f *clockFault) Prepare(ctx context.Context, t *Cluster, nodes []string) error {
	f.files = map[string]string{}
	return forEach(nodes, func(name string) error {
		file, err := clockFile(ctx, t, name)
		if err == nil {
			f.mu.Lock()
			f.files[name] = file
			f.mu.Unlock()
		}
		return err
	})
}

func (f *clockFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	f.want = map[string]time.Duration{}
	err := forEach(nodes, func(name string) error {
		return updateOffset(f.files[name], func(cur time.Duration) (time.Duration, bool, error) {
			var d time.Duration
			switch f.action {
			case ActionClockOffset:
				d = f.vals.Duration("offset")
				if to := f.vals.String("to"); to != "" {
					at, err := kind.ParseClockTime(to)
					if err != nil {
						return 0, false, err
					}
					d = time.Until(at)
				}
			case ActionClockBump, ActionClockStrobe: // a strobe flips back to cur
				d = cur + f.vals.Duration("delta")
			}
			f.mu.Lock()
			f.want[name] = d
			f.mu.Unlock()
			return d, true, nil
		})
	})
	if err != nil || f.action != ActionClockStrobe {
		return err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d := f.vals.Duration("duration"); d > 0 {
		sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), d)
	}
	f.stop, f.done = cancel, make(chan struct{})
	base := map[string]time.Duration{}
	for n, d := range f.want {
		base[n] = d - f.vals.Duration("delta")
	}
	go f.runStrobe(sctx, base)
	return nil
}

// runStrobe flips the nodes' clocks between base and base+delta every
// period until ctx ends, then leaves them at base. A node whose clock
// another fault set meanwhile (clock-reset, restore-all) leaves the
// strobe, which ends when no node is left.
func (f *clockFault) runStrobe(ctx context.Context, base map[string]time.Duration) {
	defer close(f.done)
	delta, period := f.vals.Duration("delta"), f.vals.Duration("period")
	tk := time.NewTicker(period)
	defer tk.Stop()
	up := true
	// set moves the strobing nodes' clocks to base (+delta when up)
	set := func(up bool) error {
		var errs []error
		for n, b := range base {
			last, next := b, b
			if up {
				next += delta
			} else {
				last += delta
			}
			err := updateOffset(f.files[n], func(cur time.Duration) (time.Duration, bool, error) {
				if (cur - last).Abs() > time.Microsecond {
					return 0, false, errStrobeOver
				}
				return next, true, nil
			})
			if errors.Is(err, errStrobeOver) {
				delete(base, n)
				continue
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	for len(base) > 0 {
		select {
		case <-ctx.Done():
			if up {
				f.record(set(false))
			}
			return
		case <-tk.C:
		}
		up = !up
		err := set(up)
		f.record(err)
		if err != nil {
			return
		}
	}
}

// record counts a flip of the strobe and keeps its error.
func (f *clockFault) record(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flips++
	if err != nil {
		f.strobe = err
	}
}

func (f *clockFault) WaitEffective(ctx context.Context, t *Cluster, nodes []string) error {
	if f.action == ActionClockStrobe {
		return nil // the first offset was written; the flips are the strobe's
	}
	return forEach(nodes, func(name string) error {
		got, err := readOffset(f.files[name])
		if err == nil && (got-f.want[name]).Abs() > time.Microsecond {
			err = fmt.Errorf("%s: the clock control file holds offset %v, not %v", name, got, f.want[name])
		}
		return err
	})
}

// endStrobe stops a running strobe and waits for it to leave the clocks at
// their base offset.
func (f *clockFault) endStrobe(ctx context.Context) error {
	if f.stop == nil {
		return nil
	}
	f.stop()
	select {
	case <-f.done:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the clock strobe to end: %w", ctx.Err())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.strobe
}

func (f *clockFault) Restore(ctx context.Context, t *Cluster, nodes []string) error {
	serr := f.endStrobe(ctx)
	return errors.Join(serr, resetClocks(t, nodes))
}

func (f *clockFault) WaitRestored(ctx context.Context, t *Cluster, nodes []string) error {
	return waitClocksReset(t, nodes)
}

// Cleanup leaves the clocks as they are: an offset stays until
// clock-reset (or restore-all after a run); a strobe goes on until then,
// or until its duration ends.
func (f *clockFault) Cleanup(context.Context, *Cluster, []string) error { return nil }

// applyHolder is implemented by faults that act from inside the process
// that injected them (clock-strobe): `faultbench fault` (ApplyStep) checks
// that the fault will end, and returns once it did.
type applyHolder interface {
	checkApply() error
	holdApply(ctx context.Context) error
}

// checkApply implements applyHolder: a strobe from `faultbench fault` runs
// inside the command, so it needs an end.
func (f *clockFault) checkApply() error {
	if f.action == ActionClockStrobe && f.vals.Duration("duration") == 0 {
		return errors.New("clock-strobe from `faultbench fault` strobes while the command runs: give --param duration=DURATION (e.g. 30s)")
	}
	return nil
}

// holdApply implements applyHolder: the command returns when the strobe
// ended.
func (f *clockFault) holdApply(ctx context.Context) error {
	if f.action != ActionClockStrobe || f.done == nil {
		return nil
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return f.endStrobe(context.WithoutCancel(ctx))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.strobe
}

// resetClocks sets the nodes' clock offsets to 0 (a node that is not
// running starts again with it); a strobe on them ends.
func resetClocks(t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		_, file, err := clockFileOf(t, name)
		if err != nil {
			return err
		}
		return writeOffset(file, 0)
	})
}

// waitClocksReset checks that the nodes' control files hold offset 0.
func waitClocksReset(t *Cluster, nodes []string) error {
	return forEach(nodes, func(name string) error {
		_, file, err := clockFileOf(t, name)
		if err != nil {
			return err
		}
		got, err := readOffset(file)
		if err == nil && got != 0 {
			err = fmt.Errorf("%s: the clock is still off by %v", name, got)
		}
		return err
	})
}

// clockResetFault sets the nodes' clocks right (a repair); a strobe on
// them sees its offset overwritten and leaves them.
type clockResetFault struct {
	noLifecycle
	noUndo
}

func (*clockResetFault) Name() Action { return ActionClockReset }

// Repairs implements Repairer.
func (*clockResetFault) Repairs() bool { return true }

func (*clockResetFault) Inject(_ context.Context, t *Cluster, nodes []string) error {
	return resetClocks(t, nodes)
}

func (*clockResetFault) WaitEffective(_ context.Context, t *Cluster, nodes []string) error {
	return waitClocksReset(t, nodes)
}

// resetAllClocks sets right the clocks left off on any node of a cluster
// started for clock faults (RestoreAll), writing restore events when there
// were some.
func resetAllClocks(ctx context.Context, t *Cluster, label string) error {
	c := t.Snapshot()
	if !launcher.ClockWanted(c.Options) {
		return nil
	}
	var off []string
	for _, n := range c.Nodes {
		if n.Host != "" || n.LogFile == "" {
			continue
		}
		if d, err := readOffset(launcher.ClockFile(n.LogFile)); err == nil && d != 0 {
			off = append(off, n.Name)
		}
	}
	if len(off) == 0 {
		return nil
	}
	sortNames(off)
	_, err := execute(ctx, t, &clockResetFault{}, builtinKind(ActionClockReset), off, "clock-reset "+joinNodes(off), label)
	return err
}
