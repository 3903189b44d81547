package sqlstore

import (
	"database/sql"
	"sync"
)

// SQLite is the connection pool of the SQLite file, or nil on PostgreSQL.
// The orchestrator's hot state lives in the same file when nexus dev runs
// without Redis, with tables and migrations of its own.
func (d *DB) SQLite() *sql.DB {
	if d.path == "" {
		return nil
	}
	return d.db
}

// Writer is the lock every writer of the SQLite file takes, the run
// history's and the hot state's: SQLite lets one transaction write at a
// time, and writers that meet in SQLite wait in its busy handler, which
// sleeps 1, 2, 5, 10 ms and more between tries, so a burst of writers
// (every run of a burst starting at once) queued for tens of milliseconds
// behind a lock held for well under one. Writers that take this lock
// instead queue in the process and go in turn the moment it is free.
func (d *DB) Writer() sync.Locker {
	return &d.writer
}
