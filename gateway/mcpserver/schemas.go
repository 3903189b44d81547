package mcpserver

import (
	"github.com/google/jsonschema-go/jsonschema"

	"nexus.local/platform/mcpschema"
)

// toolSchemas are the tools' input and output schemas, inferred once from
// their Go types in the single-type form every MCP client reads (see
// platform/mcpschema), and shared by every per-request server.
type toolSchemas struct {
	runIn, runOut           *jsonschema.Schema
	sessionsIn, sessionsOut *jsonschema.Schema
	auditIn, auditOut       *jsonschema.Schema
}

func newToolSchemas() (toolSchemas, error) {
	var t toolSchemas
	var err error
	for _, step := range []func() error{
		func() (e error) { t.runIn, e = mcpschema.For[RunInput](); return },
		func() (e error) { t.runOut, e = mcpschema.For[RunOutput](); return },
		func() (e error) { t.sessionsIn, e = mcpschema.For[struct{}](); return },
		func() (e error) { t.sessionsOut, e = mcpschema.For[SessionsOutput](); return },
		func() (e error) { t.auditIn, e = mcpschema.For[AuditInput](); return },
		func() (e error) { t.auditOut, e = mcpschema.For[AuditOutput](); return },
	} {
		if err = step(); err != nil {
			return toolSchemas{}, err
		}
	}
	return t, nil
}
