package distrib

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// Worker timeouts: how long a worker waits for the coordinator between
// protocol steps before it gives up.
const (
	AssignTimeout = 2 * time.Minute
	StartTimeout  = 5 * time.Minute
	// ConnectTimeout bounds `worker --connect` waiting for its coordinator.
	ConnectTimeout = 5 * time.Minute
)

// Work is `faultbench worker`: it serves the protocol on in/out until its
// phase ends or in closes. reg is the target registry.
func Work(ctx context.Context, in io.Reader, out io.Writer, reg *targets.Registry) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newLineWriter(out)
	msgs := make(chan Msg, 16)
	go func() {
		defer close(msgs)
		r := newLineReader(in)
		for {
			m, err := r.next()
			if err != nil {
				// the coordinator went away (or spoke nonsense): end the phase
				cancel()
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	fail := func(err error) error {
		_ = w.send(Msg{Type: MsgError, Error: err.Error()})
		return err
	}
	recv := func(d time.Duration, what string) (Msg, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case m, ok := <-msgs:
			if !ok {
				return Msg{}, fmt.Errorf("worker: the coordinator closed the session before %s", what)
			}
			return m, nil
		case <-t.C:
			return Msg{}, fmt.Errorf("worker: no %s from the coordinator within %v", what, d)
		case <-ctx.Done():
			return Msg{}, ctx.Err()
		}
	}
	// pings until the assignment
	var a *Assignment
	for a == nil {
		m, err := recv(AssignTimeout, "assignment")
		if err != nil {
			return fail(err)
		}
		switch m.Type {
		case MsgPing:
			if err := w.send(Msg{Type: MsgPong, NowNs: time.Now().UnixNano()}); err != nil {
				return err
			}
		case MsgAssign:
			a = m.Assign
			if a == nil {
				return fail(errors.New("worker: assign without an assignment"))
			}
		default:
			return fail(fmt.Errorf("worker: unexpected %q before the assignment", m.Type))
		}
	}
	if a.Protocol != ProtocolVersion {
		return fail(fmt.Errorf("worker: protocol %d, the coordinator speaks %d (another faultbench version)", ProtocolVersion, a.Protocol))
	}
	t, err := reg.Get(a.Target)
	if err != nil {
		return fail(err)
	}
	phase := runner.Phase(a.Phase)
	p := properties.New()
	for k, v := range a.Props {
		p.SetFrom(k, v, properties.Source{Origin: fmt.Sprintf("coordinator (client %d)", a.Client)})
	}
	tmp, err := os.MkdirTemp("", "faultbench-worker-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	prep, err := experiment.Prepare(ctx, t, phase, p, tmp)
	if err != nil {
		return fail(err)
	}
	defer prep.Close()
	info := hostInfo()
	info.Warnings = prep.Warnings
	if err := w.send(Msg{Type: MsgReady, Host: &info}); err != nil {
		return err
	}
	m, err := recv(StartTimeout, "start")
	if err != nil {
		return fail(err)
	}
	if m.Type != MsgStart || m.AtNs == 0 {
		return fail(fmt.Errorf("worker: want start, got %q", m.Type))
	}
	start := time.Unix(0, m.AtNs)
	wait := time.NewTimer(time.Until(start))
	select {
	case <-wait.C:
	case <-ctx.Done():
		wait.Stop()
		return ctx.Err()
	}
	var sendErr error
	sink := &historySink{send: func(b []byte) error { return w.send(Msg{Type: MsgHistory, History: b}) }}
	out2, err := experiment.Execute(ctx, prep, tmp, experiment.Hooks{
		Start:     start,
		HistoryTo: sink,
		OnPart: func(part measure.WindowPart) {
			if sendErr == nil {
				sendErr = w.send(Msg{Type: MsgWindow, Part: &part})
			}
		},
	})
	d := Done{}
	if out2 != nil {
		d.Reason = out2.Result.Reason
		d.Dropped = out2.Result.Dropped
		if out2.Totals != nil {
			d.OK = out2.Totals.All.OK
			for _, v := range out2.Totals.All.Errors {
				d.Errors += v
			}
			d.Cut = out2.Totals.CutCount()
		}
		if n := len(out2.Windows); n > 0 {
			d.EndNs = int64(out2.Windows[n-1].End)
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	if sendErr != nil {
		return sendErr
	}
	if serr := w.send(Msg{Type: MsgDone, Done: &d}); serr != nil {
		return serr
	}
	return err
}

func hostInfo() HostInfo {
	h := HostInfo{CPUs: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		b := make([]byte, 0, len(u.Release))
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		h.Kernel = string(b)
	}
	return h
}
