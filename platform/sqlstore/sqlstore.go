// Package sqlstore keeps what must last in a relational database: the dispatch
// audit log (the exact bytes of every script that left for a user's machine)
// and the run history. PostgreSQL serves production when NEXUS_DATABASE_URL is
// a postgres:// URL; otherwise an embedded SQLite file (a pure-Go driver, no
// cgo) in the data folder serves nexus dev and make run.
//
// The schema is versioned by migrations embedded in the binary and applied at
// Open. Both databases run the same queries: times are unix nanoseconds and
// placeholders are $n, which both drivers bind.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations
var migrations embed.FS

// FileName is the SQLite file inside the data folder.
const FileName = "nexus.db"

// migrateAttempts bounds how often Open retries the SQLite migrations: two
// processes that open a new file at once race to create the schema, and the
// loser finds it created on the next attempt.
const migrateAttempts = 5

// Config selects and tunes the database.
type Config struct {
	// DatabaseURL is a postgres:// (or postgresql://) URL; empty means the
	// SQLite file in DataDir.
	DatabaseURL string `env:"NEXUS_DATABASE_URL"`
	// DataDir holds the SQLite file; empty means the user's data folder
	// ($XDG_DATA_HOME/nexus or ~/.local/share/nexus).
	DataDir string `env:"NEXUS_DATA_DIR"`
	// MaxConns bounds the open connections of one process.
	MaxConns int `env:"NEXUS_DATABASE_MAX_CONNS, default=10"`
	// Timeout bounds one statement, so a database that hangs fails a write
	// instead of holding a dispatch forever.
	Timeout time.Duration `env:"NEXUS_DATABASE_TIMEOUT, default=10s"`
}

// Validate checks the URL's scheme and the bounds, naming the setting.
func (c *Config) Validate() error {
	var errs []error
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		switch {
		case err != nil:
			errs = append(errs, errors.New("NEXUS_DATABASE_URL is not a URL"))
		case u.Scheme != "postgres" && u.Scheme != "postgresql":
			errs = append(errs, fmt.Errorf("NEXUS_DATABASE_URL must be a postgres:// URL (or empty for the SQLite file in NEXUS_DATA_DIR), got scheme %q", u.Scheme))
		}
	}
	if c.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("NEXUS_DATABASE_MAX_CONNS must be at least 1, got %d", c.MaxConns))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("NEXUS_DATABASE_TIMEOUT must be positive, got %s", c.Timeout))
	}
	return errors.Join(errs...)
}

// DB is an open, migrated database.
type DB struct {
	db      *sql.DB
	where   string
	path    string
	timeout time.Duration
	// closedAt is when (unix nanoseconds) the server last closed a
	// connection under a statement; connections last used before it are
	// checked before reuse.
	closedAt atomic.Int64
	// writer serialises the SQLite file's writers (shared.go).
	writer sync.Mutex
	// traced makes spans of the statements of sampled requests (trace.go).
	traced atomic.Bool
}

// DefaultDataDir is the folder the SQLite file lives in when NEXUS_DATA_DIR
// is empty.
func DefaultDataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "nexus"), nil
	}
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "nexus"), nil
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the data folder (set NEXUS_DATA_DIR): %w", err)
	}
	return filepath.Join(home, ".local", "share", "nexus"), nil
}

// Open connects to the database cfg names and brings its schema up to date.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	return open(ctx, cfg, latest, busyTimeout)
}

// busyTimeout bounds how long SQLite lets a connection wait for the file's
// write lock. Writers of this process queue on its own lock (Writer); this
// is for another process's, a second nexus on the same folder say.
const busyTimeout = 10 * time.Second

// latest asks migrate for every migration.
const latest = 0

// open is Open with the schema brought up to version (latest for all);
// tests stop at an older version to check that an upgrade keeps old rows.
func open(ctx context.Context, cfg Config, version int64, busy time.Duration) (*DB, error) {
	if cfg.MaxConns < 1 {
		cfg.MaxConns = 10
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var d *DB
	var err error
	if cfg.DatabaseURL != "" {
		d, err = openPostgres(cfg)
	} else {
		d, err = openSQLite(cfg, busy)
	}
	if err != nil {
		return nil, err
	}
	d.timeout = cfg.Timeout
	d.db.SetMaxOpenConns(cfg.MaxConns)
	// Connections are kept, not closed past database/sql's default of two
	// idle ones: under concurrent runs that default closed and reopened one
	// at every burst, and a SQLite connection's open reads the schema and
	// starts with no prepared statements.
	d.db.SetMaxIdleConns(cfg.MaxConns)
	if err := d.migrate(ctx, version); err != nil {
		_ = d.db.Close()
		return nil, err
	}
	return d, nil
}

func openPostgres(cfg Config) (*DB, error) {
	pc, err := pgx.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("NEXUS_DATABASE_URL: %w", err)
	}
	d := &DB{where: fmt.Sprintf("PostgreSQL database %q at %s:%d", pc.Database, pc.Host, pc.Port)}
	d.db = stdlib.OpenDB(*pc, stdlib.OptionShouldPing(d.shouldPing))
	return d, nil
}

func openSQLite(cfg Config, busy time.Duration) (*DB, error) {
	dir := cfg.DataDir
	if dir == "" {
		var err error
		if dir, err = DefaultDataDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the data folder NEXUS_DATA_DIR=%s: %w", dir, err)
	}
	path, err := filepath.Abs(filepath.Join(dir, FileName))
	if err != nil {
		return nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	// WAL lets readers run beside the one writer; writers take turns on
	// Writer, and the busy timeout makes another process's wait; immediate
	// transactions take the write lock at BEGIN, so two transactions never
	// deadlock on an upgrade.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path),
		RawQuery: fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate", busy.Milliseconds())}
	d := &DB{where: "SQLite database " + path, path: path}
	connector, err := newStmtCacheConnector(u.String(), &d.traced)
	if err != nil {
		return nil, fmt.Errorf("open SQLite database %s: %w", path, err)
	}
	d.db = sql.OpenDB(connector)
	return d, nil
}

func (d *DB) migrate(ctx context.Context, version int64) error {
	dialect, dir := goose.DialectSQLite3, "migrations/sqlite"
	var opts []goose.ProviderOption
	if d.path == "" {
		dialect, dir = goose.DialectPostgres, "migrations/postgres"
		// Replicas that start together take turns: the first migrates, the
		// others find the schema current.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
		if err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	fsys, err := fs.Sub(migrations, dir)
	if err != nil {
		return fmt.Errorf("embedded migrations: %w", err)
	}
	p, err := goose.NewProvider(dialect, d.db, fsys, opts...)
	if err != nil {
		return fmt.Errorf("migrations of %s: %w", d.where, err)
	}
	for attempt := 1; ; attempt++ {
		if version == latest {
			_, err = p.Up(ctx)
		} else {
			_, err = p.UpTo(ctx, version)
		}
		if err == nil || d.path == "" || attempt == migrateAttempts || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("migrate %s: %w", d.where, err)
	}
	return nil
}

// Where names the database for logs and errors: its kind and where it is,
// never a password.
func (d *DB) Where() string { return d.where }

// Path is the SQLite file, or empty on PostgreSQL.
func (d *DB) Path() string { return d.path }

// Close closes every connection.
func (d *DB) Close() error { return d.db.Close() }

// op bounds one operation by the configured timeout.
func (d *DB) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.timeout)
}

// fail wraps err so it names the database and what was being done.
func (d *DB) fail(what string, err error) error {
	return fmt.Errorf("%s in %s: %w", what, d.where, err)
}

// placeholders returns "$from, $from+1, ..." n times.
func placeholders(from, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", from+i)
	}
	return strings.Join(ps, ", ")
}
