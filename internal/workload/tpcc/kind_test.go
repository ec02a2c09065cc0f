package tpcc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/runfile"
	"github.com/faultbench/faultbench/internal/workload/program"
)

// TestFiguresOfCorpus recomputes the tpcc part of every committed TPC-C
// summary.json (docs/results/data/tpcc) from the file's own totals: the
// figures and their encoding are what they were.
func TestFiguresOfCorpus(t *testing.T) {
	files, _ := runfile.Glob("../../../docs/results/data/tpcc/*/summary.json")
	if len(files) == 0 {
		t.Skip("no TPC-C corpus")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			b, err := runfile.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var sum struct {
				Totals struct {
					RunTimeMs float64 `json:"runtime_ms"`
					PerOp     map[string]struct {
						Count  int64            `json:"count"`
						OK     int64            `json:"ok"`
						Errors map[string]int64 `json:"errors"`
					} `json:"per_op"`
				} `json:"totals"`
				TPCC json.RawMessage `json:"tpcc"`
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			var old Figures
			if err := json.Unmarshal(sum.TPCC, &old); err != nil {
				t.Fatal(err)
			}
			in := program.Totals{RunTimeMs: sum.Totals.RunTimeMs, PerOp: map[string]program.OpTotals{}}
			for name, o := range sum.Totals.PerOp {
				in.PerOp[name] = program.OpTotals{Count: o.Count, OK: o.OK, Errors: o.Errors}
			}
			f := FiguresOf(in, old.Retries)
			// the rule check came after these summaries were written: its
			// fields are checked by TestCheckRules, and logged here
			if f.TpmCFlagged {
				t.Logf("tpmC flagged: %q", f.RuleViolations)
			}
			f.RuleViolations, f.TpmCFlagged = nil, false
			got, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, sum.TPCC); err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Errorf("figures %s\nin the file %s", got, want.String())
			}
		})
	}
}

// TestKind checks the registered kind: it builds the workload from
// properties, with a load phase and figures, owns the consistency check,
// and says when the driver has no transactions.
func TestKind(t *testing.T) {
	p := properties.New()
	p.Set(PropItems, "100")
	p.Set(PropCustomers, "30")
	prg, err := Kind{}.New(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := prg.(program.Loader); !ok || l.LoadUnits() == 0 {
		t.Error("no load phase")
	}
	if _, ok := prg.NewTerminal(0, 1).(program.LoadTerminal); !ok {
		t.Error("the terminal cannot load")
	}
	s, ok := prg.(program.Summarizer)
	if !ok {
		t.Fatal("no figures")
	}
	sum := s.Summarize(program.Totals{RunTimeMs: 120000, PerOp: map[string]program.OpTotals{
		"NEW-ORDER": {OK: 100, Errors: map[string]int64{outcome.Conflict.String(): 3}}, "PAYMENT": {OK: 80}}})
	if sum.Key != SummaryKey || len(sum.Figures) != 2 || sum.Figures[0].Value != 50 || sum.Figures[1].Value != 90 {
		t.Errorf("summary %+v", sum)
	}
	if f := sum.Data.(*Figures); f.Aborts["NEW-ORDER"] != 3 {
		t.Errorf("aborts %v", f.Aborts)
	}
	if err := prg.NewTerminal(0, 1).Execute(context.Background(), program.DB{}); !errors.Is(err, program.ErrNoTransactions) {
		t.Errorf("Execute without transactions: %v", err)
	}
	req, ok := prg.(program.Requirer)
	if !ok {
		t.Fatal("no CheckDB")
	}
	if err := req.CheckDB(program.DB{Driver: emptyStore{}}); !errors.Is(err, program.ErrNoTransactions) {
		t.Errorf("CheckDB without transactions: %v", err)
	}
	if err := req.CheckDB(program.DB{KV: func(context.Context) (Txn, error) { return nil, nil }}); err != nil {
		t.Errorf("CheckDB with key-value transactions: %v", err)
	}
	cs := Kind{}.Checks()
	if len(cs) != 1 || cs[0].Name != CheckConsistency {
		t.Fatalf("checks %+v", cs)
	}
	t.Run("check cannot be made", func(t *testing.T) {
		if _, err := cs[0].Run(context.Background(), prg, program.DB{Driver: struct{}{}}); err == nil {
			t.Error("a driver that can neither scan nor run SQL passed")
		}
		// a check that cannot be made is tried again until ctx ends
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := cs[0].Run(ctx, prg, program.DB{Driver: emptyStore{}}); !errors.Is(err, ErrNotLoaded) {
			t.Errorf("an empty database: %v", err)
		}
	})
}

// emptyStore is a ScanReader of an empty database.
type emptyStore struct{}

func (emptyStore) Read(context.Context, string, string, []string) (map[string][]byte, error) {
	return nil, outcome.ErrNotFound
}

func (emptyStore) Scan(context.Context, string, string, int, []string) ([]map[string][]byte, error) {
	return nil, nil
}
