package measure

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/runfile"
)

// WindowsHeader is the header row of windows.csv.
// It is windowsHeaderV3 with err_not_found after err_other, in the order of
// outcome.ErrorClasses.
const WindowsHeader = "start_ms,end_ms,phase,op,ok,err_timeout,err_unavailable,err_conflict,err_rejected,err_other,err_not_found," +
	"behind,mean_us,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,svc_mean_us,svc_p99_us,first_ok_ms,last_ok_ms," +
	"wake_n,wake_p50_us,wake_p99_us,wake_max_us,fail_max_us"

// windowsHeaderV4 is the header of windows.csv files written before the
// fail_max_us column; ReadWindows still reads them.
const windowsHeaderV4 = "start_ms,end_ms,phase,op,ok,err_timeout,err_unavailable,err_conflict,err_rejected,err_other,err_not_found," +
	"behind,mean_us,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,svc_mean_us,svc_p99_us,first_ok_ms,last_ok_ms," +
	"wake_n,wake_p50_us,wake_p99_us,wake_max_us"

// windowsHeaderV3 is the header of windows.csv files written before the
// err_not_found column; ReadWindows still reads them (not found counted 0).
const windowsHeaderV3 = windowsHeaderV2 + ",wake_n,wake_p50_us,wake_p99_us,wake_max_us"

// windowsHeaderV2 is the header of windows.csv files written before the
// wake-up lag columns; ReadWindows still reads them.
const windowsHeaderV2 = windowsHeaderV1 + ",first_ok_ms,last_ok_ms"

// windowsHeaderV1 is the header of windows.csv files written before the
// first_ok_ms and last_ok_ms columns; ReadWindows still reads them.
const windowsHeaderV1 = "start_ms,end_ms,phase,op,ok,err_timeout,err_unavailable,err_conflict,err_rejected,err_other,behind,mean_us,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,svc_mean_us,svc_p99_us"

// ClientsHeader is the header row of clients.csv.
const ClientsHeader = "client,ok,errors,mean_us,p50_us,p95_us,p99_us,max_us,throughput_ops"

// File names inside the run directory.
const (
	WindowsFile = "windows.csv"
	ClientsFile = "clients.csv"
	HistDir     = "hist"
	// DroppedFile lists, per window, the open-loop operations due in it that
	// never started (header DroppedHeader; windows without any are left
	// out). Its presence says the run recorded dropped operations.
	DroppedFile = "dropped.csv"
)

// DroppedHeader is the header line of dropped.csv.
const DroppedHeader = "start_ms,end_ms,dropped"

// HlogMaxDivisor is what the Interval_Max column of the .hlog files is the
// maximum (in µs) divided by: hdrhistogram-go's default ratio, so the column
// reads in seconds.
const HlogMaxDivisor = hdrhistogram.MsToNsRatio

// outputs are the open measurement files of a collector.
type outputs struct {
	files   []*os.File
	windows *bufio.Writer
	lat     []*hlog // per op, then ALL
	svc     []*hlog
	clients *bufio.Writer
	line    []byte
}

type hlog struct {
	buf *bufio.Writer
	w   *hdrhistogram.HistogramLogWriter
}

func createOutputs(cfg Config) (o *outputs, err error) {
	o = &outputs{}
	defer func() {
		if err != nil {
			for _, f := range o.files {
				f.Close()
			}
		}
	}()
	if err := os.MkdirAll(filepath.Join(cfg.Dir, HistDir), 0o755); err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	create := func(name string) (*bufio.Writer, error) {
		f, err := os.Create(filepath.Join(cfg.Dir, name))
		if err != nil {
			return nil, fmt.Errorf("measure: %w", err)
		}
		o.files = append(o.files, f)
		return bufio.NewWriterSize(f, 64<<10), nil
	}
	if o.windows, err = create(WindowsFile); err != nil {
		return nil, err
	}
	o.windows.WriteString(WindowsHeader + "\n")
	if o.clients, err = create(ClientsFile); err != nil {
		return nil, err
	}
	o.clients.WriteString(ClientsHeader + "\n")
	names := append(append([]string(nil), cfg.Ops...), AllOps)
	for _, op := range names {
		for _, service := range []bool{false, true} {
			name := opFileName(op)
			what := "intended-start latency"
			if service {
				name += "-service"
				what = "service time"
			}
			b, err := create(filepath.Join(HistDir, name+".hlog"))
			if err != nil {
				return nil, err
			}
			h := &hlog{buf: b, w: hdrhistogram.NewHistogramLogWriter(b)}
			if err := h.header(cfg, op, what); err != nil {
				return nil, err
			}
			if service {
				o.svc = append(o.svc, h)
			} else {
				o.lat = append(o.lat, h)
			}
		}
	}
	if err := o.flush(); err != nil {
		return nil, err
	}
	return o, nil
}

// header writes the standard interval log header. StartTime and BaseTime are
// written with millisecond precision in the Java HdrHistogram format (the
// library's OutputStartTime/OutputBaseTime truncate to whole seconds);
// interval timestamps are then seconds since Config.Start.
func (h *hlog) header(cfg Config, op, what string) error {
	startMs := cfg.Start.UnixMilli()
	secs := float64(startMs) / 1000
	iso := time.UnixMilli(startMs).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	h.w.SetBaseTime(startMs)
	for _, f := range []func() error{
		func() error {
			return h.w.OutputComment(fmt.Sprintf("[faultbench %s of %s; values in microseconds; Interval_Max = max µs / %.0f (seconds); window %v]",
				what, op, HlogMaxDivisor, cfg.Window))
		},
		h.w.OutputLogFormatVersion,
		func() error {
			return h.w.OutputComment(fmt.Sprintf("[StartTime: %.3f (seconds since epoch), %s]", secs, iso))
		},
		func() error { return h.w.OutputComment(fmt.Sprintf("[BaseTime: %.3f (seconds since epoch)]", secs)) },
		h.w.OutputLegend,
	} {
		if err := f(); err != nil {
			return fmt.Errorf("measure: writing hlog header: %w", err)
		}
	}
	return nil
}

func (h *hlog) interval(hist *hdrhistogram.Histogram, startMs, endMs int64) error {
	hist.SetStartTimeMs(startMs)
	hist.SetEndTimeMs(endMs)
	return h.w.OutputIntervalHistogram(hist)
}

// writeWindow appends a closed window's rows to windows.csv and its
// histograms to the interval logs, then flushes every file.
func (o *outputs) writeWindow(c *Collector, rows []WindowRow, t0 time.Time, start, end time.Duration) error {
	for i := range rows {
		o.line = appendRow(o.line[:0], &rows[i])
		o.windows.Write(o.line)
	}
	startMs, endMs := t0.Add(start).UnixMilli(), t0.Add(end).UnixMilli()
	for op := range c.agg {
		if !c.used[op] {
			continue
		}
		if err := o.lat[op].interval(c.agg[op].lat, startMs, endMs); err != nil {
			return fmt.Errorf("measure: writing hlog: %w", err)
		}
		if err := o.svc[op].interval(c.agg[op].svc, startMs, endMs); err != nil {
			return fmt.Errorf("measure: writing hlog: %w", err)
		}
	}
	all := len(o.lat) - 1
	c.all.ensure()
	if err := o.lat[all].interval(c.all.lat, startMs, endMs); err != nil {
		return fmt.Errorf("measure: writing hlog: %w", err)
	}
	if err := o.svc[all].interval(c.all.svc, startMs, endMs); err != nil {
		return fmt.Errorf("measure: writing hlog: %w", err)
	}
	return o.flush()
}

func (o *outputs) flush() error {
	ws := []*bufio.Writer{o.windows, o.clients}
	for i := range o.lat {
		ws = append(ws, o.lat[i].buf, o.svc[i].buf)
	}
	for _, w := range ws {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("measure: %w", err)
		}
	}
	return nil
}

// writeClients writes clients.csv's rows.
func (o *outputs) writeClients(clients []clientTotals, d time.Duration) error {
	for i, cl := range clients {
		b := o.line[:0]
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, cl.ok, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, cl.errors, 10)
		var mean float64
		var ps []int64
		var maxUs int64
		if cl.lat != nil && cl.lat.TotalCount() > 0 {
			mean = round3(cl.lat.Mean())
			ps = cl.lat.ValueAtPercentilesSlice([]float64{50, 95, 99})
			maxUs = cl.lat.Max()
		} else {
			ps = []int64{0, 0, 0}
		}
		b = append(b, ',')
		b = appendFloat(b, mean)
		for _, p := range ps {
			b = append(b, ',')
			b = strconv.AppendInt(b, p, 10)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, maxUs, 10)
		var tp float64
		if d > 0 {
			tp = float64(cl.ok) / d.Seconds()
		}
		b = append(b, ',')
		b = appendFloat(b, round3(tp))
		b = append(b, '\n')
		o.line = b
		o.clients.Write(b)
	}
	return o.flush()
}

func (o *outputs) close() error {
	err := o.flush()
	for _, f := range o.files {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("measure: %w", cerr)
		}
	}
	return err
}

// appendRow formats one windows.csv line.
func appendRow(b []byte, r *WindowRow) []byte {
	b = appendMs(b, r.Start)
	b = append(b, ',')
	b = appendMs(b, r.End)
	b = append(b, ',')
	b = append(b, r.Phase...)
	b = append(b, ',')
	b = append(b, r.Op...)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.OK, 10)
	for _, cls := range outcome.ErrorClasses() {
		b = append(b, ',')
		b = strconv.AppendInt(b, r.Errors[cls], 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Behind, 10)
	for _, v := range [...]float64{r.MeanUs, r.P50Us, r.P90Us, r.P95Us, r.P99Us, r.P999Us, r.MaxUs, r.SvcMeanUs, r.SvcP99Us} {
		b = append(b, ',')
		b = appendFloat(b, v)
	}
	for _, d := range [...]time.Duration{r.FirstOK, r.LastOK} {
		b = append(b, ',')
		if r.OK > 0 && r.OKTimes {
			b = appendMs(b, d)
		}
	}
	b = append(b, ',')
	if r.WakeN > 0 {
		b = strconv.AppendInt(b, r.WakeN, 10)
	}
	for _, v := range [...]float64{r.WakeP50Us, r.WakeP99Us, r.WakeMaxUs} {
		b = append(b, ',')
		if r.WakeN > 0 {
			b = appendFloat(b, v)
		}
	}
	b = append(b, ',')
	if r.FailureCount() > 0 {
		b = appendFloat(b, r.FailMaxUs)
	}
	return append(b, '\n')
}

// appendMs writes d in milliseconds with at most 3 decimals (µs precision).
func appendMs(b []byte, d time.Duration) []byte {
	us := (d + time.Microsecond/2) / time.Microsecond
	return strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64)
}

func appendFloat(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'f', -1, 64) }

// ReadWindows parses a windows.csv written by a Collector. Index is the
// window number (rows of one window share a start); the rows of a last
// window shorter than the first are marked Partial.
func ReadWindows(path string) ([]WindowRow, error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.FieldsPerRecord = -1
	rd.ReuseRecord = true
	head, err := rd.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file (no header)", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	got := strings.Join(head, ",")
	failMax := got == WindowsHeader               // older files have no fail_max_us column
	notFound := failMax || got == windowsHeaderV4 // older still no err_not_found column
	if !notFound && got != windowsHeaderV3 && got != windowsHeaderV2 && got != windowsHeaderV1 {
		return nil, fmt.Errorf("%s: line 1: header %q, want %q", path, got, WindowsHeader)
	}
	want := len(head)
	var rows []WindowRow
	index := -1
	var lastStart time.Duration
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) != want {
			return nil, fmt.Errorf("%s: line %d: %d fields, want %d", path, line, len(rec), want)
		}
		r, err := parseRow(rec, notFound)
		if err == nil && failMax && rec[len(rec)-1] != "" {
			r.FailMaxUs, err = strconv.ParseFloat(rec[len(rec)-1], 64)
			if err != nil {
				err = fmt.Errorf("column %d (fail_max_us): %w", len(rec), err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		if index < 0 || r.Start != lastStart {
			index++
			lastStart = r.Start
		}
		r.Index = index
		rows = append(rows, r)
	}
	if len(rows) > 0 {
		first := rows[0].End - rows[0].Start
		lastIdx := rows[len(rows)-1].Index
		for i := len(rows) - 1; i >= 0 && rows[i].Index == lastIdx; i-- {
			if lastIdx > 0 && rows[i].End-rows[i].Start < first {
				rows[i].Partial = true
			}
		}
	}
	if err := readDropped(filepath.Join(filepath.Dir(path), DroppedFile), rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// writeDropped writes dir/dropped.csv from the windows' dropped counts.
func writeDropped(dir string, wins []winEntry) error {
	b := []byte(DroppedHeader + "\n")
	for i := range wins {
		w := &wins[i]
		if w.dropped == 0 {
			continue
		}
		b = appendMs(b, w.start)
		b = append(b, ',')
		b = appendMs(b, w.end)
		b = append(b, ',')
		b = strconv.AppendInt(b, w.dropped, 10)
		b = append(b, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, DroppedFile), b, 0o644); err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	return nil
}

// readDropped adds the counts of a dropped.csv (if it exists) to the ALL
// rows of the windows with the same start.
func readDropped(path string, rows []WindowRow) error {
	b, err := runfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	all := map[time.Duration]int{}
	for i := range rows {
		if rows[i].Op == AllOps {
			all[rows[i].Start] = i
		}
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != DroppedHeader {
		return fmt.Errorf("%s: line 1: header %q, want %q", path, lines[0], DroppedHeader)
	}
	for n, line := range lines[1:] {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			return fmt.Errorf("%s: line %d: %d fields, want 3", path, n+2, len(f))
		}
		startMs, err1 := strconv.ParseFloat(f[0], 64)
		cnt, err2 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil || cnt < 0 {
			return fmt.Errorf("%s: line %d: bad row %q", path, n+2, line)
		}
		start := time.Duration(math.Round(startMs*1000)) * time.Microsecond
		if i, ok := all[start]; ok {
			rows[i].Dropped += cnt
		}
	}
	return nil
}

// parseRow parses one windows.csv record; notFound says whether the file
// has the err_not_found column.
func parseRow(rec []string, notFound bool) (WindowRow, error) {
	var r WindowRow
	var err error
	col := 0
	ms := func() time.Duration {
		if err != nil {
			return 0
		}
		var v float64
		v, err = strconv.ParseFloat(rec[col], 64)
		if err != nil {
			err = fmt.Errorf("column %d: %w", col+1, err)
		}
		col++
		return time.Duration(math.Round(v*1000)) * time.Microsecond
	}
	integer := func() int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = strconv.ParseInt(rec[col], 10, 64)
		if err != nil {
			err = fmt.Errorf("column %d: %w", col+1, err)
		}
		col++
		return v
	}
	float := func() float64 {
		if err != nil {
			return 0
		}
		var v float64
		v, err = strconv.ParseFloat(rec[col], 64)
		if err != nil {
			err = fmt.Errorf("column %d: %w", col+1, err)
		}
		col++
		return v
	}
	r.Start = ms()
	r.End = ms()
	r.Phase, r.Op = rec[2], rec[3]
	col = 4
	if r.Phase != PhaseWarmup && r.Phase != PhaseRun {
		return r, fmt.Errorf("column 3: phase %q, want %q or %q", r.Phase, PhaseWarmup, PhaseRun)
	}
	r.OK = integer()
	for _, cls := range outcome.ErrorClasses() {
		if cls == outcome.NotFound && !notFound {
			continue
		}
		r.Errors[cls] = integer()
	}
	r.Behind = integer()
	for _, p := range []*float64{&r.MeanUs, &r.P50Us, &r.P90Us, &r.P95Us, &r.P99Us, &r.P999Us, &r.MaxUs, &r.SvcMeanUs, &r.SvcP99Us} {
		*p = float()
	}
	if col+2 <= len(rec) && err == nil {
		r.OKTimes = true
		if rec[col] != "" || rec[col+1] != "" || r.OK > 0 {
			r.FirstOK = ms()
			r.LastOK = ms()
			if err == nil && r.LastOK < r.FirstOK {
				err = fmt.Errorf("column %d: last_ok_ms before first_ok_ms", col)
			}
		} else {
			col += 2
		}
	}
	if col+4 <= len(rec) && err == nil && rec[col] != "" {
		r.WakeN = integer()
		r.WakeP50Us, r.WakeP99Us, r.WakeMaxUs = float(), float(), float()
	}
	return r, err
}
