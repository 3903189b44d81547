package sqlstore

import (
	"context"
	"database/sql"
)

// OpenAtVersion opens the database with its schema brought up to version
// only, as an older release left it.
func OpenAtVersion(ctx context.Context, cfg Config, version int64) (*DB, error) {
	return open(ctx, cfg, version)
}

// SQL is the connection pool, for tests that write rows as an older release
// did.
func (d *DB) SQL() *sql.DB { return d.db }
