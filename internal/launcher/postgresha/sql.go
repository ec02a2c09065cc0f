package postgresha

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens one short-lived admin connection to addr.
func connect(ctx context.Context, addr, db string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=3", User, addr, db))
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// execSQL runs one statement on addr.
func execSQL(ctx context.Context, addr, db, sql string) error {
	conn, err := connect(ctx, addr, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = conn.Exec(qctx, sql)
	return err
}

// isInRecovery asks the server at addr whether it is a standby.
func isInRecovery(ctx context.Context, addr string) (bool, error) {
	conn, err := connect(ctx, addr, Database)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var r bool
	err = conn.QueryRow(qctx, "SELECT pg_is_in_recovery()").Scan(&r)
	return r, err
}

// waitQuery waits until addr answers a query on db.
func waitQuery(ctx context.Context, addr, db string) error {
	var last error
	for {
		conn, err := connect(ctx, addr, db)
		if err == nil {
			qctx, cancel := context.WithTimeout(ctx, queryTimeout)
			_, err = conn.Exec(qctx, "SELECT 1")
			cancel()
			conn.Close(context.WithoutCancel(ctx))
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for postgres on %s to answer: %w (last error: %v)", addr, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// waitPrimary waits until addr takes writes.
func waitPrimary(ctx context.Context, addr string) error {
	for {
		r, err := isInRecovery(ctx, addr)
		if err == nil && !r {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to become the primary: %w", addr, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// nodeState is one data node as the monitor sees it.
type nodeState struct {
	id             int64
	addr           string
	reported, goal string
	lsn            string // the WAL position the node last reported
	health         int
}

// role maps the monitor's state to a faultbench role.
func (s nodeState) role() string {
	switch s.goal {
	case "single", "wait_primary", "primary", "join_primary", "apply_settings", "stop_replication":
		return "primary"
	case "secondary", "catchingup", "wait_standby", "report_lsn", "join_secondary":
		return "replica"
	}
	return ""
}

// monitorStates reads every data node's state from the monitor.
func monitorStates(ctx context.Context, addr string) (map[string]nodeState, error) {
	conn, err := connect(ctx, addr, "pg_auto_failover")
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	rows, err := conn.Query(qctx, `SELECT nodename, nodeid, nodehost, nodeport, reportedstate::text, goalstate::text, reportedlsn::text, health
		FROM pgautofailover.node ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	out := map[string]nodeState{}
	for rows.Next() {
		var name, host string
		var port int
		var st nodeState
		if err := rows.Scan(&name, &st.id, &host, &port, &st.reported, &st.goal, &st.lsn, &st.health); err != nil {
			return nil, err
		}
		st.addr = net.JoinHostPort(host, strconv.Itoa(port))
		out[name] = st
	}
	return out, rows.Err()
}
