package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// devLinkTokenFile holds, in the data folder, the host token nexus dev's own
// runtime links with. The host, its delivery log and the sessions bound to
// it are kept in the data folder's database across restarts, so the runtime
// keeps its token too, as a paired runtime does: a run a restart cut is
// offered again to the same host.
const devLinkTokenFile = "dev-link-token"

// devLinkToken reads the dev runtime's host token, making one at the first
// start.
func devLinkToken() (string, error) {
	dir, err := devDataDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, devLinkTokenFile)
	b, err := os.ReadFile(path)
	if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "nxh_") {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the dev host token: %w", err)
	}
	secret, err := randomHex(32)
	if err != nil {
		return "", err
	}
	token := "nxh_" + secret
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the data folder: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the dev host token: %w", err)
	}
	return token, nil
}
