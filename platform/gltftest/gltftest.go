// Package gltftest holds a host runtime's 3D export (binary glTF 2.0) to
// material nobody here wrote: the Khronos glTF validator (npm
// gltf-validator, installed in tests/gltf from its lockfile), and reads the
// file's own JSON chunk for what a test checks beside it.
package gltftest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Report is the part of the validator's report the tests read.
type Report struct {
	ValidatorVersion string `json:"validatorVersion"`
	Issues           struct {
		NumErrors   int `json:"numErrors"`
		NumWarnings int `json:"numWarnings"`
		Messages    []struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Severity int    `json:"severity"`
			Pointer  string `json:"pointer"`
		} `json:"messages"`
	} `json:"issues"`
	Info struct {
		TotalTriangleCount int `json:"totalTriangleCount"`
		TotalVertexCount   int `json:"totalVertexCount"`
		DrawCallCount      int `json:"drawCallCount"`
	} `json:"info"`
}

// Node is one node of a .glb's scene.
type Node struct {
	Name   string         `json:"name"`
	Mesh   *int           `json:"mesh"`
	Extras map[string]any `json:"extras"`
}

// Validate runs the Khronos validator on glb and fails t on any error it
// reports (warnings are logged); it answers the report.
func Validate(t testing.TB, glb []byte) Report {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "tests", "gltf")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "gltf-validator")); err != nil {
		t.Fatalf("the glTF validator is not installed in %s: run make deps (%v)", dir, err)
	}
	path := filepath.Join(t.TempDir(), "model.glb")
	if err := os.WriteFile(path, glb, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "validate.mjs", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("run the glTF validator: %v\n%s", err, out)
	}
	var r Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("read the glTF validator's report: %v\n%s", err, out)
	}
	for _, m := range r.Issues.Messages {
		if m.Severity == 0 {
			t.Errorf("glTF validator %s: %s %s at %s", r.ValidatorVersion, m.Code, m.Message, m.Pointer)
		} else if m.Severity == 1 {
			t.Logf("glTF validator warning: %s %s at %s", m.Code, m.Message, m.Pointer)
		}
	}
	if r.Issues.NumErrors > 0 {
		t.Fatalf("the glTF validator found %d errors", r.Issues.NumErrors)
	}
	return r
}

// Nodes answers the nodes of a .glb's JSON chunk, in order.
func Nodes(t testing.TB, glb []byte) []Node {
	t.Helper()
	return document(t, glb).Nodes
}

// Extent answers the smallest and largest coordinates of every position in
// a .glb, from its POSITION accessors' min and max (which the validator
// holds to the data).
func Extent(t testing.TB, glb []byte) (lo, hi [3]float64) {
	t.Helper()
	doc := document(t, glb)
	lo, hi = [3]float64{math.Inf(1), math.Inf(1), math.Inf(1)}, [3]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	for _, m := range doc.Meshes {
		for _, p := range m.Primitives {
			a := doc.Accessors[p.Attributes.Position]
			for i := range 3 {
				lo[i], hi[i] = math.Min(lo[i], a.Min[i]), math.Max(hi[i], a.Max[i])
			}
		}
	}
	return lo, hi
}

type gltfDocument struct {
	Nodes  []Node `json:"nodes"`
	Meshes []struct {
		Primitives []struct {
			Attributes struct {
				Position int `json:"POSITION"`
			} `json:"attributes"`
		} `json:"primitives"`
	} `json:"meshes"`
	Accessors []struct {
		Min []float64 `json:"min"`
		Max []float64 `json:"max"`
	} `json:"accessors"`
}

func document(t testing.TB, glb []byte) gltfDocument {
	t.Helper()
	if len(glb) < 20 || binary.LittleEndian.Uint32(glb[0:4]) != 0x46546C67 {
		t.Fatalf("not a binary glTF file (%d bytes)", len(glb))
	}
	n := int(binary.LittleEndian.Uint32(glb[12:16]))
	if binary.LittleEndian.Uint32(glb[16:20]) != 0x4E4F534A || 20+n > len(glb) {
		t.Fatalf("the .glb's first chunk is not its JSON")
	}
	var doc gltfDocument
	if err := json.Unmarshal(glb[20:20+n], &doc); err != nil {
		t.Fatalf("decode the .glb's JSON chunk: %v", err)
	}
	return doc
}
