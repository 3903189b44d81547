// Package sqlstoretest gives tests a database of their own: a fresh
// PostgreSQL database on the server this machine runs (dropped when the test
// ends), a SQLite file in a temporary folder, or a private PostgreSQL server
// that a test may stop.
package sqlstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"nexus.local/platform/sqlstore"
)

// DefaultAdminURL is the PostgreSQL server the tests use unless
// NEXUS_TEST_POSTGRES_URL names another: the one at 127.0.0.1:5432 with trust
// authentication.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Kinds are the databases every conformance test runs on.
func Kinds() []string { return []string{"sqlite", "postgres"} }

// Config returns the configuration of a new, empty database of kind
// ("sqlite" or "postgres") that lives as long as the test.
func Config(t testing.TB, kind string) sqlstore.Config {
	t.Helper()
	switch kind {
	case "sqlite":
		return sqlstore.Config{DataDir: t.TempDir(), MaxConns: 10, Timeout: 30 * time.Second}
	case "postgres":
		return sqlstore.Config{DatabaseURL: Postgres(t), MaxConns: 10, Timeout: 30 * time.Second}
	}
	t.Fatalf("unknown database kind %q", kind)
	return sqlstore.Config{}
}

// Open opens a new, empty database of kind for the test.
func Open(t testing.TB, kind string) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), Config(t, kind))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// adminConfig is the configuration of the shared server's administrative
// connection.
func adminConfig(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	admin := os.Getenv("NEXUS_TEST_POSTGRES_URL")
	if admin == "" {
		admin = DefaultAdminURL
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatalf("NEXUS_TEST_POSTGRES_URL: %v", err)
	}
	return cfg
}

// Postgres creates a database with a unique name on the shared server and
// returns its URL; the database is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	cfg := adminConfig(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "nexus_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL server at %s:%d (NEXUS_TEST_POSTGRES_URL): %v", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u := *cfg
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", u.User, net.JoinHostPort(u.Host, strconv.Itoa(int(u.Port))), name)
}

// TerminateBackends ends, with pg_terminate_backend, every server process
// connected to the database dbURL names (a database of Postgres), as an
// operator or a failover does, and waits until the server has closed all of
// them. It returns how many it ended.
func TerminateBackends(t testing.TB, dbURL string) int {
	t.Helper()
	target, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, adminConfig(t))
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL server: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()) AS ended`, target.Database).Scan(&n); err != nil {
		t.Fatalf("terminate the backends of %s: %v", target.Database, err)
	}
	for {
		var left int
		if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
			target.Database).Scan(&left); err != nil {
			t.Fatalf("count the backends of %s: %v", target.Database, err)
		}
		if left == 0 {
			return n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d backends of %s still connected after pg_terminate_backend", left, target.Database)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Server is a private PostgreSQL server a test can stop.
type Server struct {
	URL    string
	dir    string
	ctl    string
	port   int
	asUser []string
}

// StartServer runs initdb and a PostgreSQL server on a free loopback port in
// a temporary folder; the test's end stops it and removes the folder. As
// root, which PostgreSQL refuses to run as, the server runs as the postgres
// user.
func StartServer(t testing.TB) *Server {
	t.Helper()
	initdb, err := serverBinary("initdb")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := serverBinary("pg_ctl")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nexus-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{dir: filepath.Join(dir, "data"), ctl: ctl}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal("running as root, the private PostgreSQL server needs the postgres user: ", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := s.command(initdb, "-D", s.dir, "-U", "postgres", "--auth=trust", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// serverBinary finds a PostgreSQL server program on PATH or where Debian's
// postgresql package puts it (/usr/lib/postgresql/VERSION/bin), newest first.
func serverBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) == 0 {
		return "", fmt.Errorf("%s (the PostgreSQL server programs) is required: install postgresql (make deps)", name)
	}
	sort.Slice(found, func(i, j int) bool { return pgVersion(found[i]) > pgVersion(found[j]) })
	return found[0], nil
}

func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	if len(s.asUser) > 0 {
		return exec.Command(s.asUser[0], append(append(s.asUser[1:], name), args...)...)
	}
	return exec.Command(name, args...)
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, s.dir)
	cmd := s.command(s.ctl, "-D", s.dir, "-l", filepath.Join(s.dir, "server.log"), "-o", opts, "-w", "-t", "120", "start")
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("start postgres on port %d: %v\n%s\n%s", s.port, err, out, log)
	}
	return nil
}

// Stop stops the server at once, dropping its connections.
func (s *Server) Stop() error {
	out, err := s.command(s.ctl, "-D", s.dir, "-m", "immediate", "-w", "-t", "120", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop postgres on port %d: %v\n%s", s.port, err, out)
	}
	return nil
}
