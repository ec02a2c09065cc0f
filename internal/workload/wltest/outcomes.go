package wltest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/workload/program"
	"github.com/faultbench/faultbench/internal/workload/recorded"
)

// Outcomes tests how a transactional workload records each error of a
// transaction (recorded.OutcomeOf) and that a terminal continues as a new
// process after an unknown outcome: for each case, build returns a
// workload of one-transaction operations on s (its load, if any, done),
// whose terminal 3 then runs two operations with the case's errors.
func Outcomes(t *testing.T, build func(t *testing.T, s *SerialStore) program.Program) {
	for _, tc := range []struct {
		name        string
		commitErr   error
		readErr     error
		want        history.Outcome
		newProcess  bool
		wantErrName string
	}{
		{name: "committed", want: history.OK},
		{name: "conflict at commit", commitErr: outcome.Classified(outcome.Conflict, "commit", errors.New("aborted")), want: history.Fail, wantErrName: "conflict"},
		{name: "commit lost", commitErr: outcome.Classified(outcome.Timeout, "commit", errors.New("connection lost")), want: history.Unknown, newProcess: true, wantErrName: "timeout"},
		{name: "commit unavailable", commitErr: outcome.Classified(outcome.Unavailable, "commit", errors.New("down")), want: history.Unknown, newProcess: true, wantErrName: "unavailable"},
		{name: "read failed before commit", readErr: outcome.Classified(outcome.Timeout, "read", errors.New("slow")), want: history.Fail, wantErrName: "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSerialStore()
			w := build(t, s)
			rec := &Collector{}
			w.(program.Historian).SetRecorder(rec)
			s.CommitErr, s.ReadErr = tc.commitErr, tc.readErr
			term := w.NewTerminal(3, 1)
			for range 2 {
				term.Next()
				err := term.Execute(context.Background(), s.DB())
				if (err != nil) != (tc.want != history.OK) {
					t.Fatalf("Execute = %v", err)
				}
			}
			ops := rec.Ops()
			op := ops[0]
			if op.Outcome != tc.want || op.Error != tc.wantErrName {
				t.Fatalf("outcome %s (%q), want %s (%q)", op.Outcome, op.Error, tc.want, tc.wantErrName)
			}
			if got := ops[1].Process != op.Process; got != tc.newProcess {
				t.Fatalf("processes %d then %d: new process %v, want %v", op.Process, ops[1].Process, got, tc.newProcess)
			}
			if op.Process != 3 {
				t.Fatalf("first process %d, want the worker id 3", op.Process)
			}
			if tc.newProcess && ops[1].Process != 3+recorded.ProcessStride {
				t.Fatalf("process after an unknown outcome %d, want %d", ops[1].Process, 3+recorded.ProcessStride)
			}
		})
	}
}

// Refused tests that a transactional workload refuses a target without
// transactions, naming what it lacks, before and when it runs, and an SQL
// dialect it does not speak.
func Refused(t *testing.T, w program.Program) {
	t.Helper()
	type redisLike struct{}
	err := w.(program.Requirer).CheckDB(program.DB{Driver: redisLike{}})
	if !errors.Is(err, program.ErrNoTransactions) || !strings.Contains(err.Error(), "transactions over several keys") {
		t.Fatalf("CheckDB = %v", err)
	}
	term := w.NewTerminal(0, 1)
	term.Next()
	if err := term.Execute(context.Background(), program.DB{Driver: redisLike{}}); !errors.Is(err, program.ErrNoTransactions) {
		t.Fatalf("Execute = %v", err)
	}
	if err := w.(program.Requirer).CheckDB(program.DB{SQL: func(context.Context) (program.SQLTx, error) { return nil, nil }, Dialect: "sqlite"}); err == nil {
		t.Fatal("an unknown SQL dialect is accepted")
	}
}
