package report

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/rundir"
	"github.com/faultbench/faultbench/internal/runfile"
)

// DirKind is a kind of run directory whose report a package above report
// draws: the Under Pressure Benchmark's (upb.DirKind). report cannot import
// those packages; the caller hands their kinds to RenderDir and
// Comparability.
type DirKind struct {
	// Name is how compare calls a run of this kind, e.g. "UPB run".
	Name string
	// Is reports whether dir is of this kind.
	Is func(dir string) bool
	// Render draws dir's report.
	Render func(ctx context.Context, dir string) (*Output, error)
}

// RenderDir draws the report of any run directory (`faultbench report`):
// with the first of kinds that claims dir, else as a sweep (RenderSweep)
// when it is one, else as a run (Render). When a run directory has no
// measured run its error says where the measured phases are
// (PartialRunHint).
func RenderDir(ctx context.Context, dir string, kinds ...DirKind) (*Output, error) {
	render := Render
	if IsSweepDir(dir) {
		render = func(ctx context.Context, dir string) (*Output, error) { return RenderSweep(ctx, dir, nil) }
	}
	for i := len(kinds) - 1; i >= 0; i-- { // the first that claims dir wins, before a sweep
		if kinds[i].Is(dir) {
			render = kinds[i].Render
		}
	}
	out, err := render(ctx, dir)
	if err != nil {
		if hint := PartialRunHint(dir); hint != "" {
			return nil, fmt.Errorf("%s has no measured run: %s", dir, hint)
		}
		return nil, err
	}
	return out, nil
}

// PartialRunHint says where the measurements of a scenario run that was
// interrupted before its measured run are (load/, calibration/), or "".
func PartialRunHint(dir string) string {
	if runfile.Exists(filepath.Join(dir, "windows.csv")) {
		return ""
	}
	for _, sub := range []struct{ dir, what string }{{"calibration", "calibration"}, {"load", "load phase"}} {
		if runfile.Exists(filepath.Join(dir, sub.dir, "windows.csv")) {
			p := filepath.Join(dir, sub.dir)
			return fmt.Sprintf("it was interrupted in its %s; that phase's measurements are in %s (`faultbench report %s`)", sub.what, p, p)
		}
	}
	return ""
}

// Comparability says how the runs in dirs differ in what they measured
// (the kind of run, the workload, the offered rate — a percentage of each
// run's own calibrated capacity counts as the same rate —, the client
// threads), so that a table that
// puts them side by side is not read as a like-for-like comparison. The
// database kinds may differ: comparing them is what compare is for. A run
// directory one of kinds claims is a run of that kind's Name.
func Comparability(dirs []string, kinds ...DirKind) []string {
	if len(dirs) < 2 {
		return nil
	}
	type facts struct{ kind, workload, rate, threads string }
	var fs []facts
	for _, d := range dirs {
		var f facts
		var sum rundir.Summary
		if b, err := runfile.ReadFile(filepath.Join(d, "summary.json")); err == nil && json.Unmarshal(b, &sum) == nil {
			for _, k := range kinds {
				if f.kind == "" && k.Is(d) {
					f.kind = k.Name
				}
			}
			switch {
			case f.kind != "":
			case sum.Scenario != "":
				f.kind = "scenario run"
			case sum.Phase != "":
				f.kind = sum.Phase + " phase"
			}
			switch {
			case sum.RateSpec != "":
				f.rate = sum.RateSpec
				if _, err := strconv.ParseFloat(sum.RateSpec, 64); err == nil {
					f.rate += " ops/s"
				}
			case sum.TargetOps > 0:
				f.rate = strconv.FormatFloat(sum.TargetOps, 'f', -1, 64) + " ops/s"
			default:
				f.rate = "closed loop"
			}
			if sum.Threads > 0 {
				f.threads = strconv.Itoa(sum.Threads) + " threads"
			}
		}
		p := properties.New()
		if p.LoadFile(filepath.Join(d, "run.properties")) == nil {
			var parts []string
			for _, k := range []string{"recordcount", "readproportion", "updateproportion", "insertproportion", "scanproportion",
				"readmodifywriteproportion", "deleteproportion", "requestdistribution", "fieldcount", "fieldlength"} {
				if p.Has(k) {
					parts = append(parts, k+"="+p.String(k, ""))
				}
			}
			f.workload = strings.Join(parts, " ")
		}
		fs = append(fs, f)
	}
	var out []string
	differ := func(what string, get func(facts) string) {
		seen := map[string][]string{}
		var order []string
		for i, f := range fs {
			v := get(f)
			if v == "" {
				continue
			}
			if _, ok := seen[v]; !ok {
				order = append(order, v)
			}
			seen[v] = append(seen[v], filepath.Base(dirs[i]))
		}
		if len(order) < 2 {
			return
		}
		var parts []string
		for _, v := range order {
			parts = append(parts, fmt.Sprintf("%s in %s", v, strings.Join(seen[v], ", ")))
		}
		out = append(out, fmt.Sprintf("the runs are not comparable: %s differ (%s)", what, strings.Join(parts, "; ")))
	}
	differ("the kinds of run", func(f facts) string { return f.kind })
	differ("the workloads", func(f facts) string { return f.workload })
	differ("the offered rates", func(f facts) string { return f.rate })
	differ("the client threads", func(f facts) string { return f.threads })
	return out
}
