package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/faultbench/faultbench/internal/analyze"
	"github.com/faultbench/faultbench/internal/event"
	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
)

// LatencyBuckets are the upper bounds (seconds) of the latency histograms.
func LatencyBuckets() []float64 {
	return []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
}

// Metrics exports the measured phase to Prometheus:
//
//	faultbench_operations_total{op,outcome}            counter: completed operations by type and outcome (ok or an error class)
//	faultbench_behind_schedule_operations_total{op}    counter: operations that started behind schedule
//	faultbench_operation_latency_seconds{op}           histogram: intended-start latency of successful operations
//	faultbench_window_throughput_ops{op}               gauge: successful operations per second in the last closed window
//	faultbench_window_latency_seconds{op,quantile}     gauge: p50, p99 and max latency of the last closed window
//	faultbench_windows_total                           counter: closed windows
//	faultbench_phase_info{phase,run_dir}               gauge: 1 for the phase being measured
//	faultbench_phase_elapsed_seconds                   gauge: time since the phase's t = 0
//	faultbench_fault_active{fault,action,node}         gauge: 1 while a fault is injected and not restored, then 0
//	faultbench_faults_total                            counter: faults injected
//	faultbench_events_total{kind}                      counter: events logged (events.jsonl)
//
// op is an operation type or ALL. Counters and gauges follow the windows as
// they close (measure.Collector.OnWindow); the histogram is read from the
// run directory's hist/*.hlog interval logs at scrape time, so it is exact
// and costs nothing between scrapes. It is safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	ops     *prometheus.CounterVec
	behind  *prometheus.CounterVec
	tput    *prometheus.GaugeVec
	winLat  *prometheus.GaugeVec
	windows prometheus.Counter

	mu    sync.Mutex
	phase *Phase
	hists map[string]*histTail // by op (ALL included)
	names []string             // ops of hists, sorted

	latDesc, infoDesc, elapsedDesc, activeDesc, faultsDesc, eventsDesc *prometheus.Desc
}

// Phase is a measured phase to export.
type Phase struct {
	Name      string             // load or run
	Dir       string             // its run directory (hist/*.hlog are read from it)
	Ops       []string           // operation names (measure.Config.Ops)
	Collector *measure.Collector // windows and live figures
	Events    *event.Log         // fault state and event counts; may be nil
}

// NewMetrics returns metrics registered in a registry of their own (with
// the Go runtime and process collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "faultbench_operations_total",
			Help: "Completed operations by operation type (or ALL) and outcome (ok or error class)."}, []string{"op", "outcome"}),
		behind: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "faultbench_behind_schedule_operations_total",
			Help: "Operations that started later than their schedule allowed."}, []string{"op"}),
		tput: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "faultbench_window_throughput_ops",
			Help: "Successful operations per second in the last closed window."}, []string{"op"}),
		winLat: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "faultbench_window_latency_seconds",
			Help: "Intended-start latency of the last closed window: quantile 0.5, 0.99 or max."}, []string{"op", "quantile"}),
		windows: prometheus.NewCounter(prometheus.CounterOpts{Name: "faultbench_windows_total", Help: "Closed measurement windows."}),
		hists:   map[string]*histTail{},
		latDesc: prometheus.NewDesc("faultbench_operation_latency_seconds",
			"Intended-start latency of successful operations (from hist/*.hlog).", []string{"op"}, nil),
		infoDesc:    prometheus.NewDesc("faultbench_phase_info", "1 for the phase being measured.", []string{"phase", "run_dir"}, nil),
		elapsedDesc: prometheus.NewDesc("faultbench_phase_elapsed_seconds", "Time since the measured phase's t = 0.", nil, nil),
		activeDesc: prometheus.NewDesc("faultbench_fault_active",
			"1 while a fault is injected and not yet restored, 0 after.", []string{"fault", "action", "node"}, nil),
		faultsDesc: prometheus.NewDesc("faultbench_faults_total", "Faults injected.", nil, nil),
		eventsDesc: prometheus.NewDesc("faultbench_events_total", "Events logged, by kind.", []string{"kind"}, nil),
	}
	m.reg.MustRegister(m.ops, m.behind, m.tput, m.winLat, m.windows, (*phaseCollector)(m),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Attach starts exporting p: it sets p.Collector's OnWindow (before the
// collector runs). The returned function ends it after the collector was
// closed; the phase's figures stay exported until the next Attach.
func (m *Metrics) Attach(p Phase) (detach func()) {
	m.mu.Lock()
	m.phase = &p
	m.hists = map[string]*histTail{}
	m.names = nil
	for _, op := range append(append([]string(nil), p.Ops...), measure.AllOps) {
		m.hists[op] = &histTail{path: filepath.Join(p.Dir, measure.HistDir, strings.ToLower(op)+".hlog"),
			counts: make([]uint64, len(LatencyBuckets()))}
		m.names = append(m.names, op)
	}
	sort.Strings(m.names)
	m.mu.Unlock()
	p.Collector.OnWindow(m.observe)
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.tailAll() // the last windows, written when the collector closed
	}
}

// observe folds closed windows into the counters and gauges.
func (m *Metrics) observe(rows []measure.WindowRow) {
	for i := range rows {
		r := &rows[i]
		if r.OK > 0 {
			m.ops.WithLabelValues(r.Op, "ok").Add(float64(r.OK))
		}
		for _, c := range outcome.ErrorClasses() {
			if v := r.Errors[c]; v > 0 {
				m.ops.WithLabelValues(r.Op, c.String()).Add(float64(v))
			}
		}
		if r.Behind > 0 {
			m.behind.WithLabelValues(r.Op).Add(float64(r.Behind))
		}
		m.tput.WithLabelValues(r.Op).Set(r.Throughput())
		m.winLat.WithLabelValues(r.Op, "0.5").Set(r.P50Us / 1e6)
		m.winLat.WithLabelValues(r.Op, "0.99").Set(r.P99Us / 1e6)
		m.winLat.WithLabelValues(r.Op, "max").Set(r.MaxUs / 1e6)
		if r.Op == measure.AllOps {
			m.windows.Inc()
		}
	}
}

// phaseCollector collects the metrics computed at scrape time.
type phaseCollector Metrics

// Describe implements prometheus.Collector.
func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.latDesc, c.infoDesc, c.elapsedDesc, c.activeDesc, c.faultsDesc, c.eventsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	m := (*Metrics)(c)
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.phase
	if p == nil {
		return
	}
	m.tailAll()
	bounds := LatencyBuckets()
	for _, op := range m.names {
		h := m.hists[op]
		if h.total == 0 && op != measure.AllOps {
			continue // an operation type the workload does not use (yet)
		}
		buckets := make(map[float64]uint64, len(bounds))
		var cum uint64
		for i, b := range bounds {
			cum += h.counts[i]
			buckets[b] = cum
		}
		ch <- prometheus.MustNewConstHistogram(m.latDesc, h.total, h.sum, buckets, op)
	}
	ch <- prometheus.MustNewConstMetric(m.infoDesc, prometheus.GaugeValue, 1, p.Name, p.Dir)
	ch <- prometheus.MustNewConstMetric(m.elapsedDesc, prometheus.GaugeValue, p.Collector.Live().Elapsed.Seconds())
	var evs []event.Event
	if p.Events != nil {
		evs = p.Events.Events()
	}
	byKind := map[string]int{}
	for _, e := range evs {
		byKind[e.Kind]++
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		ch <- prometheus.MustNewConstMetric(m.eventsDesc, prometheus.CounterValue, float64(byKind[k]), k)
	}
	// every fault's latest state, in order of first injection
	faults := 0
	var keys [][3]string
	active := map[[3]string]float64{}
	for _, f := range analyze.FaultsFromEvents(evs) {
		if f.RestoreOnly() {
			continue
		}
		faults++
		key := [3]string{f.Label, f.Action, f.Node}
		if _, ok := active[key]; !ok {
			keys = append(keys, key)
		}
		active[key] = 0
		if !f.Restored() {
			active[key] = 1
		}
	}
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(m.activeDesc, prometheus.GaugeValue, active[k], k[0], k[1], k[2])
	}
	ch <- prometheus.MustNewConstMetric(m.faultsDesc, prometheus.CounterValue, float64(faults))
}

// tailAll reads what the interval logs gained since the last read. Called
// with mu held.
func (m *Metrics) tailAll() {
	for _, op := range m.names {
		m.hists[op].tail()
	}
}

// histTail follows one hist/<op>.hlog file and keeps its histogram in
// Prometheus buckets.
type histTail struct {
	path   string
	offset int64
	counts []uint64 // per bucket of LatencyBuckets, plus values above the last
	over   uint64
	total  uint64
	sum    float64 // seconds
}

// tail reads the complete lines appended since the last call.
func (h *histTail) tail() {
	f, err := os.Open(h.path)
	if err != nil {
		return // not written yet
	}
	defer f.Close()
	if _, err := f.Seek(h.offset, io.SeekStart); err != nil {
		return
	}
	rd := bufio.NewReaderSize(f, 64<<10)
	bounds := LatencyBuckets()
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return // EOF or a partial last line: read it next time
		}
		h.offset += int64(len(line))
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '"' || strings.HasPrefix(line, "StartTime") || strings.HasPrefix(line, "BaseTime") {
			continue
		}
		fields := strings.Split(line, ",")
		if len(fields) < 4 {
			continue
		}
		hist, err := hdrhistogram.Decode([]byte(fields[len(fields)-1]))
		if err != nil || hist.TotalCount() == 0 {
			continue
		}
		for _, b := range hist.Distribution() {
			if b.Count == 0 {
				continue
			}
			v := float64(b.To) / 1e6 // values are microseconds
			i := sort.SearchFloat64s(bounds, v)
			if i < len(bounds) {
				h.counts[i] += uint64(b.Count)
			} else {
				h.over += uint64(b.Count)
			}
			h.total += uint64(b.Count)
			h.sum += float64(b.Count) * float64(b.From+b.To) / 2 / 1e6
		}
	}
}

// Server is a running metrics endpoint.
type Server struct {
	Metrics *Metrics
	Addr    string // the address it listens on (the port resolved)
	srv     *http.Server
	served  chan struct{} // closed when Serve returned
	stop    chan struct{} // closed by Close
	once    sync.Once
}

// Serve listens on addr (host:port; port 0 picks one) and serves the
// metrics at /metrics until Close is called or ctx is done.
func Serve(ctx context.Context, addr string) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint: %w", err)
	}
	s := &Server{Metrics: NewMetrics(), Addr: ln.Addr().String(), served: make(chan struct{}), stop: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Metrics.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "faultbench: metrics at /metrics")
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		s.srv.Serve(ln) // returns http.ErrServerClosed after Shutdown
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.stop:
		}
	}()
	return s, nil
}

// URL returns the metrics URL.
func (s *Server) URL() string { return "http://" + s.Addr + "/metrics" }

// Close stops the endpoint, waiting at most 5 s for scrapes in flight.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = s.srv.Shutdown(ctx)
		<-s.served
	})
	return err
}
