package builder

import (
	"fmt"

	agentv1 "nexus.local/gen/nexus/agent/v1"
)

// ErrorStatuses are the values an error's status takes: the gRPC code names
// of the Google API error model, and the HTTP names of the answers that model
// has no code of its own for. The gateway's tests check it never says another.
func ErrorStatuses() []string {
	return []string{
		"INVALID_ARGUMENT", "OUT_OF_RANGE", "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND",
		"METHOD_NOT_ALLOWED", "REQUEST_TIMEOUT", "ABORTED", "REQUEST_ENTITY_TOO_LARGE", "MISDIRECTED_REQUEST",
		"RESOURCE_EXHAUSTED", "CANCELLED", "UNIMPLEMENTED", "INTERNAL", "UNKNOWN", "DATA_LOSS", "UNAVAILABLE",
		"DEADLINE_EXCEEDED",
	}
}

// RefusalReasons are the values of a problem's reason: every
// RefusalReason but the unspecified one, in the proto's order.
func RefusalReasons() []string {
	values := agentv1.RefusalReason(0).Descriptor().Values()
	out := make([]string, 0, values.Len()-1)
	for i := range values.Len() {
		if v := values.Get(i); v.Number() != 0 {
			out = append(out, string(v.Name()))
		}
	}
	return out
}

// Event is one SSE event type of a run's stream: the event name the gateway
// writes and the StreamChunk field it carries.
type Event struct {
	// Name is the SSE event name, the chunk's oneof field.
	Name string
	// Field is the JSON name of that field in the frame's data.
	Field string
	// Schema names the event's schema in components.
	Schema string
}

// Events are the event types of a run's stream, one per arm of the
// StreamChunk oneof, in the proto's order.
func Events() []Event {
	arms := []string{"metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"}
	out := make([]Event, 0, len(arms))
	for _, a := range arms {
		out = append(out, Event{Name: a, Field: camel(a), Schema: pascal(a) + "Event"})
	}
	return out
}

func extraSchemas(defs obj) (obj, error) {
	chunk, _ := defs["v1StreamChunk"].(obj)
	fields, _ := chunk["properties"].(obj)
	out := obj{
		"Problem": obj{
			"type":        "object",
			"description": "The body of every error the gateway answers (media type application/problem+json, RFC 9457): the refusal's reason for a client to decide by, and a sentence for a person.",
			"required":    []any{"type", "title", "status", "detail", "reason", "code"},
			"properties": obj{
				"type":   obj{"type": "string", "enum": []any{"about:blank"}, "description": "Always about:blank: reason says which refusal it is."},
				"title":  obj{"type": "string", "description": "The HTTP status's text."},
				"status": obj{"type": "integer", "description": "The HTTP status."},
				"detail": obj{"type": "string", "description": "What failed and what to do, for a person. Never an internal address. Clients decide by reason, never by these words."},
				"reason": obj{"$ref": "#/components/schemas/RefusalReason"},
				"code":   obj{"type": "string", "enum": toAny(ErrorStatuses()), "description": "The gRPC code name (Google API error model), or the HTTP name for 405, 408, 409 (ABORTED), 413 and 421."},
				"limit": obj{
					"type":        "object",
					"description": "The input limit the request broke (reason REFUSAL_REASON_LIMIT_REACHED or REFUSAL_REASON_RATE_LIMITED).",
					"required":    []any{"name", "setting", "max", "actual"},
					"properties": obj{
						"name":    obj{"type": "string", "description": "e.g. prompt_bytes, body_bytes, images, json_depth, open_streams."},
						"setting": obj{"type": "string", "description": "The setting that sets it, e.g. NEXUS_MAX_PROMPT_BYTES."},
						"max":     obj{"type": "integer", "format": "int64"},
						"actual":  obj{"type": "integer", "format": "int64"},
					},
				},
			},
		},
		"RefusalReason": obj{
			"type":        "string",
			"enum":        toAny(RefusalReasons()),
			"description": "Why a request was refused (nexus.agent.v1.RefusalReason, the reason of the google.rpc.ErrorInfo every refusal of the gRPC API carries).",
		},
	}
	var arms []any
	for _, e := range Events() {
		field, ok := fields[e.Field]
		if !ok {
			return nil, fmt.Errorf("StreamChunk has no field %s for the %s event", e.Field, e.Name)
		}
		// The field's schema is the chunk's own, so the generated types of
		// events and of unary answers are the same.
		required := []any{"seq", "runId", "sessionId", e.Field}
		desc := "Data of an SSE frame `event: " + e.Name + "`, whose id is seq."
		if e.Name == "error" {
			// The gateway's own error frame, when the stream itself breaks,
			// has no id, seq, run or session.
			required = []any{e.Field}
			desc += " An error frame the gateway writes when the stream itself broke has no id and carries only error."
		}
		out[e.Schema] = obj{
			"type":        "object",
			"description": desc,
			"x-sse-event": e.Name,
			"required":    required,
			"properties": obj{
				"seq":       obj{"type": "string", "format": "int64", "description": "Per-run sequence number, starting at 1, strictly increasing; the frame's id."},
				"runId":     obj{"type": "string"},
				"sessionId": obj{"type": "string"},
				e.Field:     copyJSON(field),
			},
		}
		arms = append(arms, obj{"$ref": "#/components/schemas/" + e.Schema})
	}
	out["RunEvent"] = obj{
		"description": "The data of one frame of a run's event stream: a StreamChunk with exactly one of its event fields, the one the frame's event names.",
		"oneOf":       arms,
	}
	return out, nil
}
