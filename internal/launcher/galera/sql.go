package galera

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// status is what a node says about itself and its cluster.
type status struct {
	ready  bool   // wsrep_ready
	state  string // wsrep_local_state_comment: Synced, Joining, Donor/Desynced ...
	status string // wsrep_cluster_status: Primary or non-Primary
	size   int    // wsrep_cluster_size
	uuid   string // wsrep_gcomm_uuid

	lastCommitted int64 // wsrep_last_committed
}

func (s status) synced() bool { return s.ready && s.state == "Synced" && s.status == "Primary" }

// open returns a one-connection handle to the node whose unix socket is
// socket, as root (MariaDB authenticates root by the socket peer's user,
// and faultbench runs as root): it works before any other account exists.
func open(socket string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", socket
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = queryTimeout, queryTimeout, queryTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db, nil
}

// nodeStatus reads the wsrep status variables of the node at socket.
func nodeStatus(ctx context.Context, socket string) (status, error) {
	var st status
	db, err := open(socket)
	if err != nil {
		return st, err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	rows, err := db.QueryContext(qctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready','wsrep_local_state_comment','wsrep_cluster_status','wsrep_cluster_size','wsrep_gcomm_uuid','wsrep_last_committed')")
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return st, err
		}
		switch strings.ToLower(k) {
		case "wsrep_ready":
			st.ready = v == "ON"
		case "wsrep_local_state_comment":
			st.state = v
		case "wsrep_cluster_status":
			st.status = v
		case "wsrep_cluster_size":
			st.size, _ = strconv.Atoi(v)
		case "wsrep_gcomm_uuid":
			st.uuid = v
		case "wsrep_last_committed":
			st.lastCommitted, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return st, rows.Err()
}

// execRoot runs one statement as root on the node at socket.
func execRoot(ctx context.Context, socket, q string) error {
	db, err := open(socket)
	if err != nil {
		return err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, 10*queryTimeout)
	defer cancel()
	_, err = db.ExecContext(qctx, q)
	return err
}

// createUser creates the passwordless faultbench account and database on
// the bootstrap node, as root over its unix socket (root authenticates by
// socket, and faultbench runs as root). Galera replicates both.
func createUser(ctx context.Context, socket string) error {
	db, err := open(socket)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS '" + User + "'@'%'",
		"GRANT ALL PRIVILEGES ON *.* TO '" + User + "'@'%'",
		"CREATE DATABASE IF NOT EXISTS " + Database,
	} {
		qctx, cancel := context.WithTimeout(ctx, 30*queryTimeout)
		_, err := db.ExecContext(qctx, q)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}
