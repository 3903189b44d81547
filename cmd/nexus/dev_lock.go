package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"nexus.local/platform/osproc"
)

// devLockName is the file in the data folder that the one nexus dev using
// the folder holds locked: two would share one database, one FreeCAD
// document and its call ledger without either knowing.
const devLockName = "nexus.lock"

// devHolder is what the lock file says of the process holding it.
type devHolder struct {
	PID     int       `json:"pid"`
	URL     string    `json:"url,omitempty"`
	Started time.Time `json:"started"`
}

// devLock is a data folder held by this process until release.
type devLock struct {
	f *os.File
}

// lockDataDir takes dir for this process, or says which nexus dev holds it.
// The kernel lets the lock go with the process, however it ends, so a
// crash leaves no folder locked.
func lockDataDir(dir string) (*devLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the data folder NEXUS_DATA_DIR=%s: %w", dir, err)
	}
	path := filepath.Join(dir, devLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the data folder's lock %s: %w", path, err)
	}
	if err := osproc.TryLock(f); err != nil {
		defer f.Close()
		if !errors.Is(err, osproc.ErrLocked) {
			return nil, fmt.Errorf("lock the data folder %s: %w", dir, err)
		}
		var h devHolder
		b, _ := os.ReadFile(path)
		if json.Unmarshal(b, &h) != nil || h.PID == 0 {
			return nil, fmt.Errorf("the data folder %s is in use by another nexus dev that is still starting: stop it first, or give this one another folder with NEXUS_DATA_DIR", dir)
		}
		where := ""
		if h.URL != "" {
			where = " at " + h.URL
		}
		return nil, fmt.Errorf("the data folder %s is in use by another nexus dev (process %d, running%s since %s): stop it first, or give this one another folder with NEXUS_DATA_DIR",
			dir, h.PID, where, h.Started.Local().Format(time.DateTime))
	}
	l := &devLock{f: f}
	if err := l.say(devHolder{PID: os.Getpid(), Started: time.Now()}); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// say writes what the lock file tells a second nexus dev.
func (l *devLock) say(h devHolder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write the data folder's lock: %w", err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write the data folder's lock: %w", err)
	}
	return nil
}

// release lets the folder go; the file stays, empty of meaning once
// unlocked.
func (l *devLock) release() {
	osproc.Unlock(l.f)
	_ = l.f.Close()
}
