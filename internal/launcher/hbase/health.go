package hbase

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/faultbench/faultbench/internal/launcher"
)

// jmxBean fetches the first bean of a JMX query from a Hadoop or HBase
// process's HTTP server (/jmx?qry=...), the way every health check here
// asks: no shell, no JMX port.
func jmxBean(ctx context.Context, httpAddr, query string) (map[string]any, error) {
	if httpAddr == "" {
		return nil, fmt.Errorf("no HTTP address")
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/jmx?qry="+query, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /jmx: %s", httpAddr, resp.Status)
	}
	var out struct {
		Beans []map[string]any `json:"beans"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s /jmx: %w", httpAddr, err)
	}
	if len(out.Beans) == 0 {
		return nil, fmt.Errorf("%s /jmx: no bean %s yet", httpAddr, query)
	}
	return out.Beans[0], nil
}

// num reads a number attribute of a bean (-1 when absent).
func num(b map[string]any, k string) int {
	switch v := b[k].(type) {
	case float64:
		return int(v)
	case string:
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return -1
}

// str reads a string attribute of a bean.
func str(b map[string]any, k string) string {
	s, _ := b[k].(string)
	return s
}

// JMX queries.
const (
	qMaster   = "Hadoop:service=HBase,name=Master,sub=Server"
	qAssign   = "Hadoop:service=HBase,name=Master,sub=AssignmentManager"
	qRS       = "Hadoop:service=HBase,name=RegionServer,sub=Server"
	qNNState  = "Hadoop:service=NameNode,name=FSNamesystemState"
	qNNInfo   = "Hadoop:service=NameNode,name=NameNodeInfo"
	qDNInfo   = "Hadoop:service=DataNode,name=DataNodeInfo"
	ruok      = "ruok"
	imok      = "imok"
	noAnswer  = "no answer"
	wantShort = 64
)

// masterState is what the master says about the cluster.
type masterState struct {
	active   bool
	live     []string // region servers host:port
	dead     int
	rit      int // regions in transition (-1: unknown)
	serverID string
}

// askMaster reads the master's view of the cluster.
func askMaster(ctx context.Context, m *launcher.Node) (masterState, error) {
	b, err := jmxBean(ctx, m.PeerAddr, qMaster)
	if err != nil {
		return masterState{}, err
	}
	st := masterState{active: str(b, "tag.isActiveMaster") == "true", dead: num(b, "numDeadRegionServers"), rit: -1,
		serverID: str(b, "tag.serverName")}
	for _, s := range strings.Split(str(b, "tag.liveRegionServers"), ";") {
		// host,port,startcode
		f := strings.Split(strings.TrimSpace(s), ",")
		if len(f) >= 2 {
			st.live = append(st.live, net.JoinHostPort(f[0], f[1]))
		}
	}
	if a, err := jmxBean(ctx, m.PeerAddr, qAssign); err == nil {
		st.rit = num(a, "ritCount")
	}
	return st, nil
}

// zkOK asks ZooKeeper "ruok".
func zkOK(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte(ruok)); err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(c, wantShort))
	if string(b) != imok {
		return fmt.Errorf("zookeeper %s answered %q to ruok", addr, b)
	}
	return nil
}

// dialOK says whether addr accepts a TCP connection within queryTimeout.
func dialOK(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// hdfsState is the NameNode's view: live DataNodes and safe mode.
func hdfsState(ctx context.Context, nn *launcher.Node) (live int, safemode string, err error) {
	b, err := jmxBean(ctx, nn.PeerAddr, qNNState)
	if err != nil {
		return 0, "", err
	}
	live = num(b, "NumLiveDataNodes")
	i, err := jmxBean(ctx, nn.PeerAddr, qNNInfo)
	if err != nil {
		return live, "", err
	}
	return live, str(i, "Safemode"), nil
}

// rssKiB reads a local process's resident set size from /proc (0 when
// unknown).
func rssKiB(pid int) int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// poll calls check every pollInterval until it returns nil or ctx ends; the
// error says what it was waiting for and the last answer.
func poll(ctx context.Context, what string, check func(ctx context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		if errors.Is(last, errExited) {
			return fmt.Errorf("waiting for %s: %w", what, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}
