package sqlitestate

import (
	"context"
	"database/sql"
)

// MigrateTo brings db's hot-state tables to version, as a data folder
// written by an older nexus holds them.
func MigrateTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := migrator(db)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
