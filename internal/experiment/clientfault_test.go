package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/driver"
	"github.com/faultbench/faultbench/internal/fault"
)

// plainDriver lacks the ClientCrasher ability; crasher has it.
type plainDriver struct{ driver.Driver }

type crasher struct{ driver.Driver }

func (crasher) CrashClient(context.Context, driver.ClientCrash) (driver.CrashedClient, error) {
	return driver.CrashedClient{}, nil
}

func (crasher) WaitClientRecovered(context.Context, driver.CrashedClient) (driver.ClientRecovery, error) {
	return driver.ClientRecovery{}, nil
}

func TestClientFaultsSupported(t *testing.T) {
	crash := fault.Step{At: 30 * time.Second, Action: fault.ActionCrashClient, Hold: time.Second}
	kill := fault.Step{At: 10 * time.Second, Action: fault.ActionKill, Node: "n1"}
	cases := []struct {
		name  string
		steps fault.Schedule
		d     driver.Driver
		want  []string // in the error; none: accepted
	}{
		{"node faults only, plain driver", fault.Schedule{kill}, plainDriver{}, nil},
		{"crash-client, crasher", fault.Schedule{kill, crash}, crasher{}, nil},
		{"crash-client, plain driver", fault.Schedule{kill, crash}, plainDriver{},
			[]string{"s.yaml: field schedule[1].fault", "crash-client", "the etcd driver cannot", "txkv's can"}},
		{"two crashes, plain driver", fault.Schedule{crash, crash}, plainDriver{},
			[]string{"field schedule[0].fault", "field schedule[1].fault"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := clientFaultsSupported("s.yaml", "etcd", tc.steps, fault.NewRegistry(), tc.d)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
