package autoscale

import (
	"sort"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
)

// Report is summary.json's autoscale section: the rules, and per decision
// the EB2 metrics (docs/metrics.md, "Autoscaling (EB2)"). Times are ms;
// -1 means not reached within the run.
type Report struct {
	Rules           []string `json:"rules"`
	CooldownMs      float64  `json:"cooldown_ms"`
	MinNodes        int      `json:"min_nodes"`
	MaxNodes        int      `json:"max_nodes"`
	Op              string   `json:"op"`
	LatencyTargetUs float64  `json:"latency_target_us"`
	CapacityOps     float64  `json:"capacity_ops,omitempty"`
	StartNodes      int      `json:"start_nodes"`
	EndNodes        int      `json:"end_nodes"`
	// Windows and Violations are over every window after the warm-up: how
	// many, and how many were above the latency target.
	Windows    int          `json:"windows"`
	Violations int          `json:"violations"`
	Decisions  []DecisionEB `json:"decisions"`
	Notes      []string     `json:"notes,omitempty"`
}

// DecisionEB is one decision with its metrics.
type DecisionEB struct {
	Decision
	// Nodes are the nodes the action added or removed.
	Nodes string `json:"nodes,omitempty"`
	// ReactionMs is from the rule firing to the scaling action's start
	// (scale-start: the cluster was healthy and the action began).
	ReactionMs float64 `json:"reaction_ms"`
	// JoinedMs is from the rule firing to the last node-joined (add-node)
	// or node-left (remove-node) milestone.
	JoinedMs float64 `json:"joined_ms"`
	// ReadyMs is the time to the new size: from the rule firing to the
	// scaling action's successful end (scale-end: the launcher saw the
	// cluster serve with its new membership, data movement included);
	// -1 when the action failed or did not end within the run.
	ReadyMs float64 `json:"ready_ms"`
	Failed  bool    `json:"failed,omitempty"`
	Error   string  `json:"error,omitempty"`
	// Before, During and After are the SLA violations around the
	// decision: before is from the previous decision's end (its ready
	// time, else its firing; or the end of the warm-up) to the firing,
	// during from the firing to ready, after from ready to the next
	// decision's firing (or the end of the run).
	Before SLASpan `json:"before"`
	During SLASpan `json:"during"`
	After  SLASpan `json:"after"`
}

// SLASpan counts the windows of a span above the latency target. A window
// belongs to the span its midpoint is in.
type SLASpan struct {
	FromMs     float64 `json:"from_ms"`
	ToMs       float64 `json:"to_ms"`
	Windows    int     `json:"windows"`
	Violations int     `json:"violations"`
	// ViolationPct is Violations of Windows in percent (0 without windows).
	ViolationPct float64 `json:"violation_pct"`
}

// Analyze computes the report of a run from its configuration (defaulted),
// its starting size, the capacity the percentages refer to, the decisions
// its engine took, its windows (windows.csv's rows) and its events (the
// scaling actions' milestones carry the decisions' labels).
func Analyze(cfg Config, startNodes int, capacity float64, decisions []Decision, windows []measure.WindowRow, evs []event.Event) *Report {
	rep := &Report{CooldownMs: msOf(cfg.Cooldown), MinNodes: cfg.MinNodes, MaxNodes: cfg.MaxNodes, Op: cfg.Op,
		LatencyTargetUs: float64(cfg.LatencyTarget) / float64(time.Microsecond), CapacityOps: capacity,
		StartNodes: startNodes, EndNodes: startNodes, Decisions: []DecisionEB{}}
	for _, r := range cfg.Rules {
		rep.Rules = append(rep.Rules, r.Name+": "+r.String())
	}
	// the run windows of the SLA's operation (ALL rows of a window whose
	// op has no row say nothing about it: left out)
	type win struct {
		mid       time.Duration
		violation bool
	}
	var wins []win
	runFrom, runTo := time.Duration(-1), time.Duration(0)
	for _, w := range windows {
		if w.Phase == measure.PhaseWarmup {
			continue
		}
		if w.Op == measure.AllOps {
			if runFrom < 0 || w.Start < runFrom {
				runFrom = w.Start
			}
			runTo = max(runTo, w.End)
		}
		if w.Op != cfg.Op {
			continue
		}
		v, known := latency(w, P99)
		if !known {
			continue
		}
		wins = append(wins, win{mid: w.Start + (w.End-w.Start)/2, violation: v > rep.LatencyTargetUs})
	}
	for _, w := range wins {
		rep.Windows++
		if w.violation {
			rep.Violations++
		}
	}
	span := func(from, to time.Duration) SLASpan {
		s := SLASpan{FromMs: msOf(from), ToMs: msOf(to)}
		for _, w := range wins {
			if w.mid >= from && w.mid < to {
				s.Windows++
				if w.violation {
					s.Violations++
				}
			}
		}
		if s.Windows > 0 {
			s.ViolationPct = 100 * float64(s.Violations) / float64(s.Windows)
		}
		return s
	}
	sorted := append([]event.Event(nil), evs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].T < sorted[j].T })
	if runFrom < 0 {
		runFrom = 0
	}
	prevEnd := runFrom
	nodes := startNodes
	for i, d := range decisions {
		at := time.Duration(d.AtMs * float64(time.Millisecond))
		m := DecisionEB{Decision: d, ReactionMs: -1, JoinedMs: -1, ReadyMs: -1}
		var readyAt time.Duration = -1
		var names []string
		for _, e := range sorted {
			if e.Fault != d.Label {
				continue
			}
			rel := msOf(e.Since() - at)
			switch e.Kind {
			case event.ScaleStart:
				if m.ReactionMs < 0 {
					m.ReactionMs = rel
				}
			case event.NodeJoined, event.NodeLeft:
				m.JoinedMs = rel
				if !contains(names, e.Node) {
					names = append(names, e.Node)
				}
			case event.ScaleEnd:
				if strings.Contains(e.Detail, " failed: ") {
					m.Failed, m.Error = true, e.Detail
				} else if m.ReadyMs < 0 {
					m.ReadyMs, readyAt = rel, e.Since()
				}
			case event.FaultError:
				m.Failed, m.Error = true, e.Detail
			}
		}
		m.Nodes = strings.Join(names, ",")
		if m.ReadyMs >= 0 && !m.Failed {
			nodes = d.NodesAfter
		}
		next := runTo
		if i+1 < len(decisions) {
			next = time.Duration(decisions[i+1].AtMs * float64(time.Millisecond))
		}
		m.Before = span(prevEnd, at)
		end := next
		if readyAt >= 0 {
			end = min(readyAt, next)
		}
		m.During = span(at, end)
		if readyAt >= 0 && readyAt < next {
			m.After = span(readyAt, next)
		} else {
			m.After = SLASpan{FromMs: -1, ToMs: -1}
		}
		prevEnd = end
		rep.Decisions = append(rep.Decisions, m)
	}
	rep.EndNodes = nodes
	if len(decisions) == 0 {
		rep.Notes = append(rep.Notes, "no rule fired during the run")
	}
	return rep
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
