package etcd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// nodeFlags are the flags of `faultbench node etcd`.
type nodeFlags struct {
	name           string
	dataDir        string
	clientURL      string
	peerURL        string
	initialCluster string
	clusterState   string
	clusterToken   string
	heartbeatMs    uint
	electionMs     uint
	snapshotCount  uint64
	quotaBytes     int64
	autoCompaction time.Duration
	logLevel       string
	readyTimeout   time.Duration
	unsafeNoFsync  bool
}

func parseNodeFlags(args []string, out io.Writer) (*nodeFlags, error) {
	f := &nodeFlags{}
	fs := flag.NewFlagSet("faultbench node etcd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.name, "name", "", "member name (required), e.g. n1")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory (required)")
	fs.StringVar(&f.clientURL, "client-url", "", "URL to listen on and advertise for clients, e.g. http://127.0.0.1:2379 (required)")
	fs.StringVar(&f.peerURL, "peer-url", "", "URL to listen on and advertise for peers, e.g. http://127.0.0.1:2380 (required)")
	fs.StringVar(&f.initialCluster, "initial-cluster", "", "name=peerURL,... of every member (required)")
	fs.StringVar(&f.clusterState, "initial-cluster-state", "new", "new (bootstrap) or existing (join); ignored when the data dir already holds a member")
	fs.StringVar(&f.clusterToken, "initial-cluster-token", "faultbench", "token that keeps separate clusters apart")
	fs.UintVar(&f.heartbeatMs, "heartbeat-interval", 100, "raft heartbeat interval in milliseconds")
	fs.UintVar(&f.electionMs, "election-timeout", 1000, "raft election timeout in milliseconds")
	fs.Uint64Var(&f.snapshotCount, "snapshot-count", 0, "committed entries between snapshots (0: etcd's default)")
	fs.Int64Var(&f.quotaBytes, "quota-bytes", 0, "backend quota in bytes (0: etcd's default, 2 GiB)")
	fs.DurationVar(&f.autoCompaction, "auto-compaction", 0, "periodic compaction retention (0: no automatic compaction)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "etcd log level: debug, info, warn, error")
	fs.BoolVar(&f.unsafeNoFsync, "unsafe-no-fsync", false, "skip every fsync (etcd's --unsafe-no-fsync): acknowledged writes do not survive a power loss")
	fs.DurationVar(&f.readyTimeout, "ready-timeout", 0, "give up if the member is not serving after this long (0: wait as long as it takes)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	for _, req := range []struct{ flag, val string }{
		{"name", f.name}, {"data-dir", f.dataDir}, {"client-url", f.clientURL},
		{"peer-url", f.peerURL}, {"initial-cluster", f.initialCluster},
	} {
		if req.val == "" {
			return nil, fmt.Errorf("--%s is required", req.flag)
		}
	}
	if f.clusterState != embed.ClusterStateFlagNew && f.clusterState != embed.ClusterStateFlagExisting {
		return nil, fmt.Errorf("--initial-cluster-state must be new or existing, got %q", f.clusterState)
	}
	switch f.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", f.logLevel)
	}
	return f, nil
}

func (f *nodeFlags) config() (*embed.Config, error) {
	cu, err := url.Parse(f.clientURL)
	if err != nil {
		return nil, fmt.Errorf("--client-url: %w", err)
	}
	pu, err := url.Parse(f.peerURL)
	if err != nil {
		return nil, fmt.Errorf("--peer-url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = f.name
	cfg.Dir = f.dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = f.initialCluster
	cfg.ClusterState = f.clusterState
	cfg.InitialClusterToken = f.clusterToken
	cfg.TickMs = f.heartbeatMs
	cfg.ElectionMs = f.electionMs
	if f.snapshotCount > 0 {
		cfg.SnapshotCount = f.snapshotCount
	}
	cfg.QuotaBackendBytes = f.quotaBytes
	cfg.UnsafeNoFsync = f.unsafeNoFsync
	if f.autoCompaction > 0 {
		cfg.AutoCompactionMode = "periodic"
		cfg.AutoCompactionRetention = f.autoCompaction.String()
	}
	// Logs go to stderr, which the launcher points at the node's log file.
	cfg.Logger = "zap"
	cfg.LogLevel = f.logLevel
	cfg.LogFormat = "console"
	cfg.LogOutputs = []string{"stderr"}
	// faultbench measures latency itself; etcd's per-request "took too long"
	// warnings (100 ms / 300 ms by default) would fill the log of a member
	// driven to capacity, so only requests slower than a second are logged.
	cfg.WarningApplyDuration = time.Second
	cfg.WarningUnaryRequestDuration = time.Second
	// Nothing faultbench does needs the HTTP/JSON gateway; it costs goroutines and a loopback dial.
	cfg.EnableGRPCGateway = false
	return cfg, nil
}

// RunNode is the body of the hidden command `faultbench node etcd ARGS...`:
// it runs one etcd member in this process (go.etcd.io/etcd/server/v3/embed)
// until ctx is cancelled, then stops it cleanly. The caller cancels ctx on
// SIGTERM and SIGINT. etcd logs to stderr (the launcher points stderr at the
// node's log file), at warn level unless --log-level says otherwise.
//
// RunNode returns an error if the flags are wrong, if etcd cannot start, if
// the member is not serving within --ready-timeout (when set), or if etcd
// stops on its own (for example after being removed from the cluster).
func RunNode(ctx context.Context, args []string) error {
	f, err := parseNodeFlags(args, os.Stderr)
	if err != nil {
		return fmt.Errorf("node etcd: %w", err)
	}
	cfg, err := f.config()
	if err != nil {
		return fmt.Errorf("node etcd: %w", err)
	}
	lg := log.New(os.Stderr, "faultbench node etcd "+f.name+": ", log.LstdFlags|log.Lmicroseconds|log.LUTC)
	lg.Printf("starting: pid %d, data %s, client %s, peer %s, state %s", os.Getpid(), f.dataDir, f.clientURL, f.peerURL, f.clusterState)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("node etcd %s: starting etcd: %w", f.name, err)
	}
	start := time.Now()
	stop := func(why string, ready bool) {
		lg.Printf("stopping (%s)", why)
		if !ready {
			// Close waits for the client servers, which only exit once the
			// server stops; a member that never got ready must stop first.
			e.Server.HardStop()
		}
		e.Close()
		lg.Printf("stopped after %v", time.Since(start).Round(time.Millisecond))
	}

	var readyTimer <-chan time.Time
	if f.readyTimeout > 0 {
		t := time.NewTimer(f.readyTimeout)
		defer t.Stop()
		readyTimer = t.C
	}
	select {
	case <-e.Server.ReadyNotify():
		lg.Printf("member %s serving clients after %v", e.Server.MemberID(), time.Since(start).Round(time.Millisecond))
	case <-ctx.Done():
		stop("signal before ready", false)
		return nil
	case err := <-e.Err():
		stop("error before ready", false)
		return fmt.Errorf("node etcd %s: %w", f.name, err)
	case <-e.Server.StopNotify():
		stop("server stopped before ready", false)
		return fmt.Errorf("node etcd %s: etcd stopped before it was ready", f.name)
	case <-readyTimer:
		stop("not ready in time", false)
		return fmt.Errorf("node etcd %s: not serving after %v (waiting to publish itself to the cluster, which needs a quorum of members)", f.name, f.readyTimeout)
	}

	select {
	case <-ctx.Done():
		stop("signal", true)
		return nil
	case err := <-e.Err():
		stop("error", true)
		if err == nil {
			err = errors.New("etcd closed its error channel")
		}
		return fmt.Errorf("node etcd %s: %w", f.name, err)
	case <-e.Server.StopNotify():
		stop("server stopped on its own", true)
		return fmt.Errorf("node etcd %s: etcd server stopped on its own (removed from the cluster?)", f.name)
	}
}
