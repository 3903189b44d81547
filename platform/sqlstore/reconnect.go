package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// idlePing is how long a pooled connection may sit idle before the driver
// checks it with a ping on reuse (the driver's own default).
const idlePing = time.Second

// serverClosed reports whether err says the server closed the connection
// before the statement took effect. PostgreSQL ends a session with class 57
// (operator intervention) when an operator terminates the backend, the server
// shuts down or restarts, or it is not yet accepting connections; the
// statement that meets one did not run or was rolled back with its session,
// so running it again is safe. A driver error that is safe to retry was
// raised before anything was sent.
func serverClosed(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", // admin_shutdown: pg_terminate_backend, a smart or fast shutdown
			"57P02", // crash_shutdown: another server process crashed
			"57P03": // cannot_connect_now: the server is starting
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err)
}

// shouldPing checks a pooled connection before reuse when it sat idle a
// while, or when it was last used before a connection the server closed: the
// server (or whoever terminated one backend) has most likely closed it too,
// and a ping replaces it with a fresh one instead of failing a statement.
func (d *DB) shouldPing(_ context.Context, p stdlib.ShouldPingParams) bool {
	return p.IdleDuration > idlePing || time.Now().Add(-p.IdleDuration).UnixNano() <= d.closedAt.Load()
}

// again runs attempt, and once more when the server closed the connection it
// ran on; the second attempt meets only connections checked since.
func (d *DB) again(ctx context.Context, attempt func() error) error {
	err := attempt()
	if err == nil || !serverClosed(err) || ctx.Err() != nil {
		return err
	}
	d.closedAt.Store(time.Now().UnixNano())
	return attempt()
}

// exec runs a statement, once more on a fresh connection when the server
// closed the one it ran on.
func (d *DB) exec(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	defer d.write()()
	err = d.again(ctx, func() error {
		res, err = d.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// query runs a query as exec runs a statement.
func (d *DB) query(ctx context.Context, query string, args ...any) (rows *sql.Rows, err error) {
	err = d.again(ctx, func() error {
		rows, err = d.db.QueryContext(ctx, query, args...)
		return err
	})
	return rows, err
}

// queryRow runs a query of one row as exec runs a statement.
func (d *DB) queryRow(ctx context.Context, query string, args ...any) (row *sql.Row) {
	_ = d.again(ctx, func() error {
		row = d.db.QueryRowContext(ctx, query, args...)
		return row.Err()
	})
	return row
}

// inTx runs fn in one transaction, committed when fn returns nil; a
// transaction the server ended by closing its connection never committed,
// so it runs once more on a fresh one.
func (d *DB) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	defer d.write()()
	return d.again(ctx, func() error {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// write takes the SQLite file's writer lock (shared.go) and returns its
// release; PostgreSQL's writers need none.
func (d *DB) write() func() {
	if d.path == "" {
		return func() {}
	}
	d.writer.Lock()
	return d.writer.Unlock
}
