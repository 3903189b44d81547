package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"nexus.local/platform/config"
	"nexus.local/platform/osproc"
)

// DevState is what a running nexus dev tells the CLI of the same person:
// which process it is and its data folder, where its orchestrator and
// gateway are (whatever ports they took), the authority its in-memory CA
// signs the orchestrator's certificate with, and the host pairing secret.
// It lives in a file only its owner can read, and is removed when nexus dev
// stops.
type DevState struct {
	PID              int    `json:"pid"`
	DataDir          string `json:"dataDir"`
	OrchestratorAddr string `json:"orchestratorAddr"`
	GatewayURL       string `json:"gatewayUrl"`
	CAPEM            string `json:"caPem"`
	PairingSecret    string `json:"pairingSecret"`
}

// DevStatePath is where nexus dev writes its DevState: NEXUS_DEV_STATE, or
// nexus/dev.json in the user's cache directory.
func DevStatePath(env config.Lookuper) (string, error) {
	if env != nil {
		if p, ok := env.Lookup("NEXUS_DEV_STATE"); ok && p != "" {
			return p, nil
		}
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("dev state: set NEXUS_DEV_STATE: %w", err)
	}
	return filepath.Join(dir, "nexus", "dev.json"), nil
}

// WriteDevState writes s to path, readable by its owner only.
func WriteDevState(path string, s DevState) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write dev state: %w", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("write dev state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write dev state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write dev state: %w", err)
	}
	return nil
}

// RemoveDevState removes the state at path when process pid wrote it: a
// nexus dev on another data folder that started since keeps its own.
func RemoveDevState(path string, pid int) {
	if s, err := loadDevState(path); err == nil && s.PID == pid {
		_ = os.Remove(path)
	}
}

func loadDevState(path string) (DevState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return DevState{}, err
	}
	var s DevState
	if err := json.Unmarshal(b, &s); err != nil {
		return DevState{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// readDevState returns the running nexus dev's state, when there is one.
func readDevState(env config.Lookuper) (DevState, bool) {
	s, err := runningDev(env)
	return s, err == nil
}

// runningDev answers the state of the nexus dev this user runs, or why
// there is none: no state file, or one left by a process that has ended.
func runningDev(env config.Lookuper) (DevState, error) {
	path, err := DevStatePath(env)
	if err != nil {
		return DevState{}, err
	}
	s, err := loadDevState(path)
	if errors.Is(err, os.ErrNotExist) {
		return DevState{}, fmt.Errorf("no nexus dev is running for this user (it writes %s while it runs)", path)
	}
	if err != nil {
		return DevState{}, fmt.Errorf("read the state of nexus dev: %w", err)
	}
	if s.PID > 0 && !osproc.Alive(s.PID) {
		return DevState{}, fmt.Errorf("no nexus dev is running for this user (%s names process %d, which has ended without removing it)", path, s.PID)
	}
	return s, nil
}

// resolveConn fills in a connection named by neither --addr nor --gateway
// (nor their environment variables) with the running nexus dev's
// orchestrator, wherever it listens; with none running the command cannot
// run as written.
func resolveConn(c Conn, env config.Lookuper) (Conn, error) {
	if c.Addr != "" || c.GatewayURL != "" {
		return c, nil
	}
	s, err := runningDev(env)
	if err != nil {
		return c, UsageError{fmt.Errorf("%w: start it (make run, or ./bin/nexus dev), or name a running Nexus with --addr or --gateway", err)}
	}
	c.Addr = s.OrchestratorAddr
	return c, nil
}
