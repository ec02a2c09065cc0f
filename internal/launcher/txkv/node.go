package txkv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/txkv/clientproc"
	"github.com/faultbench/faultbench/internal/txkv/coord"
	"github.com/faultbench/faultbench/internal/txkv/server"
	"github.com/faultbench/faultbench/internal/txkv/wire"
)

// coordFlags are the flags of `faultbench node txkv-coordinator`.
type coordFlags struct {
	addr, dir, storage string
	servers, regions   int
	persistence        string
	heartbeat          time.Duration
	sessionTimeout     time.Duration
	walSync            time.Duration
	memstore           int64
}

func parseCoordFlags(args []string, out io.Writer) (*coordFlags, error) {
	f := &coordFlags{}
	fs := flag.NewFlagSet("faultbench node txkv-coordinator", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.addr, "addr", "", "address to serve on, e.g. 127.0.0.1:7000 (required)")
	fs.StringVar(&f.dir, "dir", "", "directory of the recovery log (required)")
	fs.StringVar(&f.storage, "storage", "", "shared storage directory of WALs and region files (required)")
	fs.IntVar(&f.servers, "servers", 2, "region servers to wait for before assigning regions")
	fs.IntVar(&f.regions, "regions", 8, "number of regions (key ranges)")
	fs.StringVar(&f.persistence, "persistence", string(wire.Async), "async (the paper's) or sync persistence")
	fs.DurationVar(&f.heartbeat, "heartbeat", time.Second, "client and server heartbeat interval")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", 3*time.Second, "missed-heartbeat time after which a client or server is declared failed")
	fs.DurationVar(&f.walSync, "wal-sync-interval", time.Second, "how often servers sync their WAL in async persistence")
	fs.Int64Var(&f.memstore, "memstore-flush-size", 16<<20, "memstore size in bytes at which a region is flushed to a region file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	for _, req := range []struct{ flag, val string }{{"addr", f.addr}, {"dir", f.dir}, {"storage", f.storage}} {
		if req.val == "" {
			return nil, fmt.Errorf("--%s is required", req.flag)
		}
	}
	return f, nil
}

func (f *coordFlags) cluster() wire.Config {
	return wire.Config{Persistence: wire.Persistence(f.persistence), Heartbeat: f.heartbeat, SessionTimeout: f.sessionTimeout,
		WALSyncInterval: f.walSync, MemstoreFlushBytes: f.memstore}
}

// RunCoordinator is the body of the hidden command `faultbench node
// txkv-coordinator ARGS...`: it runs the txkv coordinator (transaction
// manager, recovery manager, region master) in this process until ctx is
// cancelled. It logs to stderr, which the launcher points at the node's
// log file.
func RunCoordinator(ctx context.Context, args []string) error {
	f, err := parseCoordFlags(args, os.Stderr)
	if err != nil {
		return fmt.Errorf("node txkv-coordinator: %w", err)
	}
	cl := f.cluster()
	if err := cl.Validate(); err != nil {
		return fmt.Errorf("node txkv-coordinator: %w", err)
	}
	l, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("node txkv-coordinator: %w", err)
	}
	lg := log.New(os.Stderr, "txkv-coordinator: ", log.LstdFlags|log.Lmicroseconds|log.LUTC)
	c, err := coord.New(coord.Config{Listener: l, Dir: f.dir, Storage: f.storage, Servers: f.servers, Regions: f.regions, Cluster: cl, Logger: lg})
	if err != nil {
		l.Close()
		return fmt.Errorf("node txkv-coordinator: %w", err)
	}
	lg.Printf("starting: pid %d", os.Getpid())
	return c.Run(ctx)
}

// serverFlags are the flags of `faultbench node txkv-server`.
type serverFlags struct {
	name, addr, coordinator, storage string
}

func parseServerFlags(args []string, out io.Writer) (*serverFlags, error) {
	f := &serverFlags{}
	fs := flag.NewFlagSet("faultbench node txkv-server", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.name, "name", "", "server name, e.g. s1 (required)")
	fs.StringVar(&f.addr, "addr", "", "address to serve on, e.g. 127.0.0.1:7001 (required)")
	fs.StringVar(&f.coordinator, "coordinator", "", "the coordinator's address (required)")
	fs.StringVar(&f.storage, "storage", "", "shared storage directory (required)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	for _, req := range []struct{ flag, val string }{{"name", f.name}, {"addr", f.addr}, {"coordinator", f.coordinator}, {"storage", f.storage}} {
		if req.val == "" {
			return nil, fmt.Errorf("--%s is required", req.flag)
		}
	}
	return f, nil
}

// RunServer is the body of the hidden command `faultbench node txkv-server
// ARGS...`: it runs one region server until ctx is cancelled (then it
// shuts down cleanly and unregisters) or the recovery manager declares it
// failed (an error). Configuration comes from the coordinator.
func RunServer(ctx context.Context, args []string) error {
	f, err := parseServerFlags(args, os.Stderr)
	if err != nil {
		return fmt.Errorf("node txkv-server: %w", err)
	}
	l, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("node txkv-server %s: %w", f.name, err)
	}
	lg := log.New(os.Stderr, "txkv-server "+f.name+": ", log.LstdFlags|log.Lmicroseconds|log.LUTC)
	s, err := server.New(server.Config{Name: f.name, Listener: l, Coordinator: f.coordinator, Storage: f.storage, Logger: lg})
	if err != nil {
		l.Close()
		return fmt.Errorf("node txkv-server %s: %w", f.name, err)
	}
	lg.Printf("starting: pid %d", os.Getpid())
	err = s.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// RunClient is the body of the hidden command `faultbench node txkv-client
// --coordinator ADDR --name NAME [--skip-flush]`: a txkv client library
// instance in a process of its own, which the txkv driver starts with
// txkv.client-process=true and drives over 127.0.0.1 (internal/txkv/clientproc),
// so that the crash-client fault can kill it with SIGKILL. It exits when
// its standard input ends.
func RunClient(ctx context.Context, args []string) error {
	return clientproc.RunNode(ctx, args)
}
