package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/faultbench/faultbench/internal/measure"
	"github.com/faultbench/faultbench/internal/outcome"
	"github.com/faultbench/faultbench/internal/properties"
)

// RetryPolicy is what a client does when an attempt of an operation fails
// (property runner.retry). It is the runner's, not a driver's: the same
// policy on every database, so that a retry storm is a parameter of the
// experiment (docs/workloads.md, Client retry policies).
type RetryPolicy string

// The retry policies.
const (
	// RetryNone: a failed attempt is the operation's outcome.
	RetryNone RetryPolicy = "none"
	// RetryImmediate retries at once, up to Retry.Max times.
	RetryImmediate RetryPolicy = "immediate"
	// RetryBackoff waits before each retry, up to Retry.Max times: a pause
	// drawn uniformly from [0, min(Cap, Base·2^(n-1))) before the n-th
	// retry (exponential backoff with full jitter).
	RetryBackoff RetryPolicy = "backoff"
	// RetryBudget retries at once, up to Retry.Max times, while the run's
	// retry token bucket allows it (gRPC's retry throttling): the bucket
	// holds Tokens tokens and starts full; a failed attempt takes one, a
	// successful operation gives Ratio back; a retry is allowed only while
	// more than half the tokens are left. Retries are thus bounded to
	// about Ratio of the successful operations once failures persist.
	RetryBudget RetryPolicy = "budget"
)

// RetryPolicies lists the policies in the order documentation shows them.
var RetryPolicies = []RetryPolicy{RetryNone, RetryImmediate, RetryBackoff, RetryBudget}

// Retry is a client retry policy with its parameters (properties
// runner.retry, runner.retry.max, runner.retry.base, runner.retry.cap,
// runner.retry.budget.tokens, runner.retry.budget.ratio). The zero value
// retries nothing. Every attempt has its own deadline, Config.OpTimeout.
type Retry struct {
	Policy RetryPolicy
	Max    int           // retries after the first attempt, at most (immediate, backoff, budget)
	Base   time.Duration // backoff: the bound of the first pause
	Cap    time.Duration // backoff: the largest bound of a pause
	Tokens float64       // budget: the bucket's size
	Ratio  float64       // budget: tokens a successful operation gives back
}

// Retry parameters' defaults (DefaultRetry).
const (
	DefaultRetryMax    = 3
	DefaultRetryBase   = 10 * time.Millisecond
	DefaultRetryCap    = time.Second
	DefaultRetryTokens = 10
	DefaultRetryRatio  = 0.1
	// MaxRetries bounds Retry.Max.
	MaxRetries = 100
)

// DefaultRetry is policy p with the default parameters.
func DefaultRetry(p RetryPolicy) Retry {
	return Retry{Policy: p, Max: DefaultRetryMax, Base: DefaultRetryBase, Cap: DefaultRetryCap, Tokens: DefaultRetryTokens, Ratio: DefaultRetryRatio}
}

// Enabled reports whether the policy retries at all.
func (r Retry) Enabled() bool { return r.Policy != "" && r.Policy != RetryNone && r.Max > 0 }

// Validate checks the policy and its parameters.
func (r Retry) Validate() error {
	switch r.Policy {
	case "", RetryNone:
		return nil
	case RetryImmediate, RetryBackoff, RetryBudget:
	default:
		return fmt.Errorf("retry policy must be one of none, immediate, backoff, budget; got %q", r.Policy)
	}
	switch {
	case r.Max < 0 || r.Max > MaxRetries:
		return fmt.Errorf("retry max must be 0..%d, got %d", MaxRetries, r.Max)
	case r.Policy == RetryBackoff && (r.Base <= 0 || r.Cap < r.Base):
		return fmt.Errorf("backoff needs 0 < base <= cap, got base %v, cap %v", r.Base, r.Cap)
	case r.Policy == RetryBudget && (r.Tokens < 1 || r.Tokens > 1e6):
		return fmt.Errorf("budget tokens must be 1..1000000, got %g", r.Tokens)
	case r.Policy == RetryBudget && !(r.Ratio > 0 && r.Ratio <= 1):
		return fmt.Errorf("budget ratio must be in (0, 1], got %g", r.Ratio)
	}
	return nil
}

// String is the policy as env.json and reports show it.
func (r Retry) String() string {
	switch r.Policy {
	case "", RetryNone:
		return string(RetryNone)
	case RetryBackoff:
		return fmt.Sprintf("backoff (max %d, base %v, cap %v, full jitter)", r.Max, r.Base, r.Cap)
	case RetryBudget:
		return fmt.Sprintf("budget (max %d, tokens %g, ratio %g)", r.Max, r.Tokens, r.Ratio)
	}
	return fmt.Sprintf("%s (max %d)", r.Policy, r.Max)
}

// MeasureOps is the op list a collector for workload operations names
// needs under cfg: names, plus measure.RetryOp when cfg retries. The
// retry series' op number is len(names).
func MeasureOps(names []string, cfg Config) []string {
	if cfg.Phase != Run || !cfg.Retry.Enabled() {
		return names
	}
	return append(append([]string(nil), names...), measure.RetryOp)
}

// retryable reports whether an attempt that ended in class c is retried.
// An answer (OK, not found) is not.
func retryable(c outcome.Class) bool { return c != outcome.OK && c != outcome.NotFound }

// tokenBucket is the budget policy's bucket, shared by the run's workers:
// milli-tokens in one atomic, so that a successful operation costs one
// atomic add.
type tokenBucket struct {
	milli     atomic.Int64
	max, half int64
	gain      int64 // milli-tokens a success gives back
}

func newTokenBucket(tokens, ratio float64) *tokenBucket {
	b := &tokenBucket{max: int64(tokens * 1000), gain: max(int64(ratio*1000), 1)}
	b.half = b.max / 2
	b.milli.Store(b.max)
	return b
}

// success gives tokens back, up to the size.
func (b *tokenBucket) success() {
	if b.milli.Load() >= b.max {
		return
	}
	if v := b.milli.Add(b.gain); v > b.max {
		b.milli.CompareAndSwap(v, b.max)
	}
}

// failure takes a token and reports whether a retry is allowed (more than
// half the bucket was left before it).
func (b *tokenBucket) failure() bool {
	for {
		v := b.milli.Load()
		n := max(v-1000, 0)
		if b.milli.CompareAndSwap(v, n) {
			return v > b.half
		}
	}
}

// retrier is one worker's state of the retry policy.
type retrier struct {
	cfg    Retry
	op     int          // the retry series' op number in the collector
	bucket *tokenBucket // budget only; shared
	rng    *rand.Rand   // backoff jitter
	timer  *time.Timer
}

func newRetrier(cfg Retry, op int, bucket *tokenBucket, seed int64, worker int) *retrier {
	return &retrier{cfg: cfg, op: op, bucket: bucket, rng: rand.New(rand.NewPCG(uint64(seed), uint64(worker)+0x9e3779b97f4a7c15))}
}

// pause is the wait before retry n (1-based).
func (rt *retrier) pause(n int) time.Duration {
	if rt.cfg.Policy != RetryBackoff {
		return 0
	}
	bound := rt.cfg.Base
	for i := 1; i < n && bound < rt.cfg.Cap; i++ {
		bound *= 2
	}
	bound = min(bound, rt.cfg.Cap)
	return time.Duration(rt.rng.Int64N(int64(bound)) + 1)
}

// sleep waits d unless ctx ends or the run's deadline comes first; false
// when the retry must not be made.
func (rt *retrier) sleep(ctx context.Context, d time.Duration, deadline time.Time) bool {
	if d <= 0 {
		return true
	}
	if !deadline.IsZero() && !time.Now().Add(d).Before(deadline) {
		return false
	}
	if rt.timer == nil {
		rt.timer = time.NewTimer(d)
	} else {
		rt.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		rt.timer.Stop()
		return false
	case <-rt.timer.C:
		return true
	}
}

func (rt *retrier) stop() {
	if rt != nil && rt.timer != nil {
		rt.timer.Stop()
	}
}

// retry runs the attempts after a failed first one (err, which started at
// started): each failed attempt that is retried is recorded in the retry
// series with its own start and end; the last attempt's start, how many
// retries were made and its error are returned.
func (w *worker) retry(ctx context.Context, err error, started time.Time) (time.Time, int, error) {
	rt := w.retrier
	n := 0
	for ; n < rt.cfg.Max; n++ {
		cls := outcome.ClassOf(err)
		if !retryable(cls) || ctx.Err() != nil {
			break
		}
		if rt.bucket != nil && !rt.bucket.failure() {
			break
		}
		ended := time.Now()
		d := rt.pause(n + 1)
		if !w.deadline.IsZero() && !ended.Add(d).Before(w.deadline) {
			break
		}
		// the failed attempt is measured in the retry series: from its own
		// start, in the window it ended
		w.rec.Record(measure.Sample{Op: rt.op, Class: cls, Intended: started, Started: started, Ended: ended})
		if !rt.sleep(ctx, d, w.deadline) {
			break
		}
		w.retries++
		started = time.Now()
		w.nparts = 0
		err = w.attempt(ctx, started)
	}
	if rt.bucket != nil {
		if err == nil {
			rt.bucket.success()
		} else if n == rt.cfg.Max && retryable(outcome.ClassOf(err)) {
			rt.bucket.failure() // the last attempt failed too
		}
	}
	return started, n, err
}

// errNoRetryProgram says why a program workload takes no retry policy.
var errNoRetryProgram = errors.New("runner.retry applies to CoreWorkload operations only (a program workload retries on its own terms)")

// ReadClient reads the client behaviour properties of a run phase: the
// retry policy (runner.retry, runner.retry.max, runner.retry.base,
// runner.retry.cap, runner.retry.budget.tokens, runner.retry.budget.ratio)
// and the load spike (runner.spike.at, runner.spike.duration,
// runner.spike.factor). Errors name the property and where it was set.
func ReadClient(p *properties.Properties) (Retry, Spike, error) {
	var errs []error
	get := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	r := DefaultRetry(RetryPolicy(p.String("runner.retry", string(RetryNone))))
	n, err := p.Int("runner.retry.max", DefaultRetryMax)
	get(err)
	r.Max = int(n)
	r.Base, err = p.Duration("runner.retry.base", DefaultRetryBase, time.Millisecond)
	get(err)
	r.Cap, err = p.Duration("runner.retry.cap", DefaultRetryCap, time.Millisecond)
	get(err)
	r.Tokens, err = p.Float("runner.retry.budget.tokens", DefaultRetryTokens)
	get(err)
	r.Ratio, err = p.Float("runner.retry.budget.ratio", DefaultRetryRatio)
	get(err)
	var s Spike
	s.At, err = p.Duration("runner.spike.at", 0, time.Second)
	get(err)
	s.Duration, err = p.Duration("runner.spike.duration", 0, time.Second)
	get(err)
	s.Factor, err = p.Float("runner.spike.factor", 1)
	get(err)
	if len(errs) > 0 {
		return r, s, errors.Join(errs...)
	}
	if err := r.Validate(); err != nil {
		key := "runner.retry"
		switch {
		case r.Max < 0 || r.Max > MaxRetries:
			key = "runner.retry.max"
		case r.Policy == RetryBackoff:
			key = "runner.retry.base"
		case r.Policy == RetryBudget && (r.Tokens < 1 || r.Tokens > 1e6):
			key = "runner.retry.budget.tokens"
		case r.Policy == RetryBudget:
			key = "runner.retry.budget.ratio"
		}
		errs = append(errs, p.Error(key, "%v", err))
	}
	if err := s.Validate(); err != nil {
		key := "runner.spike.factor"
		if s.At < 0 {
			key = "runner.spike.at"
		} else if s.Duration < 0 {
			key = "runner.spike.duration"
		}
		errs = append(errs, p.Error(key, "%v", err))
	}
	return r, s, errors.Join(errs...)
}

// ClientSettings are the retry policy's, the spike's, the rate profile's
// and Busy's effective values by property key, for env.json's
// client_settings: runner.retry always; its parameters when it retries;
// the spike's and the rate profile's when there is one;
// runner.timeout.busy and its bound when it is on.
func (c Config) ClientSettings() map[string]string {
	r := c.Retry
	out := map[string]string{"runner.retry": string(RetryNone)}
	if r.Enabled() {
		out["runner.retry"] = string(r.Policy)
		out["runner.retry.max"] = strconv.Itoa(r.Max)
		switch r.Policy {
		case RetryBackoff:
			out["runner.retry.base"] = r.Base.String()
			out["runner.retry.cap"] = r.Cap.String()
		case RetryBudget:
			out["runner.retry.budget.tokens"] = strconv.FormatFloat(r.Tokens, 'g', -1, 64)
			out["runner.retry.budget.ratio"] = strconv.FormatFloat(r.Ratio, 'g', -1, 64)
		}
	}
	c.Busy.settings(out, c.Threads)
	if s := c.Spike; s.Enabled() {
		out["runner.spike.at"] = s.At.String()
		out["runner.spike.duration"] = s.Duration.String()
		out["runner.spike.factor"] = strconv.FormatFloat(s.Factor, 'g', -1, 64)
	}
	if c.Profile.Enabled() {
		out["runner.profile"] = c.Profile.String()
	}
	return out
}
