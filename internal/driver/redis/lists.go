package redis

import (
	"context"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/faultbench/faultbench/internal/outcome"
)

// ListAppend is the driver's list ability (used by the appendset workload):
// it appends value to the end of the list at key with one RPUSH on the
// key's master (no transaction, one key). With redis.wait > 0 the RPUSH is
// followed by WAIT on the same connection and acknowledged only when
// enough replicas have it (else a *WaitError, class Timeout). The command
// is sent once: a failure after it was sent leaves its outcome unknown.
func (d *Driver) ListAppend(ctx context.Context, key string, value []byte) error {
	if d.conns != nil {
		return d.listStandalone(ctx, "append", key, value)
	}
	cmd := goredis.NewIntCmd(ctx, "rpush", key, value)
	if d.wait > 0 {
		return d.writeWait(ctx, "append", key, cmd, nil)
	}
	if err := d.c.Process(ctx, cmd); err != nil {
		return d.fail("append", err)
	}
	return nil
}

// ListRead returns every element of the list at key, in order (LRANGE key
// 0 -1 on the key's master); a missing key is an empty list.
func (d *Driver) ListRead(ctx context.Context, key string) ([][]byte, error) {
	var elems []string
	if d.conns != nil {
		c, err := d.conns.get(ctx)
		if err != nil {
			return nil, d.fail("list read", err)
		}
		c.req = appendCommand(c.req[:0], "LRANGE", key, "0", "-1")
		err = c.send(ctx, &d.conns.cfg)
		if err == nil {
			elems, err = c.readStrings()
		}
		d.conns.put(c, err != nil && !isServerError(err))
		if err != nil {
			return nil, d.fail("list read", err)
		}
	} else {
		var err error
		if elems, err = d.c.LRange(ctx, key, 0, -1).Result(); err != nil {
			return nil, d.fail("list read", err)
		}
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = []byte(e)
	}
	return out, nil
}

// listStandalone sends RPUSH (and WAIT) on one pooled connection, once.
func (d *Driver) listStandalone(ctx context.Context, op, key string, value []byte) error {
	c, err := d.conns.get(ctx)
	if err != nil {
		return d.fail(op, err)
	}
	c.req = appendCommand(c.req[:0], "RPUSH", key, string(value))
	if d.wait > 0 {
		c.req = appendCommand(c.req, "WAIT", strconv.Itoa(d.wait), strconv.FormatInt(d.waitTO.Milliseconds(), 10))
	}
	err = c.send(ctx, &d.conns.cfg)
	var acked int64
	if err == nil {
		_, err = c.readInt()
		if d.wait > 0 {
			// the WAIT reply follows whatever RPUSH answered
			var werr error
			acked, werr = c.readInt()
			if err == nil {
				err = werr
			}
		}
	}
	d.conns.put(c, err != nil && !isServerError(err))
	if err != nil {
		return d.fail(op, err)
	}
	if d.wait > 0 && acked < int64(d.wait) {
		return outcome.Classified(outcome.Timeout, op, &WaitError{Wanted: d.wait, Acked: int(acked), Timeout: d.waitTO})
	}
	return nil
}
