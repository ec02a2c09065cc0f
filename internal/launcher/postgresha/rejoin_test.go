package postgresha

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFollowProgress(t *testing.T) {
	// probes that report a sequence of looks, one per call; the last one
	// repeats
	seq := func(rs ...progressReport) func(context.Context) progressReport {
		i := 0
		return func(context.Context) progressReport {
			r := rs[min(i, len(rs)-1)]
			i++
			return r
		}
	}
	// a probe that moves on every call and is done after n calls
	moving := func(n int) func(context.Context) progressReport {
		i := 0
		return func(context.Context) progressReport {
			i++
			return progressReport{done: i > n, mark: strconv.Itoa(i), why: "backup " + strconv.Itoa(i)}
		}
	}
	tests := []struct {
		name    string
		probe   func(context.Context) progressReport
		stall   time.Duration
		timeout time.Duration
		wantErr error  // nil: success
		wantWhy string // in the error
	}{
		{"done at once", seq(progressReport{done: true}), time.Hour, time.Hour, nil, ""},
		// 40 polls of 1 ms with a stall limit of 20 ms: only the
		// progress keeps it waiting
		{"keeps waiting while it moves", moving(40), 20 * time.Millisecond, time.Hour, nil, ""},
		{"stalls", seq(progressReport{mark: "a", why: "n1 demoted->catchingup"}), 20 * time.Millisecond, time.Hour, errStalled, "n1 demoted->catchingup"},
		{"moves then stalls", seq(progressReport{mark: "a"}, progressReport{mark: "b", why: "at b"}), 20 * time.Millisecond, time.Hour, errStalled, "at b"},
		{"deadline while moving", moving(1 << 30), time.Hour, 30 * time.Millisecond, context.DeadlineExceeded, "backup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			err := followProgress(ctx, time.Millisecond, tc.stall, tc.probe)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("followProgress: %v, want success", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("followProgress error = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantWhy) {
				t.Fatalf("error %q does not say %q", err, tc.wantWhy)
			}
		})
	}
}

func TestStandbyOrPrimary(t *testing.T) {
	for goal, want := range map[string]bool{
		"secondary": true, "catchingup": true, "primary": true, "single": true, "wait_primary": true,
		"demoted": false, "draining": false, "report_lsn": false, "fast_forward": false, "wait_standby": false,
	} {
		if got := standbyOrPrimary(goal); got != want {
			t.Errorf("standbyOrPrimary(%q) = %v, want %v", goal, got, want)
		}
	}
}

func TestIsKeeperOf(t *testing.T) {
	cfg := config{autoctl: "/usr/bin/pg_autoctl"}
	want := runArgv(cfg, "/tmp/c/n1/pgdata")
	unshare := []string{"unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--"}
	tests := []struct {
		name         string
		args, parent []string
		want         bool
	}{
		{"the keeper", want, unshare, true},
		{"unclean data directory", []string{"/usr/bin/pg_autoctl", "run", "--pgdata", "/tmp/c/n1/pgdata/"}, []string{"/usr/bin/unshare"}, true},
		{"another node", runArgv(cfg, "/tmp/c/n2/pgdata"), unshare, false},
		{"a sub-process of the keeper", want, want, false},
		{"renamed sub-process", []string{"pg_autoctl: node active"}, want, false},
		{"no parent", want, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isKeeperOf(tc.args, tc.parent, want); got != tc.want {
				t.Fatalf("isKeeperOf(%q, %q) = %v, want %v", tc.args, tc.parent, got, tc.want)
			}
		})
	}
}
