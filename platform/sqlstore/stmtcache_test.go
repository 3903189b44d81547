package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// openCached opens a SQLite file through the statement cache.
func openCached(t *testing.T) *sql.DB {
	t.Helper()
	c, err := newStmtCacheConnector("file:"+filepath.Join(t.TempDir(), "cache.db")+"?_pragma=journal_mode(WAL)", nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// cached is how many statements the pool's one connection keeps.
func cached(t *testing.T, db *sql.DB) int {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	if err := conn.Raw(func(dc any) error { n = len(dc.(*cachingConn).stmts); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatementCache runs a script, then the same insert and select many
// times: the script runs whole and is not kept, each single statement is
// prepared once, a statement whose rows are still open runs again beside
// them, and every answer is what the driver's own path gives.
func TestStatementCache(t *testing.T) {
	ctx := context.Background()
	db := openCached(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT); CREATE TABLE u (k INTEGER);`); err != nil {
		t.Fatalf("a script of two statements: %v", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO u (k) VALUES (1)`); err != nil {
		t.Fatalf("the script's second table: %v", err)
	}
	if n := cached(t, db); n != 1 {
		t.Errorf("%d statements kept after a script and one insert, want 1 (the insert)", n)
	}
	for i := range 50 {
		if _, err := db.ExecContext(ctx, `INSERT INTO t (k, v) VALUES ($1, $2)`, i, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached(t, db); n != 2 {
		t.Errorf("%d statements kept after 50 runs of one insert, want 2", n)
	}
	// The same select, run again on the same connection (one transaction)
	// while its first rows are open.
	const q = `SELECT k FROM t WHERE k < $1 ORDER BY k`
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := tx.QueryContext(ctx, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for outer.Next() {
		var k int
		if err := outer.Scan(&k); err != nil {
			t.Fatal(err)
		}
		var last int
		if err := tx.QueryRowContext(ctx, q, 50).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != 0 {
			t.Errorf("the inner run's first row is %d, want 0", last)
		}
		got = append(got, k)
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Errorf("the outer rows are %v, want [0 1 2]", got)
	}
	// A statement a transaction prepares is the kept one, lent until the
	// transaction ends; the same string run beside it runs unprepared.
	kept := cached(t, db)
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const ins = `INSERT INTO t (k, v) VALUES ($1, $2)`
	st, err := tx.PrepareContext(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := st.ExecContext(ctx, 100, "w"); return err },
		func() error { _, err := tx.ExecContext(ctx, ins, 101, "w"); return err },
		func() error { _, err := st.ExecContext(ctx, 102, "w"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var w int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM t WHERE v = $1`, "w").Scan(&w); err != nil || w != 3 {
		t.Errorf("rows the lent statement and the one beside it wrote: %d, %v; want 3", w, err)
	}
	if n := cached(t, db); n != kept+1 {
		t.Errorf("%d statements kept, want %d (the count added one)", n, kept+1)
	}
	if _, err := db.ExecContext(ctx, ins, 103, "v"); err != nil {
		t.Fatalf("the insert once the transaction gave it back: %v", err)
	}
	for range 3 {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM t WHERE v = $1`, "v").Scan(&n); err != nil || n != 51 {
			t.Fatalf("count: %d, %v; want 51", n, err)
		}
	}
	// A statement that fails to prepare is reported as the driver reports
	// it, and is not kept.
	before := cached(t, db)
	if _, err := db.ExecContext(ctx, `INSERT INTO missing (k) VALUES (1)`); err == nil {
		t.Error("an insert into a missing table succeeded")
	}
	if n := cached(t, db); n != before {
		t.Errorf("%d statements kept after a failed one, want %d", n, before)
	}
}
