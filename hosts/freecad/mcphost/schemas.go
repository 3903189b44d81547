package mcphost

import (
	"github.com/google/jsonschema-go/jsonschema"

	"nexus.local/platform/mcpschema"
)

// The bounds of capture_view's maxPx, as the runtime enforces them.
const (
	viewPxMin = 64
	viewPxMax = 4096
)

// toolSchemas are the tools' input and output schemas in the single-type
// form every MCP client reads (see platform/mcpschema), with the bounds the
// runtime enforces written into them rather than only into the words.
type toolSchemas struct {
	inspectIn, inspectOut         *jsonschema.Schema
	transactionIn, transactionOut *jsonschema.Schema
	viewIn, viewOut               *jsonschema.Schema
}

func newToolSchemas() (toolSchemas, error) {
	var t toolSchemas
	for _, step := range []func() error{
		func() (e error) { t.inspectIn, e = mcpschema.For[InspectInput](); return },
		func() (e error) { t.inspectOut, e = mcpschema.For[InspectOutput](); return },
		func() (e error) { t.transactionIn, e = mcpschema.For[TransactionInput](); return },
		func() (e error) { t.transactionOut, e = mcpschema.For[TransactionOutput](); return },
		func() (e error) { t.viewIn, e = mcpschema.For[ViewInput](); return },
		func() (e error) { t.viewOut, e = mcpschema.For[ViewOutput](); return },
		func() error { return mcpschema.Bound(t.viewIn, "maxPx", viewPxMin, viewPxMax) },
	} {
		if err := step(); err != nil {
			return toolSchemas{}, err
		}
	}
	return t, nil
}
