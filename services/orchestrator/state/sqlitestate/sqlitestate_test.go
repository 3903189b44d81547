package sqlitestate_test

import (
	"context"
	"testing"
	"time"

	"nexus.local/platform/sqlstore"
	"nexus.local/services/orchestrator/state"
	"nexus.local/services/orchestrator/state/sqlitestate"
	"nexus.local/services/orchestrator/state/statetest"
)

// openDB opens the SQLite file of a fresh data folder, as nexus dev does, and
// closes it when the test ends.
func openDB(t testing.TB, dir string) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(t.Context(), sqlstore.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func openStore(t testing.TB, db *sqlstore.DB, opts sqlitestate.Options) *sqlitestate.Store {
	t.Helper()
	s, err := sqlitestate.Open(t.Context(), db.SQLite(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Store {
		return openStore(t, openDB(t, t.TempDir()), sqlitestate.Options{})
	})
}

func TestRetention(t *testing.T) {
	statetest.RunRetention(t, func(t *testing.T, r statetest.Retention) (state.Store, func(time.Duration)) {
		clock := statetest.NewClock()
		s := openStore(t, openDB(t, t.TempDir()), sqlitestate.Options{Now: clock.Now, SessionTTL: r.Sessions, EventTTL: r.Events})
		return s, clock.Advance
	})
}

func TestOpenRefusesNoDatabase(t *testing.T) {
	if _, err := sqlitestate.Open(context.Background(), nil, sqlitestate.Options{}); err == nil {
		t.Fatal("open without a database succeeded")
	}
}

func TestHostsConformance(t *testing.T) {
	statetest.RunHosts(t, func(t *testing.T) state.Hosts {
		return sqlitestate.NewHosts(openStore(t, openDB(t, t.TempDir()), sqlitestate.Options{}))
	})
}

func TestDocumentsConformance(t *testing.T) {
	statetest.RunDocuments(t, func(t *testing.T) state.Documents {
		return sqlitestate.NewDocuments(openStore(t, openDB(t, t.TempDir()), sqlitestate.Options{}))
	})
}

func TestModelsConformance(t *testing.T) {
	statetest.RunModels(t, func(t *testing.T) state.Models {
		return sqlitestate.NewModels(openStore(t, openDB(t, t.TempDir()), sqlitestate.Options{}))
	})
}

// TestDurable closes the data folder's database and opens it again between
// the writes and the reads, as a restart of nexus dev does.
func TestDurable(t *testing.T) {
	statetest.RunDurable(t, func(t *testing.T) (state.Hosts, state.Documents, statetest.Reopen) {
		dir := t.TempDir()
		db, err := sqlstore.Open(t.Context(), sqlstore.Config{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		s := openStore(t, db, sqlitestate.Options{})
		return sqlitestate.NewHosts(s), sqlitestate.NewDocuments(s), func(t *testing.T) (state.Hosts, state.Documents) {
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, openDB(t, dir), sqlitestate.Options{})
			return sqlitestate.NewHosts(s), sqlitestate.NewDocuments(s)
		}
	})
}
