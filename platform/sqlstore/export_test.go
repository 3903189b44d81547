package sqlstore

import (
	"context"
	"database/sql"
)

// OpenAtVersion opens the database with its schema brought up to version
// only, as an older release left it.
func OpenAtVersion(ctx context.Context, cfg Config, version int64) (*DB, error) {
	return open(ctx, cfg, version, busyTimeout)
}

// OpenWithoutBusyWait opens the database with SQLite's busy handler off: a
// writer that meets another in SQLite fails at once with SQLITE_BUSY.
func OpenWithoutBusyWait(ctx context.Context, cfg Config) (*DB, error) {
	return open(ctx, cfg, latest, 0)
}

// SQL is the connection pool, for tests that write rows as an older release
// did.
func (d *DB) SQL() *sql.DB { return d.db }
