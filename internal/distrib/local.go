package distrib

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/runner"
)

// LocalStopGrace is how long a local worker process has to exit once its
// standard input is closed (it then ends its phase and sends what it has)
// before it is killed.
const LocalStopGrace = 5 * time.Second

// ProcessName is the name of local worker process i in env.json,
// workers.csv and the events (the host column of a distributed run).
func ProcessName(i int) string { return "process" + strconv.Itoa(i) }

// stderrTail keeps the last bytes a worker process wrote to its standard
// error, for the messages about a worker that failed or died.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

// stderrKeep is how much of a worker's standard error is kept.
const stderrKeep = 16 << 10

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf); n > stderrKeep {
		t.buf = append(t.buf[:0], t.buf[n-stderrKeep:]...)
	}
	return len(p), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// startLocal starts `bin worker` as a child process of this one, without a
// shell, speaking the protocol on pipes of its own. The kernel kills it
// when this process dies (Pdeathsig; and a worker whose standard input
// closes ends its phase anyway); the session's close, or the end of
// sessCtx, closes its standard input and kills it if it has not exited
// within LocalStopGrace. Nothing it starts outlives the run: a worker runs
// its driver in-process and starts no processes.
func startLocal(sessCtx context.Context, bin string, i int) (session, error) {
	// our own pipes rather than Cmd.StdoutPipe: Wait closes those, and
	// would race with the reader for the last lines (the end of phase)
	inR, inW, err := os.Pipe()
	if err != nil {
		return session{}, fmt.Errorf("%s: %w", ProcessName(i), err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return session{}, fmt.Errorf("%s: %w", ProcessName(i), err)
	}
	// the worker's temporary run directory goes under one the coordinator
	// removes when the worker has ended, so a worker that was killed
	// (SIGKILL, Pdeathsig) leaves nothing behind either
	tmp, err := os.MkdirTemp("", "faultbench-process-")
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return session{}, fmt.Errorf("%s: %w", ProcessName(i), err)
	}
	tail := &stderrTail{}
	cmd := exec.Command(bin, WorkerCommand)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, tail
	// SIGKILL when the thread that started it ends: Go ends no thread of
	// its pool unless a goroutine locked to it exits, which this one is not
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		_ = os.RemoveAll(tmp)
		return session{}, fmt.Errorf("%s: starting %s %s: %w", ProcessName(i), bin, WorkerCommand, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = os.RemoveAll(tmp)
		close(exited)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			inW.Close()
			t := time.NewTimer(LocalStopGrace)
			defer t.Stop()
			select {
			case <-exited:
			case <-t.C:
				_ = cmd.Process.Kill()
				<-exited
			}
			// outR stays open: the reader drains what the worker wrote
			// before it exited, up to EOF (the file's finalizer closes it)
		})
	}
	context.AfterFunc(sessCtx, stop)
	return session{r: outR, w: inW, addr: "pid " + strconv.Itoa(cmd.Process.Pid), close: stop, stderr: tail.String}, nil
}

// Execute returns the experiment.ProcessRunner that runs a scenario's
// measured phase with its client groups (clients=N, clients.process=true)
// as N local worker processes of binary: the coordinator of Run, with the
// scenario's tasks (fault schedule, watcher) alongside and its run
// directory and events. It writes workers.csv besides the measurement
// files; the outcome's Missing lists the shares of processes that died.
func Execute(binary string) experiment.ProcessRunner {
	return func(ctx context.Context, j experiment.ProcessJob) (*experiment.Outcome, error) {
		s := Spec{Spec: experiment.Spec{Target: j.Target, Phase: runner.Run, Props: j.Props,
			StateDir: j.StateDir, Quiet: j.Quiet, Err: j.Err, Targets: j.Targets, RunsDir: filepath.Dir(j.Dir)},
			Processes: true, Binary: binary}
		r, err := startPhase(ctx, &s)
		if err != nil {
			return nil, err
		}
		defer r.close()
		m, err := r.measure(ctx, j.Dir, j.Events, j.Tasks)
		if err != nil {
			return nil, err
		}
		res := &Result{Dir: j.Dir, Totals: m.totals, Workers: m.workers, CV: m.cv, Missing: m.missing}
		if err := writeWorkers(filepath.Join(j.Dir, WorkersFile), res); err != nil {
			return nil, err
		}
		out := &experiment.Outcome{Dir: j.Dir, Totals: m.totals, Windows: m.windows, PerClient: m.perClient, Clients: len(r.ws),
			Missing: m.failures, Result: runner.Result{Start: m.start, Reason: endReason(r.ws), Dropped: m.dropped}}
		if n := len(m.windows); n > 0 {
			out.Result.End = m.start.Add(m.windows[n-1].End)
		}
		if m.closeErr != nil {
			return out, m.closeErr
		}
		return out, m.taskErr
	}
}
