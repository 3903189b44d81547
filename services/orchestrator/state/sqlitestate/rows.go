package sqlitestate

import (
	"context"
	"database/sql"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// protoRows runs a query whose one column is an encoded message and decodes
// every row with a fresh message from newMsg. what names the read in errors
// ("read the event log of run r-1"). The result is never nil.
func protoRows[T proto.Message](ctx context.Context, db *sql.DB, newMsg func() T, what, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		m := newMsg()
		if err := proto.Unmarshal(b, m); err != nil {
			return nil, fmt.Errorf("%s: decode row %d: %w", what, len(out), err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
