package wire

import (
	"context"
	"net"
	"net/rpc"
	"testing"
	"time"
)

// gateRPC answers Echo once the test releases it.
type gateRPC struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gateRPC) Echo(a *StatusReply, r *StatusReply) error {
	g.entered <- struct{}{}
	<-g.release
	*r = *a
	return nil
}

// TestMuteDropsReplies: a reply decided after the process was muted (an
// in-process crash, a fail-stop) never reaches the caller, which sees a
// transport error as after a kill -9; before the mute, replies flow. A
// restarted coordinator once waited forever for a region whose open the
// crashed one had acknowledged without persisting it.
func TestMuteDropsReplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mute  bool
		reply bool
	}{
		{"not-muted", false, true},
		{"muted-while-deciding", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			g := &gateRPC{entered: make(chan struct{}, 1), release: make(chan struct{})}
			srv := rpc.NewServer()
			if err := srv.RegisterName("Gate", g); err != nil {
				t.Fatal(err)
			}
			var m Mute
			done := make(chan struct{})
			go func() { Serve(l, srv, &m); close(done) }()
			defer func() { l.Close(); <-done }()
			c := NewConn(l.Addr().String())
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errc := make(chan error, 1)
			var rep StatusReply
			go func() { errc <- c.Call(ctx, "Gate.Echo", &StatusReply{Status: Status{Msg: "decided"}}, &rep) }()
			<-g.entered
			if tc.mute {
				m.Set()
			}
			close(g.release)
			err = <-errc
			switch {
			case tc.reply && (err != nil || rep.Msg != "decided"):
				t.Errorf("call: %v %+v, want the reply", err, rep)
			case !tc.reply && err == nil:
				t.Errorf("a muted server answered: %+v", rep)
			case !tc.reply && ctx.Err() != nil:
				t.Errorf("the caller waited for its deadline instead of seeing the connection end: %v", err)
			}
		})
	}
}
