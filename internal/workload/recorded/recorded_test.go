package recorded

import (
	"errors"
	"testing"

	"github.com/faultbench/faultbench/internal/history"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// TestValueBase: a client process's values start after its writer base
// times ValueSpan, so two processes' values never collide; a bad base is
// refused naming the property.
func TestValueBase(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		want       int64
		err        bool
	}{
		{"one process", "", 0, false},
		{"worker 2 of 8 threads", "4", 4 * ValueSpan, false},
		{"negative", "-1", 0, true},
		{"not a number", "x", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := properties.New()
			if tc.base != "" {
				p.Set(KeyWriterBase, tc.base)
			}
			got, err := ValueBase(p)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("ValueBase = %d, %v; want %d (error %v)", got, err, tc.want, tc.err)
			}
			if u := p.Unknown(); len(u) > 0 {
				t.Fatalf("unknown keys %v", u)
			}
		})
	}
	a, b := Values{Base: 0}, Values{Base: 4 * ValueSpan}
	if x, y := a.Next(), b.Next(); x != 1 || y != 4*ValueSpan+1 {
		t.Fatalf("first values %d and %d", x, y)
	}
}

// TestDo: how Do records a transaction's outcome, and the process after
// an unknown one.
func TestDo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		atCommit bool
		err      error
		want     history.Outcome
		errText  string
		newProc  bool
	}{
		{"committed", true, nil, history.OK, "", false},
		{"before the commit", false, outcome.Classified(outcome.Timeout, "read", errors.New("slow")), history.Fail, "timeout", false},
		{"conflict at commit", true, outcome.Classified(outcome.Conflict, "commit", errors.New("serialization")), history.Fail, "conflict", false},
		{"commit lost", true, outcome.Classified(outcome.Timeout, "commit", errors.New("lost")), history.Unknown, "timeout", true},
		{"refusal", false, Refusal("insufficient balance"), history.Fail, "insufficient balance", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecording()
			p := NewProcess(3)
			op := history.Op{Mops: []history.Mop{{F: history.Read, Key: "x", Value: 5, HasValue: true}}}
			err := r.Do(&op, &p, func() (bool, error) { return tc.atCommit, tc.err })
			if !errors.Is(err, tc.err) || op.Outcome != tc.want || op.Error != tc.errText || op.Process != 3 {
				t.Fatalf("Do = %v: %+v", err, op)
			}
			if (tc.err != nil) == op.Mops[0].HasValue {
				t.Fatalf("read %+v after error %v", op.Mops[0], tc.err)
			}
			if got := p.ID() != 3; got != tc.newProc {
				t.Fatalf("process after: %d", p.ID())
			}
		})
	}
}

func TestIdent(t *testing.T) {
	for s, want := range map[string]bool{"bank": true, "la_x1": true, "": false, "1a": false, "a;drop": false, "a b": false} {
		if Ident(s) != want {
			t.Errorf("Ident(%q) = %v", s, !want)
		}
	}
}
