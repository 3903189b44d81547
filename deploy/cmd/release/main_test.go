package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseParts is make release's fast check: the chart packages under
// its version, the SBOM lists the Go modules a binary links (this test's
// own) and the web UI's runtime npm packages and none of its development
// ones, and SHA256SUMS covers every other file.
func TestReleaseParts(t *testing.T) {
	dist := t.TempDir()
	if err := packageChart("../../nexus", dist); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dist, "nexus-0.1.0.tgz")); err != nil {
		t.Fatalf("chart package: %v", err)
	}
	sbom := filepath.Join(dist, "nexus.spdx.json")
	if err := writeSBOM(sbom, "9.9.9", os.Args[0], "../../../gateway/web/package-lock.json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name, VersionInfo string
		} `json:"packages"`
	}
	raw, _ := os.ReadFile(sbom)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range doc.Packages {
		names[p.Name] = p.VersionInfo
	}
	if doc.SPDXVersion != "SPDX-2.3" || names["nexus"] != "9.9.9" || names["helm.sh/helm/v3"] == "" {
		t.Errorf("SBOM %s with nexus %q and helm %q, want SPDX-2.3, 9.9.9 and the linked helm module", doc.SPDXVersion, names["nexus"], names["helm.sh/helm/v3"])
	}
	for _, runtime := range []string{"marked", "dompurify", "eventsource-parser"} {
		if names[runtime] == "" {
			t.Errorf("the SBOM lacks the web UI's %s", runtime)
		}
	}
	for _, dev := range []string{"vite", "vitest", "typescript", "jsdom"} {
		if names[dev] != "" {
			t.Errorf("the SBOM lists the development package %s, which no release holds", dev)
		}
	}
	if err := writeSums(dist); err != nil {
		t.Fatal(err)
	}
	sums, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  nexus-0.1.0.tgz") && !strings.HasSuffix(lines[1], "  nexus-0.1.0.tgz") {
		t.Errorf("SHA256SUMS:\n%s\nwant the chart and the SBOM", sums)
	}
}
