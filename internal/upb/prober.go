package upb

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runner"
	"github.com/faultbench/faultbench/internal/targets"
)

// ExecProber measures probes against a live cluster with experiment.Execute.
//
// A probe of c clients at r ops/s each is one open-loop run of
// c · ClientThreads worker threads with the total target rate c · r: the
// runner spreads the total evenly over its threads, so every group of
// ClientThreads threads (one client) offers exactly r ≤ L_c. The run warms
// up for Warmup, then goes on until the last Measure of it is steady (see
// Steadiness) or Measure + SteadyTimeout have passed; the measurement is the
// earliest steady window of length Measure. Each probe leaves a run
// directory (windows.csv, hist/, clients.csv, summary.json) under Dir.
type ExecProber struct {
	Target   *targets.Target        // the target probed
	Props    *properties.Properties // workload, driver and endpoint properties shared by every probe
	StateDir string                 // passed to experiment.Prepare
	Root     string                 // the UPB run directory; Measurement.Dir is relative to it
	Dir      string                 // where this search's probe directories go (under Root)
	Config   Config
	// Log receives one line per probe; nil discards.
	Log io.Writer

	n int // probes run
}

// Measure runs one probe.
func (p *ExecProber) Measure(ctx context.Context, pr Probe) (Measurement, error) {
	cfg := p.Config
	if pr.Clients < 1 {
		return Measurement{}, fmt.Errorf("probe needs at least one client, got %d", pr.Clients)
	}
	p.n++
	name := fmt.Sprintf("%02d-c%d-q%.0f", p.n, pr.Clients, pr.Total())
	if pr.ClosedLoop() {
		name = fmt.Sprintf("%02d-hint-c%d", p.n, pr.Clients)
	}
	dir := filepath.Join(p.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Measurement{}, fmt.Errorf("probe directory: %w", err)
	}
	props := p.Props.Clone()
	props.Set("threadcount", strconv.Itoa(pr.Clients*cfg.ClientThreads))
	props.Set("warmup", cfg.Warmup.String())
	props.Set("measurement.window", cfg.Window.String())
	props.Set("optimeout", cfg.OpTimeout.String())
	props.Set("operationcount", "0")
	if pr.ClosedLoop() {
		props.Set("maxexecutiontime", cfg.Hint.String())
		props.Set("target", "0")
	} else {
		if cfg.SteadyRule {
			props.Set("maxexecutiontime", (cfg.Measure + cfg.SteadyTimeout).String())
		} else {
			props.Set("maxexecutiontime", (cfg.Measure + cfg.SteadySample).String()) // a sample of slack: the window is the first Measure
		}
		props.Set("target", strconv.FormatFloat(pr.Total(), 'f', 3, 64))
	}
	st := Steadiness{Sample: cfg.SteadySample, Window: cfg.Window, Tol: cfg.SteadyTol, Measure: cfg.Measure}
	runCtx, stop := context.WithCancel(ctx) // stop ends the run once its steady window is complete
	defer stop()
	hooks := experiment.Hooks{}
	if !pr.ClosedLoop() && cfg.SteadyRule {
		hooks.Tasks = []experiment.Task{func(rctx context.Context, _ time.Time) error {
			watchSteady(rctx, filepath.Join(dir, "windows.csv"), st, stop)
			return nil
		}}
	}
	out, err := experiment.Phase(runCtx, p.Target, runner.Run, props, p.StateDir, dir, hooks)
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		err = nil // stop: the steady window is complete
	}
	if ctx.Err() != nil {
		return Measurement{}, ctx.Err()
	}
	if err != nil {
		return Measurement{}, fmt.Errorf("probe %s: %w", name, err)
	}
	rel, _ := filepath.Rel(p.Root, dir)
	m := Measurement{Dir: rel}
	if pr.ClosedLoop() {
		ws := runWindows(out.Windows, cfg.Window)
		var ok int64
		var d time.Duration
		for _, w := range ws {
			ok += w.ok
			m.Errors += w.errs
			d += w.end - w.start
		}
		if d > 0 {
			m.TPS = float64(ok) / d.Seconds()
			m.MeasuredMs = float64(d) / float64(time.Millisecond)
			m.FromMs, m.ToMs = ms(ws[0].start), ms(ws[len(ws)-1].end)
			m.PhiFraction, err = phiOf(dir, ws[0].start, ws[len(ws)-1].end, cfg.Criteria.PhiLatency, m.Errors)
			if err != nil {
				return m, err
			}
		}
		m.PhiOK = m.PhiFraction >= cfg.Criteria.PhiFraction
		m.Steady = true
	} else {
		var from, to time.Duration
		var ok, errs int64
		var found bool
		if cfg.SteadyRule {
			from, to, ok, errs, found = st.Find(out.Windows)
		} else {
			var have bool
			from, to, ok, errs, have, found = st.First(out.Windows)
			if !have {
				m.Note = fmt.Sprintf("the run ended before a full %v window", cfg.Measure)
			} else if !found {
				m.Note = st.spread(out.Windows)
			}
		}
		if !found && cfg.SteadyRule {
			// for the record: the whole run after warm-up
			ws := runWindows(out.Windows, cfg.Window)
			if len(ws) > 0 {
				from, to = ws[0].start, ws[len(ws)-1].end
				for _, w := range ws {
					ok += w.ok
					errs += w.errs
				}
			}
			m.Note = st.spread(out.Windows)
		}
		m.Steady = found
		m.Errors = errs
		if to > from {
			m.TPS = float64(ok) / (to - from).Seconds()
			m.MeasuredMs = float64(to-from) / float64(time.Millisecond)
			m.FromMs, m.ToMs = ms(from), ms(to)
			m.PhiFraction, err = phiOf(dir, from, to, cfg.Criteria.PhiLatency, errs)
			if err != nil {
				return m, err
			}
		}
		m.PhiOK = m.PhiFraction >= cfg.Criteria.PhiFraction
	}
	m.ClientTPS, _ = clientTPS(filepath.Join(dir, "clients.csv"), cfg.ClientThreads)
	if p.Log != nil {
		offered := "closed loop"
		if !pr.ClosedLoop() {
			offered = fmt.Sprintf("%.0f ops/s offered", pr.Total())
		}
		clients := "1 client"
		if pr.Clients != 1 {
			clients = fmt.Sprintf("%d clients", pr.Clients)
		}
		fmt.Fprintf(p.Log, "    probe %s: %s, %s: %.0f ops/s, %.1f %% within %v, steady %v\n",
			rel, clients, offered, m.TPS, m.PhiFraction*100, cfg.Criteria.PhiLatency, m.Steady)
	}
	return m, nil
}

// watchSteady polls windows.csv while the run goes on and calls done once
// the earliest steady window is complete; it returns when ctx ends.
func watchSteady(ctx context.Context, path string, st Steadiness, done func()) {
	every := min(st.Window, 500*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if _, _, _, _, found := st.Find(parseWindowsCSV(b)); found {
			done()
			return
		}
	}
}

// clientTPS sums the per-thread throughputs of clients.csv into clients of
// threads threads each.
func clientTPS(path string, threads int) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []float64
	for i, r := range recs {
		if i == 0 || len(r) < 2 {
			continue
		}
		w, err1 := strconv.Atoi(r[0])
		v, err2 := strconv.ParseFloat(r[len(r)-1], 64)
		if err1 != nil || err2 != nil || w < 0 {
			continue
		}
		c := w / threads
		for len(out) <= c {
			out = append(out, 0)
		}
		out[c] += v
	}
	return out, nil
}
