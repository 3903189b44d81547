package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"nexus.local/platform/config"
)

// DevState is what a running nexus dev tells the CLI of the same person:
// where its orchestrator and gateway are, the authority its in-memory CA
// signs the orchestrator's certificate with, and the host pairing secret. It
// lives in a file only its owner can read, and is removed when nexus dev
// stops.
type DevState struct {
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

// readDevState returns the running nexus dev's state, when there is one.
func readDevState(env config.Lookuper) (DevState, bool) {
	path, err := DevStatePath(env)
	if err != nil {
		return DevState{}, false
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return DevState{}, false
	}
	var s DevState
	if json.Unmarshal(b, &s) != nil {
		return DevState{}, false
	}
	return s, true
}
