// Package scenario reads scenario files: YAML documents naming a target, a
// workload, the load, a schedule of faults and the checks to run. It
// applies `--set path=value` overrides, validates strictly (unknown fields
// and bad values are errors naming the file, the field and what is
// allowed) and resolves defaults, so that the resolved scenario saved in a
// run directory states everything the run did.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/fault"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/histcheck"
	"github.com/faultbench/faultbench/internal/workload"
	"gopkg.in/yaml.v3"
)

// Scenario is one scenario file.
type Scenario struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description,omitempty"`
	Target      Target   `yaml:"target"`
	Workload    Workload `yaml:"workload"`
	Load        Load     `yaml:"load"`
	Schedule    Schedule `yaml:"schedule,omitempty"`
	Checks      []string `yaml:"checks,omitempty"`
	// History records the measured run's every operation in history.jsonl
	// (a CoreWorkload run; a workload made for checking records one anyway,
	// and naming a history checker in checks turns it on). docs/checks.md.
	History  bool     `yaml:"history,omitempty"`
	Analysis Analysis `yaml:"analysis,omitempty"`
	UPB      *UPB     `yaml:"upb,omitempty"`    // the Under Pressure Benchmark's parameters (faultbench upb)
	Sweep    *Sweep   `yaml:"sweep,omitempty"`  // a scalability sweep, SB1/SB2/SB3 (faultbench sweep)
	Trials   *Trials  `yaml:"trials,omitempty"` // repeat the scenario N times (faultbench scenario --trials)
	// Chaos is chaos mode: cycles of random faults drawn from the run's
	// seed (Draw turns it into schedule steps; docs/scenarios.md).
	Chaos *Chaos `yaml:"chaos,omitempty"`
	// Autoscale is rule-based scaling during the measured run (EB2;
	// docs/scenarios.md): faultbench adds and removes nodes when the rules
	// over its own windows say so.
	Autoscale *Autoscale `yaml:"autoscale,omitempty"`

	src   sources // where each field was written (file:line or --set), for messages
	chaos *Chaos  // the chaos section Draw turned into steps (ChaosSpec)
}

// Target says which database and how big a cluster.
type Target struct {
	Kind      string            `yaml:"kind"`
	Nodes     int               `yaml:"nodes,omitempty"`
	Replicas  *int              `yaml:"replicas,omitempty"`
	Endpoints []string          `yaml:"endpoints,omitempty"` // an external cluster: not launched, faults impossible
	Options   map[string]string `yaml:"options,omitempty"`   // launcher options (docs/targets-*.md)
	Driver    map[string]string `yaml:"driver,omitempty"`    // driver properties (e.g. redis.wait: 1)
	KeepData  bool              `yaml:"keep_data,omitempty"`
}

// Workload names a YCSB workload file and property overrides.
type Workload struct {
	YCSB       string            `yaml:"ycsb"`                 // a file in workloads/ (e.g. workloada) or a path
	Properties map[string]string `yaml:"properties,omitempty"` // YCSB properties, win over the file
}

// Load says how hard and how long.
type Load struct {
	Threads     int  `yaml:"threads,omitempty"`
	LoadThreads int  `yaml:"load_threads,omitempty"` // threads of the load (insert) phase
	Rate        Rate `yaml:"rate,omitempty"`
	// LoadRate is the load (insert) phase's rate: ops/s or max (the
	// default: as fast as it goes). A percentage is refused: the capacity
	// is calibrated after the load phase.
	LoadRate    Rate     `yaml:"load_rate,omitempty"`
	Warmup      Duration `yaml:"warmup,omitempty"`
	Duration    Duration `yaml:"duration,omitempty"`
	Window      Duration `yaml:"window,omitempty"`
	OpTimeout   Duration `yaml:"op_timeout,omitempty"`
	Calibration Duration `yaml:"calibration,omitempty"` // closed-loop run that measures capacity when rate is a percentage
	SkipLoad    bool     `yaml:"skip_load,omitempty"`   // data is already there
	// Clients splits the measured run's threads into this many client
	// groups, each measured on its own (per-client spread); 0 = one per thread.
	Clients int `yaml:"clients,omitempty"`
	// ClientProcesses runs the client groups as that many separate local
	// faultbench processes (the property clients.process=true); needs
	// clients >= 1.
	ClientProcesses bool `yaml:"client_processes,omitempty"`
	// OpenThreads is the measured run's threads when it runs open loop
	// (a rate): empty for load.threads, a number, or OpenThreadsAuto to
	// size them from the calibration's latency (experiment sizes them;
	// docs/scenarios.md). The calibration keeps load.threads.
	OpenThreads string `yaml:"open_threads,omitempty"`
}

// Schedule is the fault plan: either explicit steps, or the failover
// shorthand of the NoSQL failover study (steady, fault, down, restore, after).
type Schedule struct {
	Steps    []Step    `yaml:"steps,omitempty"`
	Failover *Failover `yaml:"failover,omitempty"`
}

// Failover is the NoSQL failover study's test: steady load for Steady, Fault on Node, keep
// it down for Down, restore it (Restore action), observe for After.
type Failover struct {
	Fault   string     `yaml:"fault"`   // kill (default), stop, pause
	Node    string     `yaml:"node"`    // selector, default leader/primary per target
	Restore string     `yaml:"restore"` // start (default for kill/stop), resume (for pause)
	Steady  TimeWindow `yaml:"steady"`  // a time, or a window drawn per trial (30s..45s)
	Down    Duration   `yaml:"down"`
	After   Duration   `yaml:"after"`
}

// Step is one fault at a time relative to the start of the measured run.
type Step struct {
	At    TimeWindow `yaml:"at"` // a time, or a window drawn per trial (30s..45s)
	Fault string     `yaml:"fault"`
	Node  string     `yaml:"node,omitempty"` // required, except for crash-client
	As    string     `yaml:"as,omitempty"`
	Label string     `yaml:"label,omitempty"`
	// Hold is crash-client's parameter: how long the client commits without
	// flushing before it crashes (docs/faults.md).
	Hold Duration `yaml:"hold,omitempty"`
	// Count, Streaming and Bootstrap are the scaling actions' parameters
	// (docs/faults.md): how many nodes add-node adds (default 1), the
	// streaming throttle of add-node and remove-node (unthrottled, 5mbit,
	// 40mbit ...; default: the database's), and whether added nodes
	// bootstrap (stream their data before serving; default true).
	Count     int    `yaml:"count,omitempty"`
	Streaming string `yaml:"streaming,omitempty"`
	Bootstrap *bool  `yaml:"bootstrap,omitempty"`
	// Params are the parameters of other fault kinds, by name
	// (docs/faults.md); each kind declares its own.
	Params map[string]string `yaml:"params,omitempty"`
	// Concurrent injects the fault while earlier ones still hold: the step
	// does not wait for a healthy cluster first (chaos mode's second and
	// later faults of a cycle).
	Concurrent bool `yaml:"concurrent,omitempty"`
}

// FaultStep returns the step as the fault package runs it.
func (st Step) FaultStep() fault.Step {
	fs := fault.Step{At: st.At.D(), Action: fault.Action(st.Fault), Node: st.Node, As: st.As, Label: st.Label, Hold: st.Hold.D(),
		Count: st.Count, Streaming: st.Streaming, NoBootstrap: st.Bootstrap != nil && !*st.Bootstrap, Concurrent: st.Concurrent}
	if len(st.Params) > 0 || (st.Bootstrap != nil && *st.Bootstrap) {
		fs.Params = make(map[string]string, len(st.Params)+1)
		for k, v := range st.Params {
			fs.Params[k] = v
		}
		if st.Bootstrap != nil && *st.Bootstrap {
			fs.Params["bootstrap"] = "true" // set, so checked against the kind like false
		}
	}
	return fs
}

// Analysis holds the metric parameters (docs/metrics.md).
type Analysis struct {
	DownFraction    float64  `yaml:"down_fraction,omitempty"`     // 0.10: a window below this fraction of the baseline counts as down
	RecoverTol      float64  `yaml:"recover_tolerance,omitempty"` // 0.10
	Hold            Duration `yaml:"hold,omitempty"`              // 5s
	SteadyTolerance float64  `yaml:"steady_tolerance,omitempty"`  // 0.02
	SteadySpan      Duration `yaml:"steady_span,omitempty"`       // 10s
	// LatencyOp is the operation whose latency gives reconfiguration
	// time, peak latency and latency after vs before (ALL; NEW-ORDER for
	// the CumuloNimbo failure evaluation's TPC-C).
	LatencyOp string `yaml:"latency_op,omitempty"`
}

// Duration is a time.Duration written as "30s" in YAML.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalYAML writes the Go duration syntax.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML accepts "30s", "1m30s" or a bare number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration accepts Go syntax ("100ms", "2m") or a number of seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 100ms, 30s, 10m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// Rate is a target throughput: absolute ops/s, a percentage of the
// calibrated capacity, or "max" (closed loop).
type Rate struct {
	OpsPerSec float64 // > 0 absolute
	Percent   float64 // > 0 relative to capacity
	Max       bool    // closed loop, as fast as it goes
}

// String renders the rate as written in YAML.
func (r Rate) String() string {
	switch {
	case r.Percent > 0:
		return strconv.FormatFloat(r.Percent, 'f', -1, 64) + "%"
	case r.OpsPerSec > 0:
		return strconv.FormatFloat(r.OpsPerSec, 'f', -1, 64)
	case r.Max:
		return "max"
	}
	return ""
}

// IsZero reports an unset rate.
func (r Rate) IsZero() bool { return r == Rate{} }

// MarshalYAML writes "75%", "5000" or "max".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML reads "75%", "5000" or "max".
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseRate parses a rate.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return Rate{Max: true}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 1000 {
			return Rate{}, fmt.Errorf("rate %q: a percentage must be a number in (0, 1000]%%", s)
		}
		return Rate{Percent: f}, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return Rate{}, fmt.Errorf("rate %q: allowed are ops/s (e.g. 5000), a percentage of capacity (e.g. 75%%) or max", s)
	}
	return Rate{OpsPerSec: f}, nil
}

// OpenThreadsAuto as load.open_threads sizes the open loop's threads
// from the calibration's latency.
const OpenThreadsAuto = "auto"

// MaxThreads bounds load.threads and load.load_threads (the same bound as
// -threads of faultbench run).
const MaxThreads = 10000

// KnownChecks lists the check names a scenario may use with the
// workloads of reg (nil: workload.Builtin()): lost-writes, which works
// with any workload that writes rows, the history checkers
// (histcheck.Names: isolation, linearizable, bank, set), which judge the
// run's history.jsonl, and the checks the workloads own (TPC-C's
// tpcc-consistency, ...), sorted after lost-writes.
func KnownChecks(reg *workload.Registry) []string {
	if reg == nil {
		reg = workload.Builtin()
	}
	names := append(histcheck.Names(), reg.CheckNames()...)
	slices.Sort(names)
	return append([]string{"lost-writes"}, slices.Compact(names)...)
}

// CheckChecks refuses check names that are not in KnownChecks(reg), with
// the field of each and the list of the known ones.
func (s *Scenario) CheckChecks(reg *workload.Registry) error {
	known := KnownChecks(reg)
	var errs []error
	for i, c := range s.Checks {
		if !slices.Contains(known, c) {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("checks[%d]", i), Msg: fmt.Sprintf("%q: allowed %s", c, strings.Join(known, ", "))})
		}
	}
	return errors.Join(errs...)
}

// Load reads a scenario file, applies sets (path=value) and validates.
// Errors name the file and field.
func LoadFile(path string, sets []string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(b, path, sets)
}

// Parse decodes a scenario document; name is used in errors. Every error
// names where the value came from: the file and line, or the --set. Check
// names are those of the built-in workloads (ParseWith).
func Parse(b []byte, name string, sets []string) (*Scenario, error) {
	return ParseWith(b, name, sets, nil)
}

// ParseWith is Parse with the checks of the workloads of reg (nil:
// workload.Builtin()).
func ParseWith(b []byte, name string, sets []string, reg *workload.Registry) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if root.Kind == 0 {
		root = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a scenario is a mapping of name, target, workload, load, schedule, checks, analysis", name, root.Content[0].Line)
	}
	src := sources{}
	var errs []error
	checkKeys(&root, reflect.TypeOf(Scenario{}), "", name, src, &errs)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, s := range sets {
		path, value, ok := strings.Cut(s, "=")
		path = strings.TrimSpace(path)
		if !ok || path == "" {
			return nil, fmt.Errorf("--set %q: expected path=value (e.g. load.rate=100%%)", s)
		}
		expanded := []string{path + "=" + value}
		if f, ok := strings.CutPrefix(path, "scale."); ok {
			// the shortcut for the scenario's scaling steps (docs/scenarios.md)
			var err error
			if expanded, err = scaleSets(root.Content[0], f, value); err != nil {
				return nil, fmt.Errorf("--set %s=%s: %w", path, value, err)
			}
		}
		for _, e := range expanded {
			p, v, _ := strings.Cut(e, "=")
			field, keys, err := checkSet(strings.Split(p, "."), v)
			if err == nil {
				err = setPath(root.Content[0], keys, v, isListField(keys))
			}
			if err != nil {
				return nil, fmt.Errorf("--set %s=%s: %w", path, value, err)
			}
			src[field] = "--set " + path + "=" + value
		}
	}
	var sc Scenario
	if err := root.Content[0].Decode(&sc); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	sc.src = src
	errs = sc.checkExplicitZero(src)
	if err := sc.validate(reg); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	if len(errs) > 0 {
		for i, e := range errs {
			var fe *FieldError
			where := name
			if errors.As(e, &fe) {
				if s := src.sourceOf(fe.Field); s != "" {
					where = s
				}
			}
			errs[i] = fmt.Errorf("%s: %w", where, e)
		}
		return nil, errors.Join(errs...)
	}
	return &sc, nil
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// setPath sets a scalar at path inside a mapping node, creating mappings
// on the way; a numeric element indexes a sequence.
func setPath(n *yaml.Node, path []string, value string, list bool) error {
	leaf := yaml.Node{Kind: yaml.ScalarNode, Value: value}
	if list {
		leaf = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, it := range ListItems(value) {
			leaf.Content = append(leaf.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: it})
		}
	}
	for i, key := range path {
		last := i == len(path)-1
		switch n.Kind {
		case yaml.MappingNode:
			var child *yaml.Node
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == key {
					child = n.Content[j+1]
				}
			}
			if child == nil {
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, child)
			}
			if last {
				*child = leaf
				return nil
			}
			n = child
		case yaml.SequenceNode:
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 || idx >= len(n.Content) {
				return fmt.Errorf("%q is not an index of a %d-element list", key, len(n.Content))
			}
			if last {
				*n.Content[idx] = leaf
				return nil
			}
			n = n.Content[idx]
		default:
			return fmt.Errorf("%s is a single value, not a section", strings.Join(path[:i], "."))
		}
	}
	return nil
}

// UnmarshalYAML lets `schedule:` be a list of steps or a mapping that is
// either {steps: [...]} or the failover shorthand's fields directly.
func (s *Schedule) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		// strict: node.Decode would let unknown step fields (a typo'd
		// hold) pass silently
		if err := decodeStrict(n, &s.Steps); err != nil {
			return fmt.Errorf("schedule (line %d): %w", n.Line, err)
		}
		return nil
	case yaml.MappingNode:
		for j := 0; j+1 < len(n.Content); j += 2 {
			if k := n.Content[j].Value; k == "steps" || k == "failover" {
				type plain Schedule
				if err := decodeStrict(n, (*plain)(s)); err != nil {
					return fmt.Errorf("schedule (line %d): %w", n.Line, err)
				}
				return nil
			}
		}
		var f Failover
		if err := decodeStrict(n, &f); err != nil {
			return err
		}
		s.Failover = &f
		return nil
	case yaml.ScalarNode:
		if n.Value == "" || n.Tag == "!!null" {
			return nil
		}
	}
	return fmt.Errorf("line %d: schedule must be a list of steps or the failover fields (fault, node, steady, down, after)", n.Line)
}

// MarshalYAML writes the steps (the resolved form).
func (s Schedule) MarshalYAML() (any, error) {
	if s.Failover != nil && len(s.Steps) == 0 {
		return s.Failover, nil
	}
	return s.Steps, nil
}

func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

// Validate checks fields without knowing the targets (the runner checks
// the target kind, workload file and fault names against its registries),
// check names against the built-in workloads' (see CheckChecks).
func (s *Scenario) Validate() error { return s.validate(nil) }

// validate is Validate with the checks of the workloads of reg.
func (s *Scenario) validate(reg *workload.Registry) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		bad("name", "required")
	} else if strings.ContainsAny(s.Name, "/\\ ") {
		bad("name", "%q must not contain spaces or slashes", s.Name)
	}
	if s.Target.Kind == "" {
		bad("target.kind", "required (e.g. etcd, redis-cluster)")
	}
	if s.Target.Nodes < 0 || s.Target.Nodes > 64 {
		bad("target.nodes", "%d: allowed 1..64", s.Target.Nodes)
	}
	if s.Target.Replicas != nil && *s.Target.Replicas < 0 {
		bad("target.replicas", "must not be negative")
	}
	if s.Workload.YCSB == "" {
		bad("workload.ycsb", "required: a file in workloads/ (e.g. workloada) or a path")
	}
	if s.Load.Threads < 0 || s.Load.Threads > MaxThreads {
		bad("load.threads", "%d: allowed 1..%d", s.Load.Threads, MaxThreads)
	}
	if s.Load.Clients < 0 || (s.Load.Threads > 0 && s.Load.Clients > s.Load.Threads) || (s.Load.Threads == 0 && s.Load.Clients > 16) {
		bad("load.clients", "%d: allowed 1..load.threads client groups (0: one per thread)", s.Load.Clients)
	}
	if s.Load.ClientProcesses && s.Load.Clients < 1 {
		bad("load.client_processes", "needs load.clients: the number of client processes (1..load.threads)")
	}
	if ot := s.Load.OpenThreads; ot != "" && ot != OpenThreadsAuto {
		if n, err := strconv.Atoi(ot); err != nil || n < 1 || n > MaxThreads {
			bad("load.open_threads", "%q: allowed %s or 1..%d", ot, OpenThreadsAuto, MaxThreads)
		}
	}
	if s.Load.OpenThreads != "" && (s.Load.Rate.Max || s.Load.Rate.IsZero()) {
		bad("load.open_threads", "set, but load.rate is max (closed loop): the open loop's threads need a rate")
	}
	if s.Load.LoadThreads < 0 || s.Load.LoadThreads > MaxThreads {
		bad("load.load_threads", "%d: allowed 1..%d", s.Load.LoadThreads, MaxThreads)
	}
	if s.Load.LoadRate.Percent > 0 {
		bad("load.load_rate", "%s: allowed ops/s (e.g. 5000) or max; a percentage has nothing to refer to, the capacity is calibrated after the load phase", s.Load.LoadRate)
	}
	if s.Load.SkipLoad && !s.Load.LoadRate.IsZero() {
		bad("load.load_rate", "set, but load.skip_load skips the load phase")
	}
	if d := s.Load.Duration.D(); d > 0 {
		for i, st := range s.Schedule.Steps {
			if st.At.Latest() >= d {
				bad(fmt.Sprintf("schedule[%d].at", i), "%v is not before the end of the measured run (load.duration %v): the step would never run", st.At.Latest(), d)
			}
		}
		if f := s.Schedule.Failover; f != nil && f.Steady.Latest()+f.Down.D() >= d {
			bad("schedule.down", "steady %v + down %v is not before the end of the measured run (load.duration %v): the node would never be restored", f.Steady.Latest(), f.Down.D(), d)
		}
	}
	if w := s.Load.Window.D(); w != 0 && (w < 10*time.Millisecond || w > time.Hour) {
		bad("load.window", "%v: allowed 10ms..1h", w)
	}
	if s.Schedule.Failover != nil && len(s.Schedule.Steps) > 0 {
		bad("schedule", "give either steps or the failover fields, not both")
	}
	if f := s.Schedule.Failover; f != nil {
		if f.Steady.D() <= 0 || f.Down.D() <= 0 || f.After.D() < 0 {
			bad("schedule", "failover needs steady > 0, down > 0 and after >= 0")
		}
	}
	freg := fault.NewRegistry()
	for i, st := range s.Schedule.Steps {
		field := func(name string) string { return fmt.Sprintf("schedule[%d].%s", i, name) }
		action := fault.Action(st.Fault)
		switch {
		case st.Fault == "":
			bad(field("fault"), "required")
		case freg.ActsOnClient(action):
			if st.Node != "" && st.Node != fault.ClientNode {
				bad(field("node"), "%q: %s acts on the load's client, not on a cluster node; leave node out (or write %s)", st.Node, st.Fault, fault.ClientNode)
			}
			if st.As != "" {
				bad(field("as"), "%s acts on no node, so there is nothing to bind", st.Fault)
			}
		case freg.Nodeless(action):
			if st.Node != "" {
				bad(field("node"), "%q: %s acts on no existing node (it starts new ones); leave node out", st.Node, st.Fault)
			}
		case st.Node == "":
			bad(field("node"), "required (a name like n1, leader, primary, replica, random, any:N, or an `as` name)")
		}
		// the parameters, checked by the kind's own declaration (an
		// action the registry does not know is the runner's to report)
		_, perrs := freg.CheckParams(st.FaultStep())
		for _, e := range perrs {
			if e.Err == nil && len(e.Takers) > 0 {
				verb := "takes"
				if len(e.Takers) > 1 {
					verb = "take"
				}
				bad(field(paramField(st, e.Param)), "only %s %s %s, not %q", kind.Enumerate(e.Takers), verb, e.Param, st.Fault)
				continue
			}
			bad(field(paramField(st, e.Param)), "%v", e)
		}
	}
	if err := s.CheckChecks(reg); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	a := s.Analysis
	if a.DownFraction < 0 || a.DownFraction >= 1 || a.RecoverTol < 0 || a.RecoverTol >= 1 || a.SteadyTolerance < 0 || a.SteadyTolerance >= 1 {
		bad("analysis", "fractions must be in [0, 1)")
	}
	if s.UPB != nil {
		errs = append(errs, s.UPB.validate(s)...)
	}
	if s.Sweep != nil {
		errs = append(errs, s.Sweep.validate(s)...)
	}
	if s.Trials != nil {
		errs = append(errs, s.Trials.validate()...)
	}
	if s.Chaos != nil {
		errs = append(errs, s.Chaos.validate(freg, s.Load.Duration.D())...)
	}
	if s.Autoscale != nil {
		errs = append(errs, s.Autoscale.validate(s)...)
	}
	return errors.Join(errs...)
}

// paramField is the field of step st a fault parameter was written in:
// params.NAME, or the step's own field of that name.
func paramField(st Step, name string) string {
	if _, ok := st.Params[name]; ok {
		return "params." + name
	}
	return name
}

// Resolve fills defaults: threads, window, warm-up, calibration, the
// failover shorthand expanded into steps, and the duration from the schedule.
// defaultNode is the target's natural victim (leader, primary).
func (s *Scenario) Resolve(defaultNode string) {
	if s.Load.Threads == 0 {
		s.Load.Threads = 16
	}
	if s.Load.LoadThreads == 0 {
		s.Load.LoadThreads = s.Load.Threads
	}
	if s.Load.Rate.IsZero() {
		s.Load.Rate = Rate{Max: true}
	}
	if s.Load.Window == 0 {
		s.Load.Window = Duration(time.Second)
	}
	if s.Load.OpTimeout == 0 {
		s.Load.OpTimeout = Duration(10 * time.Second)
	}
	if s.Load.Calibration == 0 {
		s.Load.Calibration = Duration(15 * time.Second)
	}
	if f := s.Schedule.Failover; f != nil {
		if f.Fault == "" {
			f.Fault = string(fault.ActionKill)
		}
		if f.Node == "" {
			f.Node = defaultNode
		}
		if f.Restore == "" { // the action that undoes the fault: start after kill, resume after pause
			if rs := fault.NewRegistry().Restores(fault.Action(f.Fault)); len(rs) > 0 {
				f.Restore = string(rs[0])
			} else {
				f.Restore = string(fault.ActionStart)
			}
		}
		s.Schedule.Steps = []Step{
			{At: f.Steady, Fault: f.Fault, Node: f.Node, As: "victim", Label: f.Fault + " " + f.Node},
			{At: f.Steady.Add(f.Down), Fault: f.Restore, Node: "victim", Label: f.Restore + " victim"},
		}
		if s.Load.Duration == 0 {
			s.Load.Duration = s.derivedDuration()
		}
		s.Schedule.Failover = nil
	}
	sort.SliceStable(s.Schedule.Steps, func(i, j int) bool { return s.Schedule.Steps[i].At.From < s.Schedule.Steps[j].At.From })
	if s.Load.Duration == 0 {
		s.Load.Duration = s.derivedDuration()
	}
	if s.Analysis.DownFraction == 0 {
		s.Analysis.DownFraction = 0.10
	}
	if s.Analysis.RecoverTol == 0 {
		s.Analysis.RecoverTol = 0.10
	}
	if s.Analysis.Hold == 0 {
		s.Analysis.Hold = Duration(5 * time.Second)
	}
	if s.Analysis.SteadyTolerance == 0 {
		s.Analysis.SteadyTolerance = 0.02
	}
	if s.Analysis.SteadySpan == 0 {
		s.Analysis.SteadySpan = Duration(10 * time.Second)
	}
	if s.UPB != nil {
		s.UPB.resolve()
	}
}

// WorkloadPath finds the workload file: a path as given, else workloads/NAME
// relative to the scenario file's directory's parent or the working directory.
func (s *Scenario) WorkloadPath(scenarioFile string) (string, error) {
	cands := []string{s.Workload.YCSB}
	if !strings.ContainsRune(s.Workload.YCSB, filepath.Separator) {
		base := filepath.Dir(filepath.Dir(scenarioFile))
		cands = append(cands, filepath.Join("workloads", s.Workload.YCSB), filepath.Join(base, "workloads", s.Workload.YCSB))
	} else if !filepath.IsAbs(s.Workload.YCSB) {
		cands = append(cands, filepath.Join(filepath.Dir(scenarioFile), s.Workload.YCSB))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("field workload.ycsb: %q not found (looked in %s)", s.Workload.YCSB, strings.Join(cands, ", "))
}

// Marshal renders the scenario as YAML.
func (s *Scenario) Marshal() ([]byte, error) { return yaml.Marshal(s) }

// isListField reports whether the field at path (as checkSet returned it)
// is a list of single values.
func isListField(path []string) bool {
	t := reflect.TypeOf(Scenario{})
	for _, key := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == scheduleType:
			if _, err := strconv.Atoi(key); err == nil {
				t = stepsType.Elem()
				continue
			}
			_, types := scheduleFields()
			t = types[key]
		case t.Kind() == reflect.Struct:
			_, types := fieldsOf(t)
			t = types[key]
		case t.Kind() == reflect.Map, t.Kind() == reflect.Slice:
			t = t.Elem()
		default:
			return false
		}
		if t == nil {
			return false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Slice && isScalar(t.Elem())
}
