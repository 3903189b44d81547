package sqlstore

// This file keeps each SQLite connection's statements prepared. Every query
// the stores run is one of a few dozen fixed strings, and the driver parses a
// string afresh each time it is run: in nexus bench, SQLite's SQL parser was
// a fifth of the whole mesh's CPU. A connection now parses a string once and
// runs its prepared statement after that.

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"

	"modernc.org/sqlite"
)

// maxCachedStatements bounds a connection's prepared statements; a string
// beyond them is run the driver's way, parsed each time.
const maxCachedStatements = 256

// stmtCacheConnector opens SQLite connections that keep their statements.
type stmtCacheConnector struct {
	driver.Connector
	// traced, when set, makes a span of each statement of a sampled
	// request (trace.go).
	traced *atomic.Bool
}

// newStmtCacheConnector is the driver's connector for dsn, its connections
// wrapped.
func newStmtCacheConnector(dsn string, traced *atomic.Bool) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return stmtCacheConnector{Connector: c, traced: traced}, nil
}

// Connect opens a connection with an empty statement cache.
func (c stmtCacheConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, ok := range []bool{is[driver.ConnBeginTx](conn), is[driver.ConnPrepareContext](conn), is[driver.ExecerContext](conn),
		is[driver.QueryerContext](conn), is[driver.Pinger](conn), is[driver.SessionResetter](conn), is[driver.Validator](conn)} {
		if !ok {
			_ = conn.Close()
			return nil, errors.New("the SQLite driver's connection lacks an interface the statement cache forwards")
		}
	}
	return &cachingConn{Conn: conn, stmts: map[string]*cachedStmt{}, traced: c.traced}, nil
}

func is[T any](v any) bool {
	_, ok := v.(T)
	return ok
}

// cachingConn is one connection and its prepared statements. database/sql
// uses a connection from one goroutine at a time, so it needs no lock.
type cachingConn struct {
	driver.Conn
	stmts  map[string]*cachedStmt
	traced *atomic.Bool
}

// cachedStmt is a prepared statement; busy while rows of it are open, when
// the same string runs unprepared instead.
type cachedStmt struct {
	stmt  driver.Stmt
	query string
	busy  bool
}

// Unwrap is the driver's own connection, for the driver's helpers that look
// for it.
func (c *cachingConn) Unwrap() driver.Conn { return c.Conn }

// statement is query's prepared statement, prepared now if it is new; nil
// when it is in use, when the cache is full, or when query holds several
// statements (the driver runs a script statement by statement).
func (c *cachingConn) statement(ctx context.Context, query string) *cachedStmt {
	if s, ok := c.stmts[query]; ok {
		if s.busy {
			return nil
		}
		return s
	}
	if len(c.stmts) >= maxCachedStatements || strings.Contains(strings.TrimRight(strings.TrimSpace(query), "; \n\t"), ";") {
		return nil
	}
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		// The driver's own path reports the error.
		return nil
	}
	s := &cachedStmt{stmt: st, query: query}
	c.stmts[query] = s
	return s
}

// ExecContext runs query's prepared statement.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if sampled(ctx, c.traced) {
		return traced(ctx, query, func(ctx context.Context) (driver.Result, error) { return c.exec(ctx, query, args) })
	}
	return c.exec(ctx, query, args)
}

func (c *cachingConn) exec(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if s := c.statement(ctx, query); s != nil {
		return s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

// QueryContext runs query's prepared statement; the statement is busy
// until its rows are closed.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if sampled(ctx, c.traced) {
		return traced(ctx, query, func(ctx context.Context) (driver.Rows, error) { return c.query(ctx, query, args) })
	}
	return c.query(ctx, query, args)
}

func (c *cachingConn) query(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.statement(ctx, query)
	if s == nil {
		return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: rows, s: s}, nil
}

// Close finalizes the statements, then closes the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.stmt.Close())
		delete(c.stmts, q)
	}
	return errors.Join(append(errs, c.Conn.Close())...)
}

// BeginTx begins a transaction; an immediate one waits here for the write
// lock.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if sampled(ctx, c.traced) {
		return traced(ctx, "BEGIN", func(ctx context.Context) (driver.Tx, error) { return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts) })
	}
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

// PrepareContext lends query's prepared statement to the caller until it
// closes it (a transaction's statements are closed as it ends).
func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s := c.statement(ctx, query)
	if s == nil {
		return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	}
	s.busy = true
	return &lentStmt{s: s, traced: c.traced}, nil
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *cachingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

// cachedRows frees its statement for the next run when closed.
type cachedRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.s.busy = false
	return err
}

// lentStmt is a cached statement lent out by PrepareContext; closing it
// gives it back.
type lentStmt struct {
	s      *cachedStmt
	traced *atomic.Bool
}

func (l *lentStmt) Close() error {
	l.s.busy = false
	return nil
}

func (l *lentStmt) NumInput() int { return l.s.stmt.NumInput() }

// Exec and Query are driver.Stmt's; database/sql calls the context ones.
func (l *lentStmt) Exec(args []driver.Value) (driver.Result, error) {
	return l.ExecContext(context.Background(), named(args))
}

func (l *lentStmt) Query(args []driver.Value) (driver.Rows, error) {
	return l.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func (l *lentStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if sampled(ctx, l.traced) {
		return traced(ctx, l.s.query, func(ctx context.Context) (driver.Result, error) {
			return l.s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
		})
	}
	return l.s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (l *lentStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if sampled(ctx, l.traced) {
		return traced(ctx, l.s.query, func(ctx context.Context) (driver.Rows, error) {
			return l.s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
		})
	}
	return l.s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
