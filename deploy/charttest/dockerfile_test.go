package charttest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDockerfile checks the image build against the workspace: the product
// module's go.mod and go.sum are copied before the source
// (so module downloads stay a cached layer), the build is -trimpath and
// stamps the version, and the build context keeps every embedded file.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	work, err := os.ReadFile("../../go.work")
	if err != nil {
		t.Fatal(err)
	}
	sourceCopy := strings.Index(df, "COPY . .")
	download := strings.Index(df, "go mod download")
	if sourceCopy < 0 || download < 0 || download > sourceCopy {
		t.Fatalf("go mod download (at %d) must come before COPY . . (at %d)", download, sourceCopy)
	}
	// The product is the root module (go.work's "."); deploy/ is the chart's
	// own and must stay out of the image's build.
	for _, m := range regexp.MustCompile(`(?m)^\s+\.(/\S+)?$`).FindAllStringSubmatch(string(work), -1) {
		switch mod := strings.TrimPrefix(m[1], "/"); mod {
		case "":
			want := "COPY go.mod go.sum ./"
			if i := strings.Index(df, want); i < 0 || i > download {
				t.Errorf("the Dockerfile does not copy go.mod and go.sum before the download: want %q", want)
			}
		case "deploy":
			if !strings.Contains(df, "GOWORK=off") {
				t.Error("the image build keeps the chart's test module in the workspace")
			}
		default:
			t.Errorf("go.work uses module %s, which the Dockerfile does not copy: the product is one module", mod)
		}
	}
	for _, want := range []string{"-trimpath", "platform/version/version.txt", "/out/nexus version", "USER 65532"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}

	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(ignore), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for _, want := range []string{".git", "**/node_modules"} {
		if !slices.Contains(patterns, want) {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
	// Files the binary embeds must stay in the context.
	for _, embedded := range []string{"gateway/web/dist/index.html", "services/capability/hosts", "services/modelrouter/replay/cassettes/demo.json", "platform/version/version.txt"} {
		for _, p := range patterns {
			ext := filepath.Ext(embedded)
			byExt := ext != "" && strings.HasPrefix(p, "*") && strings.HasSuffix(p, ext)
			if ok, _ := filepath.Match(p, embedded); ok || byExt || strings.HasPrefix(embedded, strings.TrimSuffix(p, "/")+"/") {
				t.Errorf(".dockerignore pattern %q leaves out %s, which the binary embeds", p, embedded)
			}
		}
	}
}
