package modelrouter

import (
	modelv1 "nexus.local/gen/nexus/model/v1"
)

// emitter forwards events to the caller and remembers whether any was sent,
// because that decides whether a failed turn may be retried.
type emitter struct {
	send    func(*modelv1.StreamTurnResponse) error
	sent    bool
	sendErr error
}

func (e *emitter) emit(ev *modelv1.StreamTurnResponse) error {
	if err := e.send(ev); err != nil {
		e.sendErr = err
		return err
	}
	e.sent = true
	return nil
}

func (e *emitter) thinking(s string) error {
	if s == "" {
		return nil
	}
	return e.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Thinking{Thinking: &modelv1.TextDelta{Text: s}}})
}

func (e *emitter) text(s string) error {
	if s == "" {
		return nil
	}
	return e.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_Text{Text: &modelv1.TextDelta{Text: s}}})
}

func (e *emitter) toolInput(id, name, partial string) error {
	if partial == "" {
		return nil
	}
	return e.emit(&modelv1.StreamTurnResponse{Event: &modelv1.StreamTurnResponse_ToolInputDelta{ToolInputDelta: &modelv1.ToolInputDelta{
		ToolCallId: id, ToolName: name, PartialJson: partial,
	}}})
}
