package distrib

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/faultbench/faultbench/internal/analyze"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/launcher"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/remote"
	"github.com/faultbench/faultbench/internal/report"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
	"github.com/faultbench/faultbench/internal/workload"
)

// WorkerCommand is the hidden subcommand the coordinator starts on every
// client host.
const WorkerCommand = "worker"

// Event kinds of a distributed run (events.jsonl).
const (
	// EventWorkerDied: a worker's session ended without its end of phase;
	// node: the host; detail: why and the share that is missing.
	EventWorkerDied = "worker-died"
)

// Coordinator timeouts.
const (
	// SetupTimeout bounds connecting, installing the binary and the
	// worker's driver set-up, per host.
	SetupTimeout = 3 * time.Minute
	// DefaultStartDelay is how far ahead of the moment every worker is
	// ready the common start time is set.
	DefaultStartDelay = time.Second
	// EndGrace is how long after the expected end of a bounded phase the
	// coordinator waits for the workers before it ends their sessions.
	EndGrace = 2 * time.Minute
	// pings per worker for the clock offset
	pings = 8
)

// Spec is one load or run phase and where its load runs. The phase itself
// (the target, its properties, the run directory, the output) is
// experiment's spec, embedded with its defaults; the fields here say where
// the load runs. RunPhase picks in-process, local processes, SSH or a
// listener from them; Run needs one of the last three.
type Spec struct {
	experiment.Spec
	// Inventory holds the client hosts the phase runs from over SSH; when
	// nil, RunPhase loads it from ClientsFile (`--clients FILE`) if set.
	Inventory   *remote.Inventory
	ClientsFile string
	// AcceptNewHostKeys adds unknown host keys to known_hosts.
	AcceptNewHostKeys bool
	// Binary is the local faultbench executable installed on the hosts, or
	// started as the client processes.
	Binary string
	// StartDelay: see DefaultStartDelay; zero means the default.
	StartDelay time.Duration
	// Listener, if set, replaces SSH: the coordinator waits (up to
	// SetupTimeout) for Workers workers to connect to it
	// (`faultbench worker --connect`), e.g. the pods of a Kubernetes Job.
	// RunPhase opens it at Listen (`--listen host:port`) when Listen is set.
	Listener net.Listener
	Listen   string
	Workers  int
	// Processes, if set, replaces SSH: the run's client groups (the
	// property clients=N, with clients.process=true) run as N local
	// `faultbench worker` processes of Binary, started without a shell and
	// killed with the coordinator (docs/metrics.md, per-client spread).
	// RunPhase sets it from the properties.
	Processes bool
}

// clientHosts returns the client hosts: the inventory's, or placeholders
// named after the connections a listener will accept, or after the
// processes local runs (procs of them).
func (s *Spec) clientHosts(procs int) []remote.Host {
	switch {
	case s.Processes:
		out := make([]remote.Host, procs)
		for i := range out {
			out[i] = remote.Host{Name: ProcessName(i)}
		}
		return out
	case s.Listener == nil:
		return s.Inventory.WithRole(remote.RoleClient)
	}
	out := make([]remote.Host, s.Workers)
	for i := range out {
		out[i] = remote.Host{Name: "worker" + strconv.Itoa(i)}
	}
	return out
}

// Validate fills defaults (experiment.Spec's) and checks the spec for Run:
// exactly one place the load runs.
func (s *Spec) Validate() error {
	if err := s.Spec.Validate(); err != nil {
		return err
	}
	switch {
	case s.Processes:
		if s.Listener != nil || s.Inventory != nil {
			return errors.New("client processes and client hosts (an inventory or a listener) both given: choose one")
		}
		if s.Binary == "" {
			return errors.New("no faultbench binary to start the client processes from")
		}
	case s.Listener != nil:
		if s.Workers < 1 {
			return errors.New("a listener needs the number of workers to wait for")
		}
	case s.Inventory == nil:
		return errors.New("no inventory (--clients hosts.yaml)")
	case len(s.Inventory.WithRole(remote.RoleClient)) == 0:
		return fmt.Errorf("%s: no host has role client", s.Inventory.Path)
	case s.Binary == "":
		return errors.New("no faultbench binary to install on the client hosts")
	}
	if s.StartDelay <= 0 {
		s.StartDelay = DefaultStartDelay
	}
	return nil
}

// WorkerResult is one worker's part of the run (workers.csv).
type WorkerResult struct {
	Client             int     `json:"client"`
	Host               string  `json:"host"`
	Address            string  `json:"address"`
	Threads            int     `json:"threads"`
	RateOps            float64 `json:"target_ops"`
	InsertStart        int64   `json:"insertstart"`
	InsertCount        int64   `json:"insertcount"`
	ClockOffsetMs      float64 `json:"clock_offset_ms"`
	ClockUncertaintyMs float64 `json:"clock_uncertainty_ms"`
	// Status: done, died (its session ended without an end of phase) or
	// failed (it reported an error).
	Status     string  `json:"status"`
	Detail     string  `json:"detail,omitempty"`
	Windows    int     `json:"windows"`    // windows received
	Operations int64   `json:"operations"` // operations in the windows received (all phases, every outcome)
	OK         int64   `json:"ok"`         // post-warm-up successes it reported (done only)
	Throughput float64 `json:"throughput_ops"`

	dropped int64
	endNs   int64
	reason  string
}

// Result is a finished distributed phase.
type Result struct {
	Dir     string
	Workers []WorkerResult
	Totals  *measure.Totals
	// CV is the coefficient of variation of the workers' post-warm-up
	// throughput.
	CV float64
	// Missing lists the workers whose share is missing (died or failed).
	Missing []int
}

// worker is the coordinator's side of one worker session.
type worker struct {
	share  Share
	host   remote.Host
	sess   session
	in     *lineWriter
	out    *lineReader
	info   *HostInfo
	offset time.Duration // host clock - coordinator clock
	uncert time.Duration
	res    WorkerResult
	rec    int // the collector's recorder its windows go to
}

// phaseRun is one distributed phase from its workers' set-up to its end.
type phaseRun struct {
	s           *Spec
	t           *targets.Target
	set         experiment.Settings
	wl          *workload.Workload
	ws          []*worker
	endSessions func()
	closers     []func() // called in reverse order by close
}

// close ends every worker session and releases what setup holds.
func (r *phaseRun) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// Run runs the phase from every client host of the inventory (or from the
// connected workers, or the local client processes) and writes one run
// directory.
func Run(ctx context.Context, s Spec) (*Result, error) {
	r, err := startPhase(ctx, &s)
	if err != nil {
		return nil, err
	}
	defer r.close()
	p, ws, t, set := s.Props, r.ws, r.t, r.set
	env := rundir.HostEnv(s.Version, s.Commit)
	env.Target = s.Target
	r.describe(&env)
	run, err := rundir.Open(s.RunsDir, s.Name, time.Now(), env)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	if err := rundir.WriteProperties(run.Path("run.properties"), p); err != nil {
		return nil, err
	}
	m, err := r.measure(ctx, run.Dir, run.Events, nil)
	if err != nil {
		return nil, err
	}
	totals := m.totals
	res := &Result{Dir: run.Dir, Totals: totals, Workers: m.workers, CV: m.cv, Missing: m.missing}
	if err := writeWorkers(run.Path(WorkersFile), res); err != nil {
		return res, err
	}
	if m.closeErr != nil {
		return res, m.closeErr
	}
	var verdicts experiment.HistoryVerdicts
	if len(s.Checks) > 0 {
		verdicts = experiment.RunHistoryChecks(context.WithoutCancel(ctx), run.Dir, s.Checks, set.CheckOptions, s.Err)
	}
	sum := rundir.Summary{
		Target: t.Kind, Phase: string(s.Phase), EndReason: endReason(ws), Threads: set.Runner.Threads, TargetOps: set.Runner.Rate,
		WindowMs: ms(set.Window), WarmupMs: ms(set.Runner.Warmup), Totals: rundir.TotalsOf(totals),
		PeakRSSBytes: experiment.PeakRSS(), Failed: len(m.failures) > 0, Failures: m.failures, PerClient: m.perClient, Dropped: m.dropped,
		Verdicts: verdicts.Verdicts, Errors: verdicts.Errors,
	}
	if m.taskErr != nil {
		sum.Errors = append(sum.Errors, m.taskErr.Error())
	}
	if err := rundir.WriteJSON(run.Path("summary.json"), sum); err != nil {
		return res, err
	}
	if !s.Quiet {
		var b bytes.Buffer
		report.WriteYCSB(&b, totals, set.Basis)
		s.Out.Write(b.Bytes())
		spread := sum.PerClient != nil && len(sum.PerClient.Clients) >= 2
		writeSpread(s.Out, res, !spread)
		report.WriteClients(s.Out, sum.PerClient) // the CVs, as an in-process run prints them
		fmt.Fprintf(s.Out, "run directory: %s\n", run.Dir)
	}
	for _, f := range m.failures {
		fmt.Fprintln(s.Err, "warning:", f)
	}
	rout := s.Out
	if s.Quiet {
		rout = io.Discard
	}
	report.Finish(context.WithoutCancel(ctx), run.Dir, rout, s.Err)
	if len(m.failures) > 0 {
		return res, fmt.Errorf("%d of %d workers did not finish; their shares are missing (see %s)", len(m.failures), len(ws), run.Path(WorkersFile))
	}
	if s.FailOnAnomaly {
		return res, verdicts.AnomalyError()
	}
	return res, nil
}

// startPhase validates s and sets its workers up (setup); the caller
// closes the returned phaseRun.
func startPhase(ctx context.Context, s *Spec) (*phaseRun, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	r := &phaseRun{s: s}
	if err := r.setup(ctx); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// setup checks the properties, splits the phase into the workers' shares,
// starts (or accepts) every worker and hands it its share; it returns once
// every worker's driver is connected. The caller closes r, also when setup
// fails.
func (r *phaseRun) setup(ctx context.Context) error {
	s := r.s
	t, err := s.Targets.Get(s.Target)
	if err != nil {
		return err
	}
	p := s.Props
	prep, err := experiment.CheckProperties(t, s.Phase, p)
	if err != nil {
		return err
	}
	for _, w := range prep.Warnings {
		fmt.Fprintln(s.Err, "warning:", w)
	}
	if !p.Has(t.EndpointKey) {
		c, err := (launcher.StateStore{Dir: s.StateDir}).Load(t.Kind)
		if err != nil {
			return fmt.Errorf("no %s cluster to point the workers at: give -p %s=... (addresses the client hosts can reach) or start one with `faultbench cluster up %s`: %w", t.Kind, t.EndpointKey, t.Kind, err)
		}
		t.ConnectTo(p, c)
	}
	if ep := p.String(t.EndpointKey, ""); s.Listener == nil && !s.Processes && loopbackOnly(ep) {
		return fmt.Errorf("%s=%s: the cluster listens on loopback only, which the client hosts cannot reach; give addresses they can reach", t.EndpointKey, ep)
	}
	set := prep.Settings
	wl := prep.Workload
	r.t, r.set, r.wl = t, set, wl
	procs := 0
	if s.Processes {
		if !set.ClientProcesses {
			return p.Error("clients.process", "client processes need clients.process=true and clients=N in a run phase")
		}
		procs = set.Runner.Clients
	}
	clients := s.clientHosts(procs)
	if s.Phase == runner.Run && wl.Proportion(workload.Insert) > 0 && len(clients) > 1 {
		if s.Processes {
			return p.Error("clients.process", "insertproportion > 0 with several client processes: run-phase inserts take their keys from one sequence starting at recordcount in every process (as in YCSB), so their inserts would collide; run the client groups in-process (clients.process=false), or an operation mix without inserts")
		}
		return errors.New("insertproportion > 0 with several client hosts: run-phase inserts take their keys from one sequence starting at recordcount on every worker (as in YCSB), so the workers' inserts would collide; load with --clients, or run an operation mix without inserts")
	}
	shares, err := Split(Whole{
		Threads: set.Runner.Threads, RateOps: set.Runner.Rate, Operations: set.Runner.OperationCount,
		InsertStart: wl.InsertStart(), InsertCount: wl.InsertCount(), Seed: wl.Seed(),
	}, len(clients))
	if err != nil {
		return err
	}
	// the sessions live as long as the phase (bounded by measure)
	sessCtx, endSessions := context.WithCancel(context.WithoutCancel(ctx))
	r.endSessions = endSessions
	r.closers = append(r.closers, endSessions)
	stop := context.AfterFunc(ctx, endSessions) // Ctrl-C ends every worker
	r.closers = append(r.closers, func() { stop() })
	var connect func(ctx, sessCtx context.Context, i int, h remote.Host) (session, error)
	switch {
	case s.Processes:
		connect = func(_, sessCtx context.Context, i int, _ remote.Host) (session, error) {
			return startLocal(sessCtx, s.Binary, i)
		}
	case s.Listener != nil:
		acc := newAcceptor(sessCtx, s.Listener, len(clients))
		connect = func(ctx, _ context.Context, i int, _ remote.Host) (session, error) { return acc.session(ctx, i) }
	default:
		bin, err := remote.NewBinary(s.Binary)
		if err != nil {
			return err
		}
		pool := remote.NewPool(s.Inventory, s.AcceptNewHostKeys)
		r.closers = append(r.closers, func() { pool.Close() })
		connect = func(ctx, sessCtx context.Context, _ int, h remote.Host) (session, error) {
			return startSSH(ctx, sessCtx, pool, bin, h)
		}
	}

	base := p.Map()
	if s.Processes {
		// each process is one client group: the split is the coordinator's
		delete(base, "clients")
		delete(base, "clients.process")
	}
	ws := make([]*worker, len(clients))
	r.ws = ws
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	r.closers = append(r.closers, func() {
		for _, w := range ws {
			if w != nil && w.sess.close != nil {
				w.sess.close()
			}
		}
	})
	for i, h := range clients {
		ws[i] = &worker{share: shares[i], host: h}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := connect(ctx, sessCtx, i, h)
			if err != nil {
				errs[i] = err
				return
			}
			ws[i].sess = sess
			if ws[i].host.Address == "" {
				ws[i].host.Address = sess.addr
			}
			errs[i] = handshake(ctx, ws[i], t.Kind, s.Phase, len(clients), base)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// describe records the workers in env (env.json).
func (r *phaseRun) describe(env *rundir.Env) {
	if r.s.Processes {
		env.ClientGroups = rundir.ClientGroupsProcesses
	}
	for i, w := range r.ws {
		ch := rundir.ClientHost{Client: i, Name: w.host.Name, Address: w.host.Address,
			ClockOffsetMs: ms(w.offset), ClockUncertaintyMs: ms(w.uncert)}
		if w.info != nil {
			ch.Hostname, ch.Kernel, ch.CPUs = w.info.Hostname, w.info.Kernel, w.info.CPUs
			for _, warn := range w.info.Warnings {
				fmt.Fprintf(r.s.Err, "warning: %s: %s\n", w.host.Name, warn)
			}
		}
		env.Clients = append(env.Clients, ch)
	}
}

// measured is what measure leaves.
type measured struct {
	totals   *measure.Totals
	windows  []measure.WindowRow
	closeErr error // the collector's (writing the measurement files)
	workers  []WorkerResult
	missing  []int
	failures []string // one line per missing share
	cv       float64  // the finished workers' throughput CV
	// perClient is the per-client spread of the workers that finished (a
	// missing share would read as a slow client)
	perClient *analyze.ClientSpread
	dropped   int64
	start     time.Time
	taskErr   error // the tasks' errors, joined (and the history merge's)
	// historyOps is the number of operations merged into history.jsonl.
	historyOps int
}

// measure starts every worker at one common time, runs tasks alongside
// (with that t=0; their context ends when the phase does) and merges the
// workers' windows into the measurement files of dir, with events in evs.
func (r *phaseRun) measure(ctx context.Context, dir string, evs *event.Log, tasks []experiment.Task) (*measured, error) {
	s, ws, set, wl := r.s, r.ws, r.set, r.wl
	start := time.Now().Add(s.StartDelay)
	evs.SetStart(start)
	// one recorder per thread, the threads of worker i its client group
	// (clients.csv as an in-process run with clients=len(ws) has it); a
	// worker's windows go to the first recorder of its group
	threads := 0
	for _, w := range ws {
		w.rec = threads
		threads += w.share.Threads
	}
	col, err := measure.NewCollector(measure.Config{
		Dir: dir, Ops: runner.MeasureOps(wl.OpNames(), set.Runner), Window: set.Window, Start: start, Warmup: set.Runner.Warmup,
		Workers: threads, Clients: len(ws),
	})
	if err != nil {
		return nil, err
	}
	for i, w := range ws {
		if measure.ClientOf(w.rec, threads, len(ws)) != i {
			col.Close()
			return nil, fmt.Errorf("internal: worker %d's threads are not client group %d of the collector", i, i)
		}
	}
	if set.Runner.Duration > 0 {
		col.EndAt(start.Add(set.Runner.Warmup + set.Runner.Duration))
		// a bounded phase ends its sessions some time after its end
		limit := time.AfterFunc(time.Until(start)+set.Runner.Warmup+set.Runner.Duration+EndGrace, r.endSessions)
		defer limit.Stop()
	}
	for _, w := range ws {
		if err := w.in.send(Msg{Type: MsgStart, AtNs: start.Add(w.offset).UnixNano()}); err != nil {
			col.Close()
			return nil, fmt.Errorf("%s: starting the worker: %w", w.host.Name, err)
		}
	}
	if !s.Quiet {
		fmt.Fprintf(s.Err, "%d workers start at %s (%s)\n", len(ws), start.UTC().Format("15:04:05.000"), strings.Join(hostNames(ws), ", "))
	}
	wait := time.NewTimer(time.Until(start))
	select {
	case <-wait.C:
	case <-ctx.Done():
		wait.Stop()
	}
	taskCtx, stopTasks := context.WithCancel(ctx)
	defer stopTasks()
	taskErrs := make(chan error, len(tasks))
	for _, task := range tasks {
		go func() { taskErrs <- task(taskCtx, start) }()
	}
	evs.Emit(event.PhaseStart, "", string(s.Phase))
	parts := newHistoryParts(dir)
	merge(ws, col, evs, parts)
	var ends []time.Duration
	for _, w := range ws {
		if w.res.Status == "done" {
			ends = append(ends, time.Duration(w.res.endNs))
		}
	}
	if set.Runner.Duration == 0 && len(ends) > 0 {
		sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
		col.EndAt(start.Add(ends[len(ends)-1]))
	}
	totals, cerr := col.Close()
	evs.Emit(event.PhaseEnd, "", string(s.Phase)+": "+endReason(ws))
	stopTasks()
	var terrs []error
	for range tasks {
		if err := <-taskErrs; err != nil && !errors.Is(err, context.Canceled) {
			terrs = append(terrs, err)
		}
	}
	m := &measured{totals: totals, closeErr: cerr, start: start, taskErr: errors.Join(terrs...)}
	var notes []string
	if m.historyOps, notes, err = parts.merge(context.WithoutCancel(ctx), len(ws)); err != nil {
		m.taskErr = errors.Join(m.taskErr, err)
	}
	for _, n := range notes {
		evs.Emit(event.Note, "", n)
	}
	if cerr == nil {
		if m.windows, cerr = col.Windows(); cerr != nil {
			m.closeErr = fmt.Errorf("reading the windows back: %w", cerr)
		}
	}
	var tps []float64
	var finished []measure.ClientTotals
	for i, w := range ws {
		if totals != nil && totals.Duration > 0 {
			w.res.Throughput = float64(w.res.OK) / totals.Duration.Seconds()
		}
		m.workers = append(m.workers, w.res)
		m.dropped += w.res.dropped
		if w.res.Status != "done" {
			m.missing = append(m.missing, i)
			m.failures = append(m.failures, fmt.Sprintf("client %d (%s) %s: its share is missing (%d threads, %g ops/s, insert keys %d..%d): %s",
				i, w.host.Name, w.res.Status, w.share.Threads, w.share.RateOps, w.share.InsertStart, w.share.InsertStart+w.share.InsertCount-1, w.res.Detail))
			continue
		}
		tps = append(tps, w.res.Throughput)
		if totals != nil && i < len(totals.Clients) {
			finished = append(finished, totals.Clients[i])
		}
	}
	m.cv, _ = analyze.CoefficientOfVariation(tps)
	if totals != nil {
		m.perClient = analyze.PerClient(finished, wl.OpNames(), totals.Duration)
	}
	return m, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func hostNames(ws []*worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.host.Name)
	}
	return out
}

// loopbackOnly reports whether every address in the comma-separated
// endpoint list is a loopback address.
func loopbackOnly(list string) bool {
	any := false
	for _, ep := range strings.Split(list, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		host := ep
		if u, err := url.Parse(ep); err == nil && u.Host != "" {
			host = u.Host
		}
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
		any = true
	}
	return any
}

// session is one worker's connection, whatever carries it: an SSH session
// running `faultbench worker`, or a TCP connection a worker opened
// (`faultbench worker --connect`, e.g. a Kubernetes Job's pod).
type session struct {
	r      io.Reader
	w      io.Writer
	addr   string        // the peer's address, when the transport knows it
	close  func()        // ends the session (and with it the worker)
	stderr func() string // the worker's diagnostics, where the transport has them
}

// startSSH connects to the worker's host, installs the binary and starts
// the worker in an SSH session that lives until sessCtx ends.
func startSSH(ctx, sessCtx context.Context, pool *remote.Pool, bin *remote.Binary, h remote.Host) (session, error) {
	ctx, cancel := context.WithTimeout(ctx, SetupTimeout)
	defer cancel()
	c, err := pool.Get(ctx, h)
	if err != nil {
		return session{}, err
	}
	path, err := bin.Install(ctx, c)
	if err != nil {
		return session{}, err
	}
	proc, err := c.Start(sessCtx, []string{path, WorkerCommand})
	if err != nil {
		return session{}, err
	}
	return session{r: proc.Stdout, w: proc.Stdin, stderr: proc.Stderr, close: func() {
		proc.Close()
		_ = proc.Wait()
	}}, nil
}

// handshake measures the worker's clock offset and hands over its
// assignment; it returns once the worker's driver is connected.
func handshake(ctx context.Context, w *worker, target string, phase runner.Phase, n int, base map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, SetupTimeout)
	defer cancel()
	w.in, w.out = newLineWriter(w.sess.w), newLineReader(w.sess.r)
	w.res = WorkerResult{Client: w.share.Client, Host: w.host.Name, Address: w.host.Address, Threads: w.share.Threads,
		RateOps: w.share.RateOps, InsertStart: w.share.InsertStart, InsertCount: w.share.InsertCount}
	// the reads below are bounded by ctx: end the session if it expires
	stop := context.AfterFunc(ctx, w.sess.close)
	defer stop()
	fail := func(err error) error {
		w.sess.close()
		if s := strings.TrimSpace(w.sess.stderr()); s != "" {
			err = fmt.Errorf("%w (worker stderr: %s)", err, s)
		}
		return fmt.Errorf("%s: %w", w.host.Name, err)
	}
	best := time.Duration(-1)
	for range pings {
		t0 := time.Now()
		if err := w.in.send(Msg{Type: MsgPing}); err != nil {
			return fail(err)
		}
		m, err := w.out.next()
		if err != nil {
			return fail(fmt.Errorf("worker did not answer the clock ping: %w", err))
		}
		t2 := time.Now()
		if m.Type != MsgPong {
			return fail(fmt.Errorf("worker answered %q (%s) to a ping", m.Type, m.Error))
		}
		rtt := t2.Sub(t0)
		if best < 0 || rtt < best {
			best = rtt
			// the worker read its clock about half way through the round trip
			mid := t0.Add(rtt / 2)
			w.offset = time.Unix(0, m.NowNs).Sub(mid)
			w.uncert = rtt / 2
		}
	}
	w.res.ClockOffsetMs, w.res.ClockUncertaintyMs = ms(w.offset), ms(w.uncert)
	a := &Assignment{Protocol: ProtocolVersion, Client: w.share.Client, Clients: n, Target: target, Phase: string(phase), Props: w.share.props(base)}
	if err := w.in.send(Msg{Type: MsgAssign, Assign: a}); err != nil {
		return fail(err)
	}
	m, err := w.out.next()
	if err != nil {
		return fail(fmt.Errorf("worker ended before it was ready: %w", err))
	}
	switch m.Type {
	case MsgReady:
		w.info = m.Host
		return nil
	case MsgError:
		return fail(errors.New(m.Error))
	default:
		return fail(fmt.Errorf("worker answered %q to its assignment", m.Type))
	}
}

// arrival is one message of one worker.
type arrival struct {
	w   int
	msg Msg
	err error // the stream ended (io.EOF) or broke
}

// merge receives every worker's windows and folds them into col, closing a
// window once every worker still running has sent it; a worker whose
// stream ends without its end of phase is an event.
func merge(ws []*worker, col *measure.Collector, evs *event.Log, parts *historyParts) {
	ch := make(chan arrival, 64)
	for i, w := range ws {
		go func() {
			for {
				m, err := w.out.next()
				if err != nil {
					ch <- arrival{w: i, err: err}
					return
				}
				ch <- arrival{w: i, msg: m}
				if m.Type == MsgDone || m.Type == MsgError {
					return
				}
			}
		}()
	}
	lastFull := make([]int64, len(ws))
	for i := range lastFull {
		lastFull[i] = -1
	}
	running := len(ws)
	live := make([]bool, len(ws))
	for i := range live {
		live[i] = true
	}
	closeUpTo := func() {
		k := int64(-1)
		first := true
		for i, l := range live {
			if !l {
				continue
			}
			if first || lastFull[i] < k {
				k = lastFull[i]
			}
			first = false
		}
		if first {
			return // nobody left: Close closes the rest
		}
		col.CloseThrough(k)
	}
	for running > 0 {
		a := <-ch
		w := ws[a.w]
		end := func(status, detail string) {
			live[a.w] = false
			running--
			w.res.Status, w.res.Detail = status, detail
			w.sess.close()
			closeUpTo()
		}
		switch {
		case a.err != nil:
			why := "its session ended without an end of phase"
			if !errors.Is(a.err, io.EOF) {
				why = a.err.Error()
			}
			if s := strings.TrimSpace(w.sess.stderr()); s != "" {
				why += " (stderr: " + lastLine(s) + ")"
			}
			evs.Emit(EventWorkerDied, w.host.Name, fmt.Sprintf("client %d: %s; missing share: %d threads, %g ops/s, insert keys %d..%d",
				a.w, why, w.share.Threads, w.share.RateOps, w.share.InsertStart, w.share.InsertStart+w.share.InsertCount-1))
			end("died", why)
		case a.msg.Type == MsgWindow && a.msg.Part != nil:
			part := *a.msg.Part
			w.res.Windows++
			w.res.Operations += part.Count()
			if err := col.AddPart(w.rec, part); err != nil {
				evs.Emit(event.Note, w.host.Name, err.Error())
			}
			if !part.Partial && part.Window > lastFull[a.w] {
				lastFull[a.w] = part.Window
			}
			closeUpTo()
		case a.msg.Type == MsgHistory:
			if err := parts.add(a.w, a.msg.History); err != nil {
				evs.Emit(event.Note, w.host.Name, err.Error())
			}
		case a.msg.Type == MsgDone && a.msg.Done != nil:
			d := a.msg.Done
			w.res.OK, w.res.dropped, w.res.endNs, w.res.reason = d.OK, d.Dropped, d.EndNs, d.Reason
			if d.Error != "" {
				evs.Emit(EventWorkerDied, w.host.Name, fmt.Sprintf("client %d: phase failed: %s", a.w, d.Error))
				end("failed", d.Error)
				continue
			}
			end("done", d.Reason)
		case a.msg.Type == MsgError:
			evs.Emit(EventWorkerDied, w.host.Name, fmt.Sprintf("client %d: %s", a.w, a.msg.Error))
			end("failed", a.msg.Error)
		default:
			evs.Emit(event.Note, w.host.Name, fmt.Sprintf("unexpected message %q from client %d", a.msg.Type, a.w))
		}
	}
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func endReason(ws []*worker) string {
	reasons := map[string]bool{}
	var out []string
	for _, w := range ws {
		r := w.res.reason
		if w.res.Status != "done" {
			r = "client " + strconv.Itoa(w.share.Client) + " " + w.res.Status
		}
		if r != "" && !reasons[r] {
			reasons[r] = true
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

// WorkersFile is the distributed run's per-worker table in the run
// directory (the shares, the clock offsets, what each delivered).
const WorkersFile = "workers.csv"

// WorkersHeader is workers.csv's header.
const WorkersHeader = "client,host,address,status,threads,target_ops,insertstart,insertcount,clock_offset_ms,clock_uncertainty_ms,windows,operations,ok,throughput_ops,detail"

func writeWorkers(path string, r *Result) error {
	var b strings.Builder
	b.WriteString(WorkersHeader + "\n")
	for _, w := range r.Workers {
		fmt.Fprintf(&b, "%d,%s,%s,%s,%d,%s,%d,%d,%.3f,%.3f,%d,%d,%d,%.3f,%s\n", w.Client, w.Host, w.Address, w.Status, w.Threads,
			strconv.FormatFloat(w.RateOps, 'f', -1, 64), w.InsertStart, w.InsertCount, w.ClockOffsetMs, w.ClockUncertaintyMs,
			w.Windows, w.Operations, w.OK, w.Throughput, csvField(w.Detail))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// writeSpread prints the per-worker lines after the YCSB summary, and the
// throughput CV of the workers when cv is set.
func writeSpread(w io.Writer, r *Result, cv bool) {
	for _, x := range r.Workers {
		fmt.Fprintf(w, "[CLIENT %d %s], Status, %s\n[CLIENT %d %s], Throughput(ops/sec), %.1f\n[CLIENT %d %s], ClockOffset(ms), %.3f ± %.3f\n",
			x.Client, x.Host, x.Status, x.Client, x.Host, x.Throughput, x.Client, x.Host, x.ClockOffsetMs, x.ClockUncertaintyMs)
	}
	if cv {
		fmt.Fprintf(w, "[CLIENTS], ThroughputCV, %.4f\n", r.CV)
	}
}
