package measure

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/faultbench/faultbench/internal/runfile"
)

// HistLogs are the per-window intended-start latency histograms of a run
// directory's hist/<op>.hlog files (service-time logs are not read), kept
// encoded and decoded on demand. They let a span's percentiles be computed
// exactly, by merging its windows' histograms, instead of averaging the
// windows' percentiles.
type HistLogs struct {
	// ops maps the lower-case operation name ("all" for AllOps) to the
	// encoded histogram of each window, by window start in ms.
	ops map[string]map[int64][]byte
}

// ReadHistLogs reads every hist/<op>.hlog of the run directory dir. A
// directory without hist/ is an error (os.ErrNotExist); a malformed line is
// an error naming the file and line.
func ReadHistLogs(dir string) (*HistLogs, error) {
	paths, err := runfile.Glob(filepath.Join(dir, HistDir, "*.hlog"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no interval logs: %w", filepath.Join(dir, HistDir), os.ErrNotExist)
	}
	h := &HistLogs{ops: map[string]map[int64][]byte{}}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".hlog")
		if strings.HasSuffix(name, "-service") {
			continue
		}
		m, err := readHlogIntervals(p)
		if err != nil {
			return nil, err
		}
		h.ops[name] = m
	}
	return h, nil
}

// readHlogIntervals returns the encoded interval histograms of one log by the
// interval's start in ms since the log's base time.
func readHlogIntervals(path string) (map[int64][]byte, error) {
	f, err := runfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int64][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if s == "" || s[0] == '#' || s[0] == '"' {
			continue
		}
		if strings.HasPrefix(s, "Tag=") {
			if i := strings.IndexByte(s, ','); i >= 0 {
				s = s[i+1:]
			}
		}
		fields := strings.SplitN(s, ",", 4)
		if len(fields) != 4 {
			return nil, fmt.Errorf("%s: line %d: %d fields, want 4", path, line, len(fields))
		}
		secs, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: start %q: %w", path, line, fields[0], err)
		}
		out[int64(math.Round(secs*1000))] = []byte(fields[3])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// MergeWindow adds the histogram of op (AllOps for every operation) in the
// window starting at start into into. It reports false when the logs hold
// no interval for that window (or it cannot be decoded).
func (h *HistLogs) MergeWindow(op string, start time.Duration, into *hdrhistogram.Histogram) bool {
	if h == nil {
		return false
	}
	m := h.ops[opFileName(op)]
	if m == nil {
		return false
	}
	ms := int64(math.Round(float64(start) / float64(time.Millisecond)))
	enc, ok := m[ms]
	if !ok {
		// the log's times are whole ms of the wall clock: allow rounding
		if enc, ok = m[ms-1]; !ok {
			if enc, ok = m[ms+1]; !ok {
				return false
			}
		}
	}
	p, err := hdrhistogram.DecodePacked(enc)
	if err != nil {
		return false
	}
	p.MergeInto(into)
	return true
}

// NewLatencyHistogram returns an empty histogram of the package's geometry
// (µs, 1 µs to 1 h, 3 significant digits), to merge windows into.
func NewLatencyHistogram() *hdrhistogram.Histogram { return newHist() }
