package launcher

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// Restart is how StartRecorded brings a stopped node back.
type Restart struct {
	// What names the node in messages, e.g. "etcd member n2".
	What string
	// Timeout bounds the wait for Ready.
	Timeout time.Duration
	// Grace is how long the process gets to exit after SIGTERM when it did
	// not become ready.
	Grace time.Duration
	// Ready waits until the started node serves; Serves says what that
	// means in the error ("serve clients").
	Ready  func(ctx context.Context, n *Node) error
	Serves string
}

// StartRecorded starts node n again with its recorded command line (same
// data directory and addresses) and waits until r.Ready says it serves. If
// it does not within r.Timeout, the process is stopped again, n is marked
// down, and the error carries the node's log tail. Launchers' StartNode
// methods share this skeleton.
func (e *Env) StartRecorded(ctx context.Context, c *Cluster, n *Node, r Restart) error {
	if c.RunsNodeOn(ctx, n) {
		return fmt.Errorf("%s is already running (pid %d)", r.What, n.PID)
	}
	if len(n.Argv) == 0 {
		return fmt.Errorf("%s has no recorded command line", r.What)
	}
	pid, err := e.SpawnNode(ctx, c, n)
	if err != nil {
		return fmt.Errorf("starting %s: %w", r.What, err)
	}
	n.PID, n.Down, n.Role = pid, false, RoleUnknown
	wctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	err = r.Ready(wctx, n)
	if err == nil {
		return nil
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), r.Grace+5*time.Second)
	defer scancel()
	_ = TerminateOn(sctx, c.ProcsOf(n), pid, r.Grace)
	n.PID, n.Down = 0, true
	return fmt.Errorf("%s (pid %d) did not %s within %v: %w\n%s", r.What, pid, r.Serves, r.Timeout, err, c.NodeLogTail(sctx, n, 15))
}

// LogTail returns the last lines (at most maxLines, from the last 8 KiB) of
// a node's log file, indented, for error messages.
func LogTail(path string, maxLines int) string {
	const maxBytes = 8 << 10
	f, err := os.Open(path)
	if err != nil {
		return "  (no log: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "  (no log: " + err.Error() + ")"
	}
	off := max(st.Size()-maxBytes, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return "  (log unreadable: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line is probably cut
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "  (the log " + path + " is empty)"
	}
	return "  last lines of " + path + ":\n    " + strings.Join(lines, "\n    ")
}
