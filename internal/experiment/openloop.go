package experiment

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/faultbench/faultbench/internal/scenario"
)

// Sizing the open loop's threads (load.open_threads: auto).
//
// An open-loop worker has a fixed schedule: it owes one operation every
// threads/rate seconds and is behind schedule when an operation starts
// more than that interval after its intended start, that is when the
// worker's previous operation took longer than the interval. By
// Little's law threads workers carry at most threads/latency operations
// per second, so a rate near what load.threads carry closed loop (75 %
// of the calibrated capacity) leaves each worker an interval close to
// one operation's latency, and the tail of the latency puts operations
// behind schedule (the validity rule then marks the run invalid, rightly:
// the offered load was not offered). auto gives every worker an interval
// of OpenThreadsMargin times the calibration's 99th-percentile latency:
//
//	threads = ceil(rate × p99(calibration) × OpenThreadsMargin)
//
// at least load.threads, at most MaxAutoOpenThreads. The calibration's
// latency is measured closed loop at saturation, so it bounds the latency
// at the lower open-loop rate from above. The bound keeps connections
// finite; a load that still cannot be carried stays behind schedule and
// the run is marked invalid.
const (
	OpenThreadsMargin  = 2
	MaxAutoOpenThreads = 256
)

// autoOpenThreads is the open loop's thread count for rate ops/s given
// the calibration's p99 latency, at least floor (load.threads), at most
// MaxAutoOpenThreads.
func autoOpenThreads(rate float64, p99 time.Duration, floor int) int {
	n := math.Ceil(rate * p99.Seconds() * OpenThreadsMargin)
	if math.IsNaN(n) || n < float64(floor) {
		return floor
	}
	if n > MaxAutoOpenThreads {
		return max(MaxAutoOpenThreads, floor)
	}
	return int(n)
}

// openThreads is the measured run's thread count and how it was chosen:
// load.threads unless the run is open loop and load.open_threads is a
// number or auto (then sized from p99, the calibration's latency; 0 when
// there was no calibration, which keeps load.threads).
func openThreads(ld scenario.Load, rate float64, p99 time.Duration) (int, string) {
	if rate <= 0 || ld.OpenThreads == "" {
		return ld.Threads, ""
	}
	if ld.OpenThreads != scenario.OpenThreadsAuto {
		n, err := strconv.Atoi(ld.OpenThreads)
		if err != nil || n < 1 {
			return ld.Threads, "" // refused by Validate
		}
		return n, fmt.Sprintf("load.open_threads %d", n)
	}
	if p99 <= 0 {
		return ld.Threads, "load.open_threads auto: no calibration latency, load.threads kept"
	}
	n := autoOpenThreads(rate, p99, ld.Threads)
	return n, fmt.Sprintf("load.open_threads auto: %.0f ops/s × calibration p99 %v × %d, within %d..%d: %d threads",
		rate, p99.Round(10*time.Microsecond), OpenThreadsMargin, ld.Threads, MaxAutoOpenThreads, n)
}
