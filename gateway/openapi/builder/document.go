package builder

import (
	"strconv"

	"nexus.local/gateway/route"
)

// DocumentPath is a session's document, answered and handed over as the
// file's bytes (gateway/document.go), not as JSON.
const DocumentPath = "/v1/sessions/{sessionId}/document"

// documentResponse is the 200 of the download.
func documentResponse() obj {
	return obj{
		"description": "The document's file as its host last saved it (FreeCAD: an .FCStd). Content-Disposition names the file; Last-Modified says when the host handed it over.",
		"headers": obj{
			"Content-Disposition": obj{"schema": obj{"type": "string"}, "description": "attachment; filename=\"<the file's name>\""},
			"Last-Modified":       obj{"schema": obj{"type": "string"}},
		},
		"content": obj{"application/octet-stream": obj{"schema": obj{"type": "string", "format": "binary"}}},
	}
}

// documentUpload is the PUT of the same path: how a linked host hands a
// saved document over, with its host token.
func documentUpload(routes map[string]route.Route) (obj, error) {
	rt, err := routeOf(routes, "putSessionDocument", "PUT", DocumentPath)
	if err != nil {
		return nil, err
	}
	responses := obj{
		"200": obj{"description": "Kept for download; the answer is the SessionDocument without its data.",
			"content": obj{"application/json": obj{"schema": obj{"$ref": "#/definitions/v1SessionDocument"}}}},
	}
	for _, code := range errorStatuses(DocumentPath, "PUT", rt) {
		responses[strconv.Itoa(code)] = obj{"$ref": "#/components/responses/" + responseName(code)}
	}
	sec, _ := security(rt)
	return obj{
		"security":    sec,
		"operationId": "putSessionDocument",
		"summary":     "A linked host hands over the document it saved for the session (host token only).",
		"description": "Called by a linked host runtime after it saved a commit of the session to its file. The body is the file's bytes, at most NEXUS_MAX_DOCUMENT_BYTES (413 names the limit); it replaces what the host handed over before. A session not bound to the host is 404.",
		"tags":        []any{"Nexus"},
		"parameters": []any{
			obj{"name": "sessionId", "in": "path", "required": true, "schema": obj{"type": "string"}},
			obj{"name": "fileName", "in": "query", "required": true, "description": "The file's name, without a folder, e.g. Nexus.FCStd.", "schema": obj{"type": "string"}},
		},
		"requestBody": obj{"required": true, "content": obj{"application/octet-stream": obj{"schema": obj{"type": "string", "format": "binary"}}}},
		"responses":   responses,
	}, nil
}
