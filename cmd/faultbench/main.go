// Command faultbench measures how distributed databases behave when things
// go wrong: it starts real clusters, drives them with YCSB-style load,
// injects faults and reports throughput, latency and availability.
//
// Run `faultbench help` for the commands; every command has --help with an
// example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
	"github.com/faultbench/faultbench/internal/experiment"
	"github.com/faultbench/faultbench/internal/properties"
	"github.com/faultbench/faultbench/internal/targets"
)

// Set by the Makefile with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	hidden  bool
	run     func(a *app, ctx context.Context, args []string) error
}

// app carries what every command needs.
type app struct {
	stdout, stderr io.Writer
	commands       []command
	targets        *targets.Registry // the database kinds; targets.Builtin() in main
	// failOnAnomaly: the command's --fail-on-anomaly (run, scenario): a
	// history checker's false verdict exits exitAnomaly.
	failOnAnomaly bool
}

// usageError is a command-line mistake: printed with a hint, exit code 2.
// usage, if set, prints the command's usage (to stderr, after the message).
type usageError struct {
	msg   string
	usage func(io.Writer)
}

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	// go-redis logs every failed dial (thousands during a crash fault) to
	// stderr unless told otherwise; keep them for FAULTBENCH_DEBUG=1.
	var redisLog io.Writer = io.Discard
	if os.Getenv("FAULTBENCH_DEBUG") != "" {
		redisLog = os.Stderr
	}
	goredis.SetLogger(redisdriver.LogWriter{W: redisLog})
	// A reader that goes away (`faultbench scenario ... | head`) must not
	// kill a run before its files are written. Go kills a program that
	// writes to a broken pipe on fd 1 or 2 unless SIGPIPE is notified
	// (signal.Ignore does not change that; see os/signal, "SIGPIPE"): with
	// Notify, such writes fail with EPIPE and the run goes on.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	a := &app{stdout: os.Stdout, stderr: os.Stderr, targets: targets.Builtin()}
	a.commands = commands()
	os.Exit(a.profiled(os.Args[1:]))
}

// clientProcs limits the load generator to half the machine's cores (at
// least one) unless GOMAXPROCS is set: faultbench usually shares the machine
// with the database it measures, and on two cores a client that schedules
// goroutines on both competes with the server it drives (measured: 60k vs 76k
// ops/s against one redis-server, docs/PERFORMANCE.md). Database nodes that
// the binary runs itself (`node ...`) keep every core.
func clientProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(1, runtime.NumCPU()/2))
	}
}

// profiled runs a.main, writing a CPU profile to $FAULTBENCH_CPUPROFILE if
// set, and a heap profile to $FAULTBENCH_MEMPROFILE if set, taken
// $FAULTBENCH_MEMPROFILE_AT after the start (a Go duration; default: at
// exit) so that a long run's live memory can be seen while it runs (for
// developers: `go tool pprof bin/faultbench FILE`).
func (a *app) profiled(args []string) int {
	if mp := os.Getenv("FAULTBENCH_MEMPROFILE"); mp != "" {
		write := func() {
			f, err := os.Create(mp)
			if err != nil {
				fmt.Fprintf(a.stderr, "faultbench: heap profile: %v\n", err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintf(a.stderr, "faultbench: heap profile: %v\n", err)
			}
		}
		if at, err := time.ParseDuration(os.Getenv("FAULTBENCH_MEMPROFILE_AT")); err == nil && at > 0 {
			t := time.AfterFunc(at, write)
			defer t.Stop()
		} else {
			defer write()
		}
	}
	path := os.Getenv("FAULTBENCH_CPUPROFILE")
	if path == "" {
		return a.main(args)
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(a.stderr, "faultbench: cpu profile: %v\n", err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(a.stderr, "faultbench: cpu profile: %v\n", err)
		return 1
	}
	defer pprof.StopCPUProfile()
	return a.main(args)
}

func (a *app) main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			if c := a.find(args[1]); c != nil {
				return a.exit(c.run(a, ctx, []string{"--help"}))
			}
		}
		a.usage(a.stdout)
		return 0
	}
	if args[0] == "version" || args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(a.stdout, versionLine())
		return 0
	}
	// YCSB's client takes -load and -t for the phase: `faultbench -t etcd ...`
	switch args[0] {
	case "-load", "--load":
		args = append([]string{"load"}, args[1:]...)
	case "-t", "--t":
		args = append([]string{"run"}, args[1:]...)
	}
	c := a.find(args[0])
	if c != nil && !c.hidden {
		clientProcs()
	}
	if c == nil {
		fmt.Fprintf(a.stderr, "faultbench: unknown command %q\n\n", args[0])
		a.usage(a.stderr)
		return 2
	}
	return a.exit(c.run(a, ctx, args[1:]))
}

func (a *app) exit(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		if ue.usage != nil {
			fmt.Fprintf(a.stderr, "faultbench: %s\n\n", ue.msg)
			ue.usage(a.stderr)
		} else {
			fmt.Fprintf(a.stderr, "faultbench: %s\n(see --help)\n", ue.msg)
		}
		return 2
	}
	if errors.Is(err, experiment.ErrAnomalies) {
		fmt.Fprintf(a.stderr, "faultbench: %v\n", err)
		return exitAnomaly
	}
	var ie *experiment.InvalidError
	var ve *properties.ValueError
	if errors.As(err, &ie) || errors.As(err, &ve) {
		// a property the user set (or must set) is wrong: bad input
		fmt.Fprintf(a.stderr, "faultbench: %v\n", err)
		return 2
	}
	fmt.Fprintf(a.stderr, "faultbench: %v\n", err)
	return 1
}

func (a *app) find(name string) *command {
	for i := range a.commands {
		if a.commands[i].name == name {
			return &a.commands[i]
		}
	}
	return nil
}

func (a *app) usage(w io.Writer) {
	fmt.Fprintln(w, `faultbench — how distributed databases behave when things go wrong

Usage: faultbench COMMAND [arguments]

Commands:`)
	cs := append([]command(nil), a.commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		if !c.hidden {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, `
Quick start:
  faultbench cluster up etcd --nodes 3
  faultbench load etcd -P workloads/workloada -p recordcount=10000 -threads 8
  faultbench run etcd -P workloads/workloada -p maxexecutiontime=30 -threads 16 -target 2000 -s
  faultbench cluster down etcd

Run 'faultbench COMMAND --help' for a command's flags and examples.`)
}

// versionLine is what --version prints: the version, and the commit when
// it says more than the version does.
func versionLine() string {
	s := "faultbench " + version
	if commit != "" && commit != version && !strings.Contains(version, commit) {
		s += " (commit " + commit + ")"
	}
	return s
}

// newFlags returns a FlagSet whose --help prints usage text and examples
// to stdout; parse turns a bad flag into one error message followed by
// the usage on stderr.
func (a *app) newFlags(name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stdout)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: faultbench %s\n", synopsis)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// parse parses flags that may come before, between and after positional
// arguments and returns the positional ones. --help prints the usage to
// the FlagSet's output (stdout); a bad flag is a usageError that prints
// the usage to stderr after the message, once.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	out := fs.Output()
	for {
		fs.SetOutput(io.Discard) // the flag package would print the error and usage itself
		err := fs.Parse(args)
		fs.SetOutput(out)
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return nil, err
			}
			return nil, usageError{msg: err.Error(), usage: func(w io.Writer) {
				fs.SetOutput(w)
				fs.Usage()
				fs.SetOutput(out)
			}}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// listFlag is a repeatable string flag (-P a -P b).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }
