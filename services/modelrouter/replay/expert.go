package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"nexus.local/eval"
)

// ExpertModel is the model name replay/expert reaches the replay server as.
const ExpertModel = "expert"

// expertListing is the expert's first look at the document, as a careful
// person would take before touching it.
const expertListing = `print("Document %s: %d objects" % (doc.Label, len(doc.Objects)))
for o in doc.Objects:
    print("- %s (%s) label=%r ifc=%r" % (o.Name, o.TypeId, o.Label, getattr(o, "IfcType", "")))
`

// expertRevitListing is that look in a Revit document: its levels and its
// building elements, by category.
const expertRevitListing = `from Autodesk.Revit.DB import *
print("Document %s" % doc.Title)
for l in FilteredElementCollector(doc).OfClass(Level):
    print("- level #%s %s at %.0f mm" % (l.Id.Value, l.Name, UnitUtils.ConvertFromInternalUnits(l.Elevation, UnitTypeId.Millimeters)))
for bic in (BuiltInCategory.OST_Walls, BuiltInCategory.OST_Doors, BuiltInCategory.OST_Windows):
    for e in FilteredElementCollector(doc).OfCategory(bic).WhereElementIsNotElementType():
        print("- #%s %s %s" % (e.Id.Value, e.Category.Name, e.Name))
`

// listing is the expert's first look at a document of the task's host.
func listing(t *eval.Task) string {
	if t.Host == eval.HostRevit {
		return expertRevitListing
	}
	return expertListing
}

// bytesPerToken is how the expert estimates its token counts from the
// bytes of a request and of its answer, as vendors' rules of thumb do; an
// attached image counts imageTokens, about what a vendor charges for a
// full-size view.
const (
	bytesPerToken = 4
	imageTokens   = 1600
)

// Expert is the replay/expert model: for the prompt of an eval task it
// plays that task's reference solution as model turns through the real
// loop: an inspection, then each reference script as its own tool call
// (task automation, or data collection for an inspection task), then a
// final message. It has no other solution: when a script of it fails, it
// says so and stops, so a broken path through Nexus fails the task.
type Expert struct {
	tasks []eval.Task
}

// LoadExpert builds the expert over the task set shipped with the binary.
func LoadExpert() (*Expert, error) {
	tasks, err := eval.Load(eval.Builtin())
	if err != nil {
		return nil, fmt.Errorf("load the eval tasks: %w", err)
	}
	return &Expert{tasks: tasks}, nil
}

// Serve starts the replay vendor that nexus dev and nexus eval put behind
// the replay models: replay/demo from the cassette at cassettePath (the
// built-in demo when empty) and replay/expert over the eval tasks. It
// serves on loopback until ctx ends and returns its base URL, which the
// model-router takes as NEXUS_REPLAY_BASE_URL.
func Serve(ctx context.Context, cassettePath string) (string, error) {
	cassette, err := LoadCassette(cassettePath)
	if err != nil {
		return "", fmt.Errorf("replay cassette: %w", err)
	}
	expert, err := LoadExpert()
	if err != nil {
		return "", err
	}
	url, err := NewServer(cassette).WithExpert(expert).Start(ctx)
	if err != nil {
		return "", fmt.Errorf("start the replay server: %w", err)
	}
	return url, nil
}

func (e *Expert) task(conv conversation) *eval.Task {
	for i := range e.tasks {
		t := &e.tasks[i]
		if (conv.prompt != "" && normalize(conv.prompt) == normalize(t.Prompt)) ||
			(conv.prompt == "" && strings.Contains(normalize(conv.summary), normalize(t.Prompt))) {
			return t
		}
	}
	return nil
}

// next is the expert's turn for the conversation so far.
func (e *Expert) next(conv conversation) Turn {
	t := e.task(conv)
	if t == nil {
		return said("The expert model only knows the prompts of the eval tasks (nexus eval --model replay/expert); this prompt is not one of them, so I did nothing.")
	}
	tool := toolAutomate
	if t.Kind == eval.KindInspect {
		tool = toolInspect
	}
	refs := t.Reference.Scripts
	inspected, done := false, 0
	var last *call
	for _, k := range conv.after {
		if !k.answered {
			continue
		}
		switch {
		case !inspected && k.name == toolInspect && k.code == listing(t):
			if k.isError || noResult(k) {
				return said(fmt.Sprintf("I could not list the document (%s), so I changed nothing.", errorOf(k.result)))
			}
			inspected = true
		case inspected && done < len(refs) && k.name == tool && k.code == refs[done]:
			if !succeeded(k) {
				return said(fmt.Sprintf("Script %d of %d did not succeed: %s. I have no other way to do this, so I stop here; "+
					"a transaction that did not commit left the document as it was before it.", done+1, len(refs), errorOf(k.result)))
			}
			last, done = k, done+1
		}
	}
	if conv.summaryRequest {
		return said(fmt.Sprintf("The person's prompt: %q\nThe document was %sinspected; %d of %d scripts succeeded.", t.Prompt, map[bool]string{true: "", false: "not yet "}[inspected], done, len(refs)))
	}
	switch {
	case !inspected:
		return toolTurn("I'll list what the document holds before I change anything.", toolInspect, "List the objects of the active document", listing(t))
	case done < len(refs):
		return toolTurn(fmt.Sprintf("Step %d of %d.", done+1, len(refs)), tool, fmt.Sprintf("Step %d of %d of: %s", done+1, len(refs), t.Prompt), refs[done])
	}
	out := outputOf(last.result)
	if t.Kind == eval.KindInspect {
		return said("Answer: " + out)
	}
	text := "Done: the script committed."
	if out != "" {
		text += " It reported: " + out
	}
	return said(text)
}

// succeeded says a script did what it was for: an automation committed, an
// inspection ran without an error.
func succeeded(k *call) bool {
	if k.name == toolAutomate {
		return committed(k)
	}
	return !k.isError && !noResult(k) && !strings.Contains(k.result, markBudget)
}

// outputOf is what a script printed, as the orchestrator quotes it after
// "Output:" up to the next blank line.
func outputOf(result string) string {
	_, out, ok := strings.Cut(result, "\nOutput:\n")
	if !ok {
		return ""
	}
	out, _, _ = strings.Cut(out, "\n\n")
	return strings.TrimSpace(out)
}

func toolTurn(text, tool, description, code string) Turn {
	input, _ := json.Marshal(map[string]string{"description": description, "code": code})
	return Turn{Content: []Block{{Type: "text", Text: text}, {Type: "tool_use", Name: tool, Input: input}}, StopReason: "tool_use"}
}

// estimateUsage counts a turn's tokens at bytesPerToken from the request's
// bytes (an image at imageTokens) and the turn's own.
func estimateUsage(body []byte, images int, imageBytes int, t Turn) Usage {
	in := int64((len(body)-imageBytes)/bytesPerToken + images*imageTokens)
	var out int
	for _, b := range t.Content {
		out += len(b.Text) + len(b.Thinking) + len(b.Input)
	}
	return Usage{InputTokens: in, OutputTokens: int64(max(1, out/bytesPerToken))}
}

// imagesIn counts the images a request attaches, in messages and in tool
// results, and the bytes of their data.
func imagesIn(req request) (n, size int) {
	type block struct {
		Type   string `json:"type"`
		Source struct {
			Data string `json:"data"`
		} `json:"source"`
		Content json.RawMessage `json:"content"`
	}
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var blocks []block
		if json.Unmarshal(raw, &blocks) != nil {
			return
		}
		for _, b := range blocks {
			if b.Type == "image" {
				n, size = n+1, size+len(b.Source.Data)
			}
			if len(b.Content) > 0 {
				walk(b.Content)
			}
		}
	}
	for _, m := range req.Messages {
		walk(m.Content)
	}
	return n, size
}
