// Package openapi embeds the OpenAPI document generated from the public API,
// so the gateway can serve it without reading the file system.
package openapi

import _ "embed"

// Spec is the OpenAPI v2 document of OrchestratorService, as JSON.
//
//go:embed nexus.swagger.json
var Spec []byte
