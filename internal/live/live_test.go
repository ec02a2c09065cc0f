package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConsole(t *testing.T) {
	tests := []struct {
		name   string
		term   bool
		steps  func(c *Console)
		expect string
	}{
		{"not a terminal: lines pass through, no bar", false, func(c *Console) {
			c.setBar("BAR")
			io.WriteString(c, "fault-inject n1\n")
			c.clearBar()
		}, "fault-inject n1\n"},
		{"terminal: the bar is erased before a line and drawn after", true, func(c *Console) {
			c.setBar("BAR1")
			io.WriteString(c, "fault-inject n1\n")
			c.setBar("BAR2")
			c.clearBar()
		}, "\r\x1b[KBAR1\r\x1b[Kfault-inject n1\nBAR1\r\x1b[KBAR2\r\x1b[K"},
		{"terminal: a partial line is never erased", true, func(c *Console) {
			c.setBar("BAR")
			io.WriteString(c, "half ")
			c.setBar("BAR2")
			io.WriteString(c, "line\n")
			c.clearBar()
		}, "\r\x1b[KBAR\r\x1b[Khalf line\nBAR2\r\x1b[K"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			c := &Console{w: &b, term: tc.term}
			tc.steps(c)
			if got := b.String(); got != tc.expect {
				t.Errorf("wrote %q, want %q", got, tc.expect)
			}
		})
	}
	if NewConsole(NewConsole(io.Discard)).Terminal() {
		t.Error("a buffer is not a terminal")
	}
}

type fakeSource struct {
	mu sync.Mutex
	l  measure.Live
}

func (f *fakeSource) Live() measure.Live {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.l
}

func TestBarText(t *testing.T) {
	live := measure.Live{Elapsed: 19 * time.Second, OK: 30000, Errors: 2, Behind: 12, LastOpsPerSec: 1702, LastP99Us: 4200}
	tests := []struct {
		name string
		p    Progress
		want []string
	}{
		{"by time", Progress{Phase: "run", Total: 39 * time.Second}, []string{"run [█████████░░░░░░░░░░░]  49% 0:19/0:39", "1702 ops/s", "p99 4.2ms", "err 2", "behind 12"}},
		{"by count", Progress{Phase: "load", Ops: 60000}, []string{"load [██████████░░░░░░░░░░]  50% 0:19 "}},
		{"unknown end", Progress{Phase: "run"}, []string{"run [", "] 0:19 "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.barText(live)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("bar %q lacks %q", got, w)
				}
			}
			if n := len([]rune(got)); n > 79 {
				t.Errorf("bar is %d columns wide: %q", n, got)
			}
		})
	}
}

func TestProgressLines(t *testing.T) {
	src := &fakeSource{l: measure.Live{Elapsed: 10 * time.Second, OK: 1000, Errors: 3, LastP99Us: 900}}
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Progress{Out: NewConsole(&out), Every: 20 * time.Millisecond, Phase: "run", Total: 60 * time.Second}.Run(ctx, src)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	first := strings.SplitN(out.String(), "\n", 2)[0]
	for _, want := range []string{"10 sec: 1003 operations;", "current ops/sec; p99 900 us (last window); errors 3", "0:50 left"} {
		if !strings.Contains(first, want) {
			t.Errorf("status line %q lacks %q", first, want)
		}
	}
}

// TestMetrics measures a few operations with a real collector, exports
// them and scrapes the endpoint on 127.0.0.1.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Second)
	col, err := measure.NewCollector(measure.Config{Dir: dir, Ops: []string{"READ", "UPDATE"}, Window: 100 * time.Millisecond,
		Start: start, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	evs := event.NewMemory(start)
	srv, err := Serve(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	detach := srv.Metrics.Attach(Phase{Name: "run", Dir: dir, Ops: []string{"READ", "UPDATE"}, Collector: col, Events: evs})
	rec := col.Recorder(0)
	for i := range 50 {
		at := start.Add(time.Duration(i) * 10 * time.Millisecond)
		class := outcome.OK
		if i%10 == 9 {
			class = outcome.Timeout
		}
		rec.Record(measure.Sample{Op: i % 2, Class: class, Intended: at, Started: at, Ended: at.Add(3 * time.Millisecond), Behind: i == 0})
	}
	evs.Add(event.Event{Kind: event.FaultInject, Node: "n1", Detail: "kill leader", Fault: "victim", Wall: start.Add(200 * time.Millisecond)})
	if _, err := col.Close(); err != nil {
		t.Fatal(err)
	}
	detach()

	text := scrape(t, srv.URL())
	tests := []struct{ name, line string }{
		{"ok reads", `faultbench_operations_total{op="READ",outcome="ok"} 25`},
		{"timeouts", `faultbench_operations_total{op="UPDATE",outcome="timeout"} 5`},
		{"all", `faultbench_operations_total{op="ALL",outcome="ok"} 45`},
		{"behind", `faultbench_behind_schedule_operations_total{op="ALL"} 1`},
		{"histogram count", `faultbench_operation_latency_seconds_count{op="ALL"} 45`},
		{"histogram bucket", `faultbench_operation_latency_seconds_bucket{op="READ",le="0.005"} 25`},
		{"fault state", `faultbench_fault_active{action="kill",fault="victim",node="n1"} 1`},
		{"faults", `faultbench_faults_total 1`},
		{"phase", `faultbench_phase_info{phase="run",run_dir="` + dir + `"} 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(text, tc.line+"\n") {
				t.Errorf("metrics lack %q:\n%s", tc.line, grep(text, "faultbench_"))
			}
		})
	}
	evs.Add(event.Event{Kind: event.FaultRestore, Node: "n1", Detail: "start victim", Fault: "victim"})
	if text := scrape(t, srv.URL()); !strings.Contains(text, `faultbench_fault_active{action="kill",fault="victim",node="n1"} 0`) {
		t.Errorf("fault not shown as restored:\n%s", grep(text, "fault"))
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %d", url, err, resp.StatusCode)
	}
	return string(b)
}

func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestServeBadAddress(t *testing.T) {
	_, err := Serve(context.Background(), "127.0.0.1:notaport")
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "metrics endpoint") {
		t.Errorf("error %v does not say what failed", err)
	}
}

func TestClock(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "0:00"}, {61 * time.Second, "1:01"}, {3723 * time.Second, "1:02:03"}} {
		t.Run(fmt.Sprint(tc.d), func(t *testing.T) {
			if got := clock(tc.d); got != tc.want {
				t.Errorf("clock(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}
