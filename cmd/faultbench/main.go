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

	goredis "github.com/redis/go-redis/v9"

	redisdriver "github.com/faultbench/faultbench/internal/driver/redis"
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
}

// usageError is a command-line mistake: printed with a hint, exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	// go-redis logs every failed dial (thousands during a crash fault) to
	// stderr unless told otherwise; keep them for FAULTBENCH_DEBUG=1.
	var redisLog io.Writer = io.Discard
	if os.Getenv("FAULTBENCH_DEBUG") != "" {
		redisLog = os.Stderr
	}
	goredis.SetLogger(redisdriver.LogWriter{W: redisLog})
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
// set (for developers: `go tool pprof bin/faultbench FILE`).
func (a *app) profiled(args []string) int {
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
		fmt.Fprintf(a.stdout, "faultbench %s %s\n", version, commit)
		return 0
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
		fmt.Fprintf(a.stderr, "faultbench: %s\n(see --help)\n", ue.msg)
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

// newFlags returns a FlagSet whose --help prints usage text and examples.
func (a *app) newFlags(name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		w := a.stdout
		fmt.Fprintf(w, "Usage: faultbench %s\n\n", synopsis)
		fmt.Fprintln(w, "Flags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(a.stderr)
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// parse parses flags that may come before, between and after positional
// arguments and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
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
