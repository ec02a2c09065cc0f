package fault

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/event"
)

func TestValidateClientFaults(t *testing.T) {
	cases := []struct {
		name  string
		sched Schedule
		want  []string // substrings of the error; none: valid
	}{
		{"no node", Schedule{{At: time.Second, Action: ActionCrashClient}}, nil},
		{"node client", Schedule{{Action: ActionCrashClient, Node: ClientNode}}, nil},
		{"hold", Schedule{{Action: ActionCrashClient, Hold: time.Second, Label: "crash"}}, nil},
		{"mixed with node faults", Schedule{
			{At: 0, Action: ActionKill, Node: "n1", As: "victim"},
			{At: time.Second, Action: ActionCrashClient, Hold: 500 * time.Millisecond},
			{At: 2 * time.Second, Action: ActionStart, Node: "victim"},
		}, nil},
		{"cluster node", Schedule{{Action: ActionCrashClient, Node: "n1"}}, []string{"step 1", "acts on the load's client", `not "n1"`}},
		{"as", Schedule{{Action: ActionCrashClient, As: "c"}}, []string{"step 1", `nothing to bind with as "c"`}},
		{"negative hold", Schedule{{Action: ActionCrashClient, Hold: -time.Second}}, []string{"hold -1s", "allowed 0..10m0s"}},
		{"long hold", Schedule{{Action: ActionCrashClient, Hold: time.Hour}}, []string{"hold 1h0m0s"}},
		{"hold on kill", Schedule{{Action: ActionKill, Node: "n1", Hold: time.Second}}, []string{"hold is a parameter of crash-client only, not of kill"}},
		{"out of order", Schedule{
			{At: 2 * time.Second, Action: ActionKill, Node: "n1"},
			{At: time.Second, Action: ActionCrashClient},
		}, []string{"step 2", "time order"}},
	}
	tg, _ := fakeTarget(t, etcdRoles())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sched.ValidateFor(NewRegistry(), tg.Snapshot())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error with %q, got none", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestClientSteps(t *testing.T) {
	s := Schedule{
		{Action: ActionKill, Node: "n1"},
		{Action: ActionCrashClient},
		{Action: ActionStart, Node: "n1"},
		{Action: ActionCrashClient, Hold: time.Second},
	}
	if got := s.ClientSteps(NewRegistry()); !reflect.DeepEqual(got, []int{1, 3}) {
		t.Errorf("ClientSteps = %v, want [1 3]", got)
	}
	if got := (Schedule{{Action: ActionKill, Node: "n1"}}).ClientSteps(NewRegistry()); len(got) != 0 {
		t.Errorf("ClientSteps of a node schedule = %v", got)
	}
}

func TestStepString(t *testing.T) {
	cases := []struct {
		st   Step
		want string
	}{
		{Step{At: time.Second, Action: ActionKill, Node: "leader", As: "victim"}, "at 1s: kill leader as victim"},
		{Step{At: 30 * time.Second, Action: ActionCrashClient}, "at 30s: crash-client"},
		{Step{At: 30 * time.Second, Action: ActionCrashClient, Node: ClientNode, Hold: time.Second}, "at 30s: crash-client (flushes held back 1s)"},
	}
	for _, tc := range cases {
		if got := tc.st.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.st, got, tc.want)
		}
	}
}

// plainDriver is a driver.Driver without the ClientCrasher ability.
type plainDriver struct{ driver.Driver }

// crashDriver is a driver.Driver with a scripted ClientCrasher ability.
type crashDriver struct {
	driver.Driver
	mu       sync.Mutex
	holds    []time.Duration
	crashErr error
	recErr   error
	rec      ClientRecovery
}

func (d *crashDriver) CrashClient(_ context.Context, hold time.Duration) (CrashedClient, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.holds = append(d.holds, hold)
	if d.crashErr != nil {
		return CrashedClient{}, d.crashErr
	}
	return CrashedClient{Name: "c1", ID: "7", At: time.Now(), Unflushed: 42, Replacement: "c1#1"}, nil
}

func (d *crashDriver) WaitClientRecovered(_ context.Context, c CrashedClient) (ClientRecovery, error) {
	if d.recErr != nil {
		time.Sleep(50 * time.Millisecond) // after fault-injected, as a real wait would be
		return ClientRecovery{}, d.recErr
	}
	r := d.rec
	r.Detected, r.Done = c.At.Add(3*time.Second), c.At.Add(3200*time.Millisecond)
	return r, nil
}

func TestRunCrashClient(t *testing.T) {
	cases := []struct {
		name       string
		load       driver.Driver
		wantEvents []string
		wantErr    string
		wantHolds  []time.Duration
	}{
		{
			name: "crashes and reports the recovery",
			load: &crashDriver{rec: ClientRecovery{Replayed: 40, Detail: "write-sets committed after T_F(c) 99"}},
			wantEvents: []string{
				"cluster-healthy |before crash-client (flushes held back 1s)|crash",
				"fault-inject |crash-client (flushes held back 1s)|crash",
				"client-crashed |client c1 (id 7) crashed with 42 committed write-sets not flushed; the load continues on c1#1|crash",
				"fault-injected |crash-client (flushes held back 1s)|crash",
				"client-failed |client c1 (id 7) declared failed after missed heartbeats, 3s after the crash|crash",
				"client-recovered |client c1: replayed 40 write-sets committed after T_F(c) 99 in 200ms (3.2s after the crash)|crash",
			},
			wantHolds: []time.Duration{time.Second},
		},
		{
			name:    "driver without the ability",
			load:    plainDriver{},
			wantErr: "cannot crash its client",
			wantEvents: []string{
				"cluster-healthy |before crash-client (flushes held back 1s)|crash",
				"fault-error |crash-client (flushes held back 1s): prepare: crash-client: the load's driver (fault.plainDriver) cannot crash its client|crash",
			},
		},
		{
			name:    "no load",
			wantErr: "no load runs here",
		},
		{
			name:      "crash fails",
			load:      &crashDriver{crashErr: errors.New("coordinator gone")},
			wantErr:   "coordinator gone",
			wantHolds: []time.Duration{time.Second},
		},
		{
			name:    "recovery not seen",
			load:    &crashDriver{recErr: errors.New("deadline")},
			wantErr: "", // the step itself succeeded; the watch reports a fault-error
			wantEvents: []string{
				"cluster-healthy |before crash-client (flushes held back 1s)|crash",
				"fault-inject |crash-client (flushes held back 1s)|crash",
				"client-crashed |client c1 (id 7) crashed with 42 committed write-sets not flushed; the load continues on c1#1|crash",
				"fault-injected |crash-client (flushes held back 1s)|crash",
				"fault-error |crash-client: deadline|crash",
			},
			wantHolds: []time.Duration{time.Second},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, _ := fakeTarget(t, etcdRoles())
			tg.Load = tc.load
			sched := Schedule{{Action: ActionCrashClient, Hold: time.Second, Label: "crash"}}
			err := Run(context.Background(), time.Now(), sched, tg, NewRegistry(), nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Run error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.wantEvents != nil {
				got := kinds(byTime(tg.Events), event.ClusterHealthy, event.FaultInject, event.FaultInjected, event.FaultError,
					EventClientCrashed, EventClientFailed, EventClientRecovered)
				if !reflect.DeepEqual(got, tc.wantEvents) {
					t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wantEvents, "\n"))
				}
			}
			if cd, ok := tc.load.(*crashDriver); ok && !reflect.DeepEqual(cd.holds, tc.wantHolds) {
				t.Errorf("CrashClient holds %v, want %v", cd.holds, tc.wantHolds)
			}
		})
	}
}

func TestApplyRejectsClientFault(t *testing.T) {
	tg, _ := fakeTarget(t, etcdRoles())
	tg.Load = &crashDriver{}
	_, err := Apply(context.Background(), tg, NewRegistry(), ActionCrashClient, "")
	if err == nil || !strings.Contains(err.Error(), "cannot reach it") || !strings.Contains(err.Error(), "scenario's schedule") {
		t.Fatalf("Apply crash-client: %v", err)
	}
	if n := len(tg.Load.(*crashDriver).holds); n != 0 {
		t.Errorf("the client was crashed %d times from Apply", n)
	}
}

// byTime returns a log with l's events in time order (the recovery events
// carry the database's times, earlier than when they are written).
func byTime(l *event.Log) *event.Log {
	evs := l.Events()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].T < evs[j].T })
	out := event.NewMemory(l.Start())
	for _, e := range evs {
		out.Add(e)
	}
	return out
}
