package sqlstore

import "database/sql"

// SQLite is the connection pool of the SQLite file, or nil on PostgreSQL.
// The orchestrator's hot state lives in the same file when nexus dev runs
// without Redis, with tables and migrations of its own.
func (d *DB) SQLite() *sql.DB {
	if d.path == "" {
		return nil
	}
	return d.db
}
