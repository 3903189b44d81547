// Package openapi embeds the OpenAPI 3 document of the gateway's HTTP API.
// The document is made at build time: `go generate` runs ./gen, which calls
// package builder, and writes openapi.json; the drift check and this
// package's tests fail when it is not what the protos and the builder make.
// The gateway links only this package, never the builder.
package openapi

//go:generate go run ./gen openapi.json

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed openapi.json
var committed []byte

// Document is the committed document with version, the running build's, as
// its info.version.
func Document(version string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(committed, &doc); err != nil {
		return nil, fmt.Errorf("read the embedded openapi document: %w", err)
	}
	info, ok := doc["info"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the embedded openapi document has no info")
	}
	info["version"] = version
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the openapi document: %w", err)
	}
	return out, nil
}

// Committed is the document as committed, with DevVersion as its version.
func Committed() []byte { return committed }
