package postgresha

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/procstat"
)

// rejoinStall is how long a data node that rejoins the cluster may show no
// progress at all (no change of its state at the monitor, of the WAL
// position it reports, of its base backup's size or of its postmaster)
// before the wait for it gives up. A base backup under load takes minutes
// on a small machine, but it keeps growing; a node that shows nothing new
// for this long is stuck.
const rejoinStall = 60 * time.Second

// rejoinPoll is how often the wait for a rejoining node looks at it.
const rejoinPoll = 250 * time.Millisecond

// progressReport is one look at something the caller waits for: whether it
// is done, a mark that changes whenever it makes progress, and what it is
// at (for the error when the wait fails).
type progressReport struct {
	done bool
	mark string
	why  string
}

// errStalled is the error of followProgress when the mark stopped changing.
var errStalled = errors.New("no progress")

// followProgress calls probe every poll until it reports done. It fails
// when ctx ends, or when the probe's mark has not changed for stall: the
// wait lasts as long as the thing waited for keeps moving, up to ctx's
// deadline. The error says what the probe reported last.
func followProgress(ctx context.Context, poll, stall time.Duration, probe func(context.Context) progressReport) error {
	var last progressReport
	lastChange := time.Now()
	for first := true; ; first = false {
		r := probe(ctx)
		if r.done {
			return nil
		}
		if first || r.mark != last.mark {
			lastChange = time.Now()
		}
		last = r
		if since := time.Since(lastChange); since >= stall {
			return fmt.Errorf("%w for %s: %s", errStalled, since.Round(time.Second), last.why)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", last.why, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// standbyOrPrimary reports whether a node whose reported state equals its
// goal state runs postgres for good in that state: as a standby that
// streams from the primary (catchingup, secondary) or as the primary. In
// the states before (demoted, draining, report_lsn, fast_forward, ...) the
// keeper may still stop postgres to rewind it or to replace its data by a
// base backup.
func standbyOrPrimary(goal string) bool {
	switch goal {
	case "catchingup", "secondary", "single", "wait_primary", "primary":
		return true
	}
	return false
}

// rejoinProbe looks once at data node name (nK) on its way back into the
// cluster after its keeper was started: done when its postmaster runs and
// the monitor reports it in its goal state as a standby or the primary (or,
// without an answering monitor, when a postmaster runs). Progress is any
// change of the node's states, reported WAL position, postmaster pid or
// the size of its base backup in progress (DIR/nK/backup, where pg_autoctl
// has pg_basebackup write before it swaps the copy in).
func rejoinProbe(c *launcher.Cluster, cfg config, name string) func(context.Context) progressReport {
	lastNudge := time.Time{}
	return func(ctx context.Context) progressReport {
		n, err := c.Node(name)
		if err != nil {
			return progressReport{why: err.Error()}
		}
		pid := findPostmaster(cfg, filepath.Join(n.DataDir, "pgdata"))
		backup := dirSize(filepath.Join(n.DataDir, "backup"))
		pm := "not running"
		if pid > 0 {
			pm = "pid " + strconv.Itoa(pid)
		}
		var states map[string]nodeState
		if mon, err := c.Node(MonitorName); err == nil && mon.Addr != "" && !mon.Down {
			states, err = monitorStates(ctx, mon.Addr)
			if err != nil {
				states = nil
			}
		}
		if states == nil {
			return progressReport{done: pid > 0, mark: fmt.Sprintf("%d %d", pid, backup),
				why: fmt.Sprintf("%s: monitor not answering, postmaster %s, base backup %d bytes", name, pm, backup)}
		}
		st, ok := states[name]
		if !ok {
			return progressReport{mark: fmt.Sprintf("%d %d", pid, backup),
				why: fmt.Sprintf("%s: not registered at the monitor", name)}
		}
		if pid > 0 && st.reported == st.goal && standbyOrPrimary(st.goal) {
			return progressReport{done: true}
		}
		// pg_basebackup waits for a checkpoint on the primary: ask for one
		if time.Since(lastNudge) > 3*time.Second {
			lastNudge = time.Now()
			for _, o := range states {
				if o.role() == launcher.RolePrimary && o.addr != st.addr {
					_ = execSQL(ctx, o.addr, Database, "CHECKPOINT")
				}
			}
		}
		return progressReport{
			mark: fmt.Sprintf("%s %s %s %d %d", st.reported, st.goal, st.lsn, pid, backup),
			why: fmt.Sprintf("%s: %s->%s at WAL %s, postmaster %s, base backup %d bytes",
				name, st.reported, st.goal, st.lsn, pm, backup),
		}
	}
}

// waitRejoined waits until data node name runs postgres as a standby or the
// primary for good (rejoinProbe), following its progress (followProgress
// with rejoinStall), and returns the postmaster's pid.
func waitRejoined(ctx context.Context, c *launcher.Cluster, cfg config, name string) (int, error) {
	if err := followProgress(ctx, rejoinPoll, rejoinStall, rejoinProbe(c, cfg, name)); err != nil {
		return 0, fmt.Errorf("waiting for %s to rejoin: %w", name, err)
	}
	n, err := c.Node(name)
	if err != nil {
		return 0, err
	}
	pid := findPostmaster(cfg, filepath.Join(n.DataDir, "pgdata"))
	if pid <= 0 {
		return 0, fmt.Errorf("waiting for %s to rejoin: its postmaster exited", name)
	}
	return pid, nil
}

// dirSize is the total size of the regular files below dir (0 when it does
// not exist).
func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // files come and go while pg_basebackup writes
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// findKeeper returns the host pid of a running pg_autoctl service of
// pgdata started by faultbench (`pg_autoctl run --pgdata pgdata`, the
// child of its unshare), or 0. Starting node nK when its keeper is down
// starts the keeper too, and the caller may record only nK: a later start
// of nK-keeper then finds this process instead of starting a second
// keeper on the same data directory.
func findKeeper(cfg config, pgdata string) int {
	tab, err := procstat.Scan(procstat.Root)
	if err != nil {
		return 0
	}
	want := runArgv(cfg, pgdata)
	for _, pid := range slices.Sorted(maps.Keys(tab)) {
		if st := tab[pid]; st.Live() && isKeeperOf(cmdline(pid), cmdline(st.PPID), want) {
			return pid
		}
	}
	return 0
}

// isKeeperOf reports whether a process with command line args, whose
// parent has command line parent, is the keeper whose command is want
// (runArgv): the pg_autoctl that unshare started, not one of the
// sub-processes it forks (which rename themselves).
func isKeeperOf(args, parent, want []string) bool {
	if len(args) != len(want) || len(parent) == 0 || filepath.Base(parent[0]) != "unshare" {
		return false
	}
	for i := range want {
		a := args[i]
		if i == 3 { // the data directory
			a = filepath.Clean(a)
		}
		if a != want[i] {
			return false
		}
	}
	return true
}

// cmdline returns the command line of pid, or nil.
func cmdline(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
