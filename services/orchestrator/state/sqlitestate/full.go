package sqlitestate

import (
	"errors"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"nexus.local/services/orchestrator/state"
)

// fullError marks a write SQLite refused for want of room on the data
// folder's disk: state.ErrFull, so a client is told the store is full and
// not that the service is away, and state.ErrUnavailable too, since it
// passes once the person frees space (runs wait for it, as on a full Redis).
type fullError struct{ err error }

func (e fullError) Error() string {
	return "the state store is full: the disk of the data folder has no room left for the SQLite file (free some space): " + e.err.Error()
}
func (e fullError) Unwrap() error { return e.err }
func (e fullError) Is(target error) bool {
	return target == state.ErrFull || target == state.ErrUnavailable
}

// classify marks err as a full store when SQLite or the system says so.
func classify(err error) error {
	var serr *sqlite.Error
	if err != nil && (errors.As(err, &serr) && serr.Code()&0xff == sqlite3.SQLITE_FULL || errors.Is(err, syscall.ENOSPC)) {
		return fullError{err}
	}
	return err
}
