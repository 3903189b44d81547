// Package tool names the tools the model is given and declares them once:
// transcripts, the UI, the audit log and the metrics name them alike.
package tool

import (
	agentv1 "nexus.local/gen/nexus/agent/v1"
	modelv1 "nexus.local/gen/nexus/model/v1"
)

// Tool names are part of the product's contract: transcripts, the UI and
// the audit log all name them.
const (
	DataCollection = "execute_data_collection"
	TaskAutomation = "execute_task_automation"
	CaptureView    = "capture_view"
)

// Specs returns the tools the model sees, declared once; the model-router
// translates them into each vendor's dialect.
func Specs() []*modelv1.ToolSpec {
	return []*modelv1.ToolSpec{
		{
			Name: DataCollection,
			Description: "Run a read-only script in the open document of the host application and get back what it prints. " +
				"Use it to inspect the document before changing it: names, levels, types, counts. It cannot change anything.",
			InputSchemaJson: `{"type":"object","properties":{` +
				`"code":{"type":"string","description":"The script. Print what you need to see."},` +
				`"description":{"type":"string","description":"One sentence saying what the script looks up."}},` +
				`"required":["code","description"],"additionalProperties":false}`,
		},
		{
			Name: TaskAutomation,
			Description: "Run a script that changes the document inside one transaction: it commits whole or rolls back whole. " +
				"Send either the whole script in code, or edits: line-targeted replacements applied to the last script you sent. " +
				"After a commit you get the script's output, a change report of what actually changed, and usually a rendered view. " +
				"After a rollback the document is exactly as before and you get the error.",
			InputSchemaJson: `{"type":"object","properties":{` +
				`"description":{"type":"string","description":"One sentence saying what the script changes."},` +
				`"code":{"type":"string","description":"The whole script. Leave out when sending edits."},` +
				`"edits":{"type":"array","description":"Replacements applied to the last script, bottom-up. Line numbers refer to that script before any edit. end_line = start_line - 1 inserts before start_line; empty new_text deletes.",` +
				`"items":{"type":"object","properties":{` +
				`"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":0},"new_text":{"type":"string"}},` +
				`"required":["start_line","end_line","new_text"],"additionalProperties":false}}},` +
				`"required":["description"],"additionalProperties":false}`,
		},
		{
			Name:        CaptureView,
			Description: "Get a rendered image of a view of the document, to look at the result of your work.",
			InputSchemaJson: `{"type":"object","properties":{` +
				`"view":{"type":"string","description":"The view, e.g. \"isometric\" or \"plan\"; leave out for the host's default."}},` +
				`"additionalProperties":false}`,
		},
	}
}

// NameEnum names a tool for clients; a name the model made up is
// unspecified.
func NameEnum(name string) agentv1.ToolName {
	switch name {
	case DataCollection:
		return agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION
	case TaskAutomation:
		return agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION
	case CaptureView:
		return agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW
	}
	return agentv1.ToolName_TOOL_NAME_UNSPECIFIED
}

// NameOf is the model's name of a call's tool.
func NameOf(c *agentv1.ToolCall) string {
	switch c.GetToolName() {
	case agentv1.ToolName_TOOL_NAME_EXECUTE_DATA_COLLECTION:
		return DataCollection
	case agentv1.ToolName_TOOL_NAME_EXECUTE_TASK_AUTOMATION:
		return TaskAutomation
	case agentv1.ToolName_TOOL_NAME_CAPTURE_VIEW:
		return CaptureView
	}
	return ""
}
