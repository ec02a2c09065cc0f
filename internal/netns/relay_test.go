package netns

import (
	"bufio"
	"context"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParseDelay(t *testing.T) {
	cases := []struct {
		in   string
		want DelaySpec
		err  bool
	}{
		{in: "200ms", want: DelaySpec{Delay: 200 * time.Millisecond}},
		{in: "200ms±20ms", want: DelaySpec{Delay: 200 * time.Millisecond, Jitter: 20 * time.Millisecond}},
		{in: "50ms+-5ms", want: DelaySpec{Delay: 50 * time.Millisecond, Jitter: 5 * time.Millisecond}},
		{in: "1s~100ms", want: DelaySpec{Delay: time.Second, Jitter: 100 * time.Millisecond}},
		{in: "0ms", err: true},
		{in: "10ms±20ms", err: true},
		{in: "soon", err: true},
		{in: "2m", err: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDelay(tc.in)
			if (err != nil) != tc.err || (!tc.err && got != tc.want) {
				t.Errorf("ParseDelay(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

// echoIn serves a line echo inside namespace ns on addr.
func echoIn(t *testing.T, ns, addr string) {
	t.Helper()
	var l net.Listener
	if err := Do(ns, func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
}

// rtt connects from ns to addr and returns the time of one line's round trip.
func rtt(t *testing.T, ns, addr string) time.Duration {
	t.Helper()
	var d time.Duration
	if err := Do(ns, func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		start := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		if _, err := r.ReadString('\n'); err != nil {
			return err
		}
		d = time.Since(start)
		return nil
	}); err != nil {
		t.Fatalf("round trip from %s to %s: %v", ns, addr, err)
	}
	return d
}

// TestDelayRelay delays what n1 sends by 150 ms and measures round trips:
// n1 -> n2 (n1's request delayed) and n2 -> n1 (n1's reply delayed) take
// at least 150 ms; heal brings them back under it.
func TestDelayRelay(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	nw, err := Create(ctx, t.TempDir(), "relay-"+strconv.Itoa(os.Getpid()), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nw.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	s, _ := nw.State()
	n1, n2 := s.Nodes[0], s.Nodes[1]
	a1, a2 := net.JoinHostPort(n1.IP, "7000"), net.JoinHostPort(n2.IP, "7000")
	echoIn(t, n1.NS, a1)
	echoIn(t, n2.NS, a2)
	// The undelayed round trips, for reference: on a machine slow enough
	// that a plain round trip takes the delay, "at least 150 ms" alone
	// would pass without any delay, so each direction must also add at
	// least half the delay to the fastest undelayed round trip.
	fastest := func(ns, addr string, n int) time.Duration {
		best := time.Duration(math.MaxInt64)
		for range n {
			best = min(best, rtt(t, ns, addr))
		}
		return best
	}
	const delay = 150 * time.Millisecond
	base12, base21 := fastest(n1.NS, a2, 5), fastest(n2.NS, a1, 5)
	// undelayed is the bound a round trip without the delay stays under:
	// the delay, or on a machine so slow that a plain round trip takes
	// that long, less than half the delay on top of the fastest plain one
	// (a delayed round trip adds the whole delay to it)
	undelayed := func(base time.Duration) time.Duration { return max(delay, base+delay/2) }
	t.Logf("undelayed round trips: n1 -> n2 %v, n2 -> n1 %v", base12, base21)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		pid    int
		exited chan struct{} // closed when Wait returned
	}
	var cmds []proc
	spawn := func(argv []string, logFile string) (int, error) {
		lf, err := os.Create(logFile)
		if err != nil {
			return 0, err
		}
		defer lf.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		p := proc{pid: cmd.Process.Pid, exited: make(chan struct{})}
		cmds = append(cmds, p)
		go func() { _ = cmd.Wait(); close(p.exited) }()
		return cmd.Process.Pid, nil
	}
	logFile := filepath.Join(t.TempDir(), "relay.log")
	if err := nw.AddDelay(ctx, "n1", "t1", self, logFile, DelaySpec{Delay: delay}, spawn); err != nil {
		b, _ := os.ReadFile(logFile)
		t.Fatalf("AddDelay: %v\n%s", err, b)
	}
	if err := nw.AddDelay(ctx, "n1", "t2", self, logFile, DelaySpec{Delay: delay}, spawn); err == nil {
		t.Error("a second delay on n1 was accepted")
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("relay log:\n%s", b)
		}
	})
	t.Run("n1 calls n2", func(t *testing.T) {
		best := time.Duration(math.MaxInt64)
		for i := 0; i < 3; i++ {
			d := rtt(t, n1.NS, a2)
			t.Logf("n1 -> n2 round trip %v", d)
			if d < delay {
				t.Errorf("round trip %v, want at least %v", d, delay)
			}
			best = min(best, d)
		}
		if best-base12 < delay/2 {
			t.Errorf("fastest delayed round trip %v adds %v to the fastest undelayed one (%v), want at least %v", best, best-base12, base12, delay/2)
		}
	})
	t.Run("n2 calls n1", func(t *testing.T) {
		best := time.Duration(math.MaxInt64)
		for i := 0; i < 3; i++ {
			d := rtt(t, n2.NS, a1)
			t.Logf("n2 -> n1 round trip %v", d)
			if d < delay {
				t.Errorf("round trip %v, want at least %v", d, delay)
			}
			best = min(best, d)
		}
		if best-base21 < delay/2 {
			t.Errorf("fastest delayed round trip %v adds %v to the fastest undelayed one (%v), want at least %v", best, best-base21, base21, delay/2)
		}
	})
	t.Run("n2 calls n2's peer n1 only", func(t *testing.T) {
		// traffic not involving n1 is not relayed: n2 to itself
		if d, most := fastest(n2.NS, a2, 3), undelayed(min(base12, base21)); d >= most {
			t.Errorf("fastest of 3 round trips within n2 %v, want no delay (under %v)", d, most)
		}
	})
	if _, err := nw.RemoveRules("t1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		select {
		case <-c.exited:
		case <-time.After(5 * time.Second):
			t.Errorf("relay pid %d still runs 5 s after the heal", c.pid)
		}
	}
	if d, most := fastest(n1.NS, a2, 3), undelayed(base12); d >= most {
		t.Errorf("fastest of 3 round trips after heal %v, want under %v", d, most)
	}
}
