package fault

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/fault/kind"
	"github.com/faultbench/faultbench/internal/launcher"
)

func TestValidateAcceptsGoodSchedule(t *testing.T) {
	s := Schedule{
		{At: 0, Action: ActionKill, Node: "leader", As: "victim"},
		{At: 10 * time.Second, Action: ActionPause, Node: "any:2", As: "frozen"},
		{At: 10 * time.Second, Action: ActionResume, Node: "frozen"},
		{At: 20 * time.Second, Action: ActionStart, Node: "victim"},
		{At: 30 * time.Second, Action: ActionRestart, Node: "n3", Label: "roll n3"},
		{At: 40 * time.Second, Action: ActionStop, Node: "all"},
		{At: 50 * time.Second, Action: ActionStart, Node: "all"},
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	tg, _ := fakeTarget(t, etcdRoles())
	if err := s.ValidateFor(NewRegistry(), tg.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name  string
		sched Schedule
		want  []string
	}{
		{"negative", Schedule{{At: -time.Second, Action: ActionKill, Node: "n1"}}, []string{"step 1", "negative"}},
		{"unsorted", Schedule{
			{At: 2 * time.Second, Action: ActionKill, Node: "n1"},
			{At: time.Second, Action: ActionStart, Node: "n1"},
		}, []string{"step 2", "time order", "1s comes after 2s"}},
		{"unknown action", Schedule{{Action: "explode", Node: "n1"}}, []string{`unknown fault action "explode"`, "known: " + strings.Join(NewRegistry().names(), ", ")}},
		{"empty node", Schedule{{Action: ActionKill}}, []string{"empty node selector", "leader"}},
		{"bad any", Schedule{{Action: ActionKill, Node: "any:0"}}, []string{"any:N"}},
		{"used before bound", Schedule{
			{At: 0, Action: ActionStart, Node: "victim"},
			{At: time.Second, Action: ActionKill, Node: "leader", As: "victim"},
		}, []string{"step 1", `"victim" is bound by step 2, which comes later`}},
		{"bound twice", Schedule{
			{Action: ActionKill, Node: "n1", As: "v"},
			{Action: ActionKill, Node: "n2", As: "v"},
		}, []string{"step 2", `as "v" is already bound by step 1`}},
		{"self reference", Schedule{{Action: ActionKill, Node: "v", As: "v"}}, []string{"the name this step binds"}},
		{"keyword as", Schedule{{Action: ActionKill, Node: "n1", As: "leader"}}, []string{"selector keyword"}},
		{"bad as", Schedule{{Action: ActionKill, Node: "n1", As: "my victim"}}, []string{"plain name"}},
	}
	for _, tc := range cases {
		err := tc.sched.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

func TestValidateForCluster(t *testing.T) {
	tg, _ := fakeTarget(t, etcdRoles())
	c := tg.Snapshot()
	err := Schedule{{Action: ActionKill, Node: "n7"}}.ValidateFor(NewRegistry(), c)
	if err == nil || !strings.Contains(err.Error(), `"n7" is neither a node of cluster fake-test (n1, n2, n3)`) {
		t.Errorf("unknown node: %v", err)
	}
	err = Schedule{{Action: ActionKill, Node: "leader", As: "n2"}}.ValidateFor(NewRegistry(), c)
	if err == nil || !strings.Contains(err.Error(), "also a node name") {
		t.Errorf("as = node name: %v", err)
	}
	// Without a cluster, a plain name is assumed to be a node name.
	if err := (Schedule{{Action: ActionKill, Node: "n7"}}).Validate(); err != nil {
		t.Errorf("n7 without cluster: %v", err)
	}
}

func TestRunOrderBindingAndEvents(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles()) // n2 leads
	log := &recLog{}
	reg := recRegistry(fl, log)
	sched := Schedule{
		{At: 0, Action: ActionKill, Node: "leader", As: "victim"},
		{At: 30 * time.Millisecond, Action: ActionStart, Node: "victim"},
		{At: 30 * time.Millisecond, Action: ActionPause, Node: "leader", Label: "freeze"},
		{At: 60 * time.Millisecond, Action: ActionResume, Node: "n1"},
	}
	// After the kill the fake cluster elects n1 (the launcher says so on the
	// next refresh); "start victim" must still mean n2.
	origInject := reg.m[ActionKill]
	reg.Register(ActionKill, func() Fault {
		f := origInject().(*recFault)
		return &hookFault{recFault: f, after: func() {
			fl.setRole("n2", launcher.RoleFollower)
			fl.setRole("n1", launcher.RoleLeader)
		}}
	})
	if err := Run(context.Background(), time.Now(), sched, tg, reg, NewResolver(nil)); err != nil {
		t.Fatal(err)
	}
	wantCalls := []string{
		"prepare kill n2", "inject kill n2", "effective kill n2",
		"prepare start n2", "inject start n2", "effective start n2",
		"prepare pause n1", "inject pause n1", "effective pause n1",
		"prepare resume n1", "inject resume n1", "effective resume n1",
		// cleanup in reverse order when Run ends
		"cleanup resume n1", "cleanup pause n1", "cleanup start n2", "cleanup kill n2",
	}
	if got := log.get(); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantCalls, "\n"))
	}
	wantEvents := []string{
		"cluster-healthy |before kill leader|victim",
		"fault-inject n2|kill leader|victim",
		"fault-injected n2|kill leader|victim",
		"fault-restore n2|start victim|victim",
		"fault-restored n2|start victim|victim",
		"cluster-healthy |before pause leader|freeze",
		"fault-inject n1|pause leader|freeze",
		"fault-injected n1|pause leader|freeze",
		"fault-restore n1|resume n1|step 4",
		"fault-restored n1|resume n1|step 4",
	}
	if got := kinds(tg.Events, event.ClusterHealthy, event.FaultInject, event.FaultInjected, event.FaultRestore, event.FaultRestored, event.FaultError); !reflect.DeepEqual(got, wantEvents) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
	}
	// Health was waited for before kill and pause only (start and resume repair).
	if n := fl.healthCalls(); n != 2 {
		t.Errorf("WaitHealthy called %d times, want 2", n)
	}
	// Steps fire no earlier than their time.
	start := tg.Events.Start()
	for _, e := range tg.Events.Events() {
		if e.Kind == event.FaultInject && e.Fault == "freeze" && e.Wall.Sub(start) < 30*time.Millisecond {
			t.Errorf("pause fired at %s, before its time 30ms", e.Wall.Sub(start))
		}
	}
}

// hookFault runs after() once its recFault injected.
type hookFault struct {
	*recFault
	after func()
}

func (h *hookFault) Inject(ctx context.Context, t *Cluster, nodes []string) error {
	err := h.recFault.Inject(ctx, t, nodes)
	h.after()
	return err
}

func TestRunContinuesAfterFailures(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles())
	log := &recLog{}
	reg := recRegistry(fl, log)
	sched := Schedule{
		{At: 0, Action: ActionKill, Node: "primary", As: "gone"}, // etcd has no primary
		{At: 0, Action: "broken", Node: "n1"},
		{At: 0, Action: ActionKill, Node: "n3"},
	}
	err := Run(context.Background(), time.Now(), sched, tg, reg, nil)
	if err == nil {
		t.Fatal("Run succeeded")
	}
	for _, want := range []string{"step 1", "no up node has role primary", "step 2", "broken on purpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	calls := log.get()
	if !contains(calls, "inject kill n3") {
		t.Errorf("step 3 did not run after failures: %v", calls)
	}
	errs := kinds(tg.Events, event.FaultError)
	if len(errs) != 2 || !strings.Contains(errs[0], "kill primary") || !strings.Contains(errs[1], "n1|broken n1: broken on purpose") {
		t.Errorf("fault errors: %q", errs)
	}
	if got := kinds(tg.Events, event.FaultInjected); !reflect.DeepEqual(got, []string{"fault-injected n3|kill n3|step 3"}) {
		t.Errorf("injected: %q", got)
	}
}

func TestRunInjectsAfterHealthDeadline(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles())
	fl.healthErr = errors.New("member n3 unhealthy")
	log := &recLog{}
	err := Run(context.Background(), time.Now(), Schedule{{Action: ActionKill, Node: "n1"}}, tg, recRegistry(fl, log), nil)
	if err == nil || !strings.Contains(err.Error(), "not healthy") || !strings.Contains(err.Error(), "before kill n1") {
		t.Errorf("err = %v", err)
	}
	if !contains(log.get(), "inject kill n1") {
		t.Error("kill was not injected after the health wait failed")
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles())
	log := &recLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, time.Now(), Schedule{{At: time.Hour, Action: ActionKill, Node: "n1"}}, tg, recRegistry(fl, log), nil)
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before step 1") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if len(log.get()) != 0 {
		t.Errorf("faults ran: %v", log.get())
	}
}

func TestRunRejectsInvalidScheduleUpFront(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles())
	log := &recLog{}
	sched := Schedule{
		{At: 0, Action: ActionKill, Node: "n1"},
		{At: time.Second, Action: ActionStart, Node: "n9"},
	}
	err := Run(context.Background(), time.Now(), sched, tg, recRegistry(fl, log), nil)
	if err == nil || !strings.Contains(err.Error(), "n9") {
		t.Fatalf("err = %v", err)
	}
	if len(log.get()) != 0 {
		t.Errorf("faults ran: %v", log.get())
	}
}

func TestRegistryUnknownListsKnown(t *testing.T) {
	_, err := NewRegistry().New("explode")
	// every kind, sorted (the list grows with every kind added)
	names := NewRegistry().names()
	if err == nil || !strings.Contains(err.Error(), "known: "+strings.Join(names, ", ")) || !sort.StringsAreSorted(names) ||
		!slices.Contains(names, "kill") || !slices.Contains(names, "partition") || !slices.Contains(names, "add-node") {
		t.Errorf("err = %v", err)
	}
	for _, a := range NewRegistry().Names() {
		f, err := NewRegistry().New(a)
		if err != nil || f.Name() != a {
			t.Errorf("New(%s) = %v, %v", a, f, err)
		}
		if want := a == ActionStart || a == ActionResume || a == ActionHeal || a == ActionDiskHeal || a == ActionClockReset || a == ActionRestore; IsRepair(f) != want {
			t.Errorf("IsRepair(%s) = %v", a, IsRepair(f))
		}
		if want := a == ActionCrashClient; IsClientFault(f) != want {
			t.Errorf("IsClientFault(%s) = %v", a, IsClientFault(f))
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRegistryKinds: every built-in fault has its description in package
// kind and agrees with it, and every built-in description has a fault.
func TestRegistryKinds(t *testing.T) {
	reg := NewRegistry()
	restores := map[string]bool{}
	for _, n := range reg.Kinds().Names() {
		k, _ := reg.Kinds().Lookup(n)
		for _, r := range k.Restores {
			restores[r] = true
		}
	}
	for _, a := range reg.Names() {
		t.Run(string(a), func(t *testing.T) {
			k, ok := reg.Kind(a)
			if !ok || k.Family == "" {
				t.Fatalf("no description (%+v)", k)
			}
			f, err := reg.New(a)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name() != a {
				t.Errorf("the fault calls itself %q", f.Name())
			}
			if IsRepair(f) != restores[string(a)] {
				t.Errorf("repairs %v, but being a kind's restore is %v", IsRepair(f), restores[string(a)])
			}
			if IsRepair(f) && len(k.Restores) > 0 {
				t.Errorf("a repair with restores %v", k.Restores)
			}
			if IsClientFault(f) != (k.Family == kind.Client) {
				t.Errorf("acts on the client %v, family %s", IsClientFault(f), k.Family)
			}
		})
	}
	if got, want := len(reg.Kinds().Names()), len(reg.Names()); got != want {
		t.Errorf("%d descriptions for %d faults", got, want)
	}
}

// TestFaultEventsCarryKind: fault-inject ... fault-error events carry the
// action and family of their kind, the other events none.
func TestFaultEventsCarryKind(t *testing.T) {
	tg, fl := fakeTarget(t, etcdRoles())
	reg := recRegistry(fl, &recLog{})
	sched := Schedule{
		{At: 0, Action: ActionKill, Node: "leader", As: "victim"},
		{At: 10 * time.Millisecond, Action: ActionStart, Node: "victim"},
		{At: 20 * time.Millisecond, Action: ActionPause, Node: "n1"},
		{At: 30 * time.Millisecond, Action: ActionResume, Node: "n1"},
		{At: 40 * time.Millisecond, Action: "broken", Node: "n3"},
	}
	_ = Run(context.Background(), time.Now(), sched, tg, reg, NewResolver(nil)) // "broken" fails
	want := map[string]string{"kill": "process", "start": "process", "pause": "pause", "resume": "pause", "broken": ""}
	seen := map[string]int{}
	for _, e := range tg.Events.Events() {
		switch e.Kind {
		case event.FaultInject, event.FaultInjected, event.FaultRestore, event.FaultRestored, event.FaultError:
			fam, ok := want[e.Action]
			if !ok || e.Family != fam || !strings.HasPrefix(e.Detail, e.Action) {
				t.Errorf("%s %q: action %q family %q", e.Kind, e.Detail, e.Action, e.Family)
			}
			seen[e.Kind]++
		default:
			if e.Action != "" || e.Family != "" {
				t.Errorf("%s event with action %q family %q", e.Kind, e.Action, e.Family)
			}
		}
	}
	if seen[event.FaultInject] != 3 || seen[event.FaultRestored] != 2 || seen[event.FaultError] == 0 {
		t.Errorf("fault events %v", seen)
	}
}

// TestParamsInFields: parameters given in Params show in the step's text
// and reach the fault as its fields would.
func TestParamsInFields(t *testing.T) {
	for _, tc := range []struct {
		st   Step
		want string
	}{
		{Step{Action: ActionAddNode, Params: map[string]string{"count": "3", "streaming": "5mbit"}}, "add-node 3 (streaming 5mbit)"},
		{Step{Action: ActionAddNode, Params: map[string]string{"bootstrap": "false"}}, "add-node 1 (bootstrap false)"},
		{Step{Action: ActionCrashClient, Params: map[string]string{"hold": "1s"}}, "crash-client (flushes held back 1s)"},
		{Step{Action: ActionAddNode, Params: map[string]string{"count": "nine"}}, "add-node 1"}, // left to validation
	} {
		if got := tc.st.detail(); got != tc.want {
			t.Errorf("detail of %+v = %q, want %q", tc.st, got, tc.want)
		}
	}
	st := Step{Action: ActionCrashClient, Params: map[string]string{"hold": "2s"}}
	f := &crashClientFault{}
	if err := configure(NewRegistry(), f, &st, "c"); err != nil || f.hold != 2*time.Second || st.Hold != 2*time.Second {
		t.Errorf("configure: %v, hold %v, step hold %v", err, f.hold, st.Hold)
	}
	st = Step{Action: ActionKill, Node: "n1", Params: map[string]string{"hold": "2s"}}
	if err := configure(NewRegistry(), &killFault{}, &st, ""); err == nil || !strings.Contains(err.Error(), "hold is a parameter of crash-client only") {
		t.Errorf("configure kill with hold: %v", err)
	}
}
