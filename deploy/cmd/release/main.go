// Command release makes the parts of a release that need more than a
// compiler (make release, scripts/release.sh): the Helm chart's package,
// an SPDX software bill of materials, and the checksums of what dist/ holds.
//
//	release chart DIR OUT          package the chart in DIR into OUT (nexus-<version>.tgz)
//	release sbom OUT VERSION BIN LOCK
//	                               SPDX 2.3 JSON of the Go modules linked into BIN and the
//	                               web UI's runtime npm packages from LOCK (package-lock.json)
//	release sums DIR               SHA256SUMS of every other file in DIR
package main

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

func main() {
	if err := realMain(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func realMain(_ context.Context, args []string) error {
	switch {
	case len(args) == 3 && args[0] == "chart":
		return packageChart(args[1], args[2])
	case len(args) == 5 && args[0] == "sbom":
		return writeSBOM(args[1], args[2], args[3], args[4])
	case len(args) == 2 && args[0] == "sums":
		return writeSums(args[1])
	}
	return errors.New("usage: release chart DIR OUT | sbom OUT VERSION BIN LOCK | sums DIR")
}

// packageChart writes the chart as helm package does, after checking it.
func packageChart(dir, out string) error {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return fmt.Errorf("load chart: %w", err)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("chart %s: %w", dir, err)
	}
	path, err := chartutil.Save(c, out)
	if err != nil {
		return fmt.Errorf("package chart: %w", err)
	}
	fmt.Println(path)
	return nil
}

// spdxPackage is one package of an SPDX 2.3 document.
type spdxPackage struct {
	SPDXID           string       `json:"SPDXID"`
	Name             string       `json:"name"`
	VersionInfo      string       `json:"versionInfo"`
	DownloadLocation string       `json:"downloadLocation"`
	FilesAnalyzed    bool         `json:"filesAnalyzed"`
	LicenseConcluded string       `json:"licenseConcluded"`
	LicenseDeclared  string       `json:"licenseDeclared"`
	CopyrightText    string       `json:"copyrightText"`
	Checksums        []spdxSum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExtRef `json:"externalRefs,omitempty"`
	PrimaryPurpose   string       `json:"primaryPackagePurpose,omitempty"`
}

type spdxSum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExtRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRel struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// spdxID makes an SPDX identifier of free text.
func spdxID(kind, name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return "SPDXRef-" + kind + "-" + b.String()
}

func noassertion(p *spdxPackage) {
	p.DownloadLocation, p.LicenseConcluded, p.LicenseDeclared, p.CopyrightText = "NOASSERTION", "NOASSERTION", "NOASSERTION", "NOASSERTION"
}

// writeSBOM lists what the binary links (read from its build information,
// so it is exactly what was built) and the npm packages the web UI bundles.
func writeSBOM(out, version, bin, lock string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("read build info of %s: %w", bin, err)
	}
	sum, err := fileSum(bin)
	if err != nil {
		return err
	}
	root := spdxPackage{SPDXID: "SPDXRef-Package-nexus", Name: "nexus", VersionInfo: version, PrimaryPurpose: "APPLICATION",
		Checksums: []spdxSum{{"SHA256", sum}}}
	noassertion(&root)
	root.LicenseDeclared = "Apache-2.0"
	pkgs := []spdxPackage{root}
	rels := []spdxRel{{"SPDXRef-DOCUMENT", "DESCRIBES", root.SPDXID}}
	add := func(p spdxPackage) {
		pkgs = append(pkgs, p)
		rels = append(rels, spdxRel{root.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	goStd := spdxPackage{SPDXID: spdxID("Go", "stdlib"), Name: "stdlib", VersionInfo: strings.TrimPrefix(info.GoVersion, "go"), PrimaryPurpose: "LIBRARY",
		ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + info.GoVersion}}}
	noassertion(&goStd)
	add(goStd)
	for _, d := range info.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		p := spdxPackage{SPDXID: spdxID("Go", m.Path+"@"+m.Version), Name: m.Path, VersionInfo: m.Version, PrimaryPurpose: "LIBRARY",
			ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + m.Path + "@" + m.Version}}}
		noassertion(&p)
		if m.Sum != "" {
			p.ExternalRefs = append(p.ExternalRefs, spdxExtRef{"OTHER", "go-module-sum", m.Sum})
		}
		add(p)
	}
	npm, err := npmRuntime(lock)
	if err != nil {
		return err
	}
	for _, n := range npm {
		p := spdxPackage{SPDXID: spdxID("npm", n.name+"@"+n.version), Name: n.name, VersionInfo: n.version, PrimaryPurpose: "LIBRARY",
			ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", "pkg:npm/" + strings.ReplaceAll(n.name, "@", "%40") + "@" + n.version}}}
		noassertion(&p)
		if n.license != "" {
			p.LicenseDeclared = n.license
		}
		add(p)
	}
	doc := map[string]any{
		"spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0", "SPDXID": "SPDXRef-DOCUMENT",
		"name":              "nexus-" + version,
		"documentNamespace": "https://spdx.org/spdxdocs/nexus-" + version + "-" + sum[:16],
		"creationInfo": map[string]any{
			"created":  time.Now().UTC().Format(time.RFC3339),
			"creators": []string{"Tool: nexus-release"},
		},
		"packages":      pkgs,
		"relationships": rels,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write sbom: %w", err)
	}
	fmt.Printf("%s: %d packages\n", out, len(pkgs))
	return nil
}

type npmPkg struct{ name, version, license string }

// npmRuntime is every package of the lock that is not a development
// dependency: what the web UI's bundle may hold.
func npmRuntime(lock string) ([]npmPkg, error) {
	raw, err := os.ReadFile(lock)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", lock, err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
			License string `json:"license"`
			Dev     bool   `json:"dev"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("parse %s: %w", lock, err)
	}
	var out []npmPkg
	for path, p := range l.Packages {
		i := strings.LastIndex(path, "node_modules/")
		if i < 0 || p.Dev {
			continue
		}
		name := path[i+len("node_modules/"):]
		out = append(out, npmPkg{name, p.Version, p.License})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSums writes DIR/SHA256SUMS in sha256sum's format for every other
// file under DIR.
func writeSums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "SHA256SUMS" {
			return err
		}
		sum, err := fileSum(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		lines = append(lines, sum+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(lines)
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
