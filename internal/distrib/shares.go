package distrib

import (
	"fmt"
	"strconv"

	"github.com/faultbench/faultbench/internal/experiment"
)

// Share is one worker's part of the phase.
type Share struct {
	Client  int
	Threads int
	// FirstThread is the number of the worker's first thread among all the
	// phase's threads: its threads write history values (lost-write tags)
	// as those writers, so values stay unique across workers.
	FirstThread int
	RateOps     float64 // 0: closed loop
	Operations  int64   // run phase operationcount share; 0: unbounded
	InsertStart int64
	InsertCount int64
	Seed        int64
}

// Whole is what is split.
type Whole struct {
	Threads     int
	RateOps     float64
	Operations  int64
	InsertStart int64
	InsertCount int64
	Seed        int64
}

// split divides n into k parts that differ by at most one, larger first.
func split(n int64, k int) []int64 {
	out := make([]int64, k)
	for i := range out {
		out[i] = n / int64(k)
		if int64(i) < n%int64(k) {
			out[i]++
		}
	}
	return out
}

// Split gives each of k workers its share: threads and operations split as
// evenly as whole numbers allow, the rate in proportion to the threads,
// and the insert key range [InsertStart, InsertStart+InsertCount) cut into
// k consecutive disjoint ranges (YCSB's insertstart/insertcount), so that
// no two workers insert the same key. Seeds differ per worker so that
// their key choices do not repeat each other.
func Split(w Whole, k int) ([]Share, error) {
	if k < 1 {
		return nil, fmt.Errorf("no client hosts")
	}
	if w.Threads < k {
		return nil, fmt.Errorf("threadcount %d is less than the %d client hosts: give every worker at least one thread (-threads %d or more)", w.Threads, k, k)
	}
	if w.InsertCount < int64(k) {
		return nil, fmt.Errorf("insertcount %d is less than the %d client hosts: every worker needs its own key range", w.InsertCount, k)
	}
	threads := split(int64(w.Threads), k)
	ops := split(w.Operations, k)
	keys := split(w.InsertCount, k)
	out := make([]Share, k)
	next := w.InsertStart
	first := 0
	for i := range out {
		s := Share{Client: i, Threads: int(threads[i]), FirstThread: first, InsertStart: next, InsertCount: keys[i], Seed: w.Seed + int64(i)}
		next += keys[i]
		first += s.Threads
		if w.RateOps > 0 {
			s.RateOps = w.RateOps * float64(threads[i]) / float64(w.Threads)
		}
		if w.Operations > 0 {
			s.Operations = ops[i]
			if s.Operations == 0 {
				return nil, fmt.Errorf("operationcount %d is less than the %d client hosts", w.Operations, k)
			}
		}
		out[i] = s
	}
	return out, nil
}

// props returns the worker's properties: base with its share set.
func (s Share) props(base map[string]string) map[string]string {
	m := make(map[string]string, len(base)+6)
	for k, v := range base {
		m[k] = v
	}
	m["threadcount"] = strconv.Itoa(s.Threads)
	m["target"] = strconv.FormatFloat(s.RateOps, 'f', -1, 64)
	if s.Operations > 0 {
		m["operationcount"] = strconv.FormatInt(s.Operations, 10)
	}
	m["insertstart"] = strconv.FormatInt(s.InsertStart, 10)
	m["insertcount"] = strconv.FormatInt(s.InsertCount, 10)
	m["seed"] = strconv.FormatInt(s.Seed, 10)
	m[experiment.KeyHistoryWriterBase] = strconv.Itoa(s.FirstThread)
	return m
}
