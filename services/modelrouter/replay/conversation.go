package replay

// This file reads what a vendor request says of the conversation so far: the
// tool calls it holds and what came back for each.

import (
	"encoding/json"
	"strings"
)

// request is the part of a Messages API request the replay reads.
type request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type reqBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// blocksOf reads message content, which is a string or a list of blocks.
func blocksOf(raw json.RawMessage) []reqBlock {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return []reqBlock{{Type: "text", Text: text}}
	}
	var blocks []reqBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil
	}
	return blocks
}

// call is one tool call after the latest prompt and its result, if any.
type call struct {
	name string
	// code is the script the call sent.
	code     string
	answered bool
	result   string
	isError  bool
}

// conversation is what a request says about where the work stands.
type conversation struct {
	// prompt is the person's latest prompt.
	prompt string
	// summary is a compaction summary that replaced the prompt.
	summary string
	// summaryRequest says the request asks for a summary to compact with.
	summaryRequest bool
	// after are the tool calls since the prompt, in order.
	after []*call
	// calls counts the tool calls of the whole conversation, so new call ids
	// never repeat one.
	calls int
}

// read finds the latest prompt and the calls and results after it. Any text
// of the person counts as a new prompt, also beside tool results: that is
// how the orchestrator adds a prompt after a cancelled run, whose results
// then belong to the earlier prompt.
func read(req request) conversation {
	var c conversation
	byID := map[string]*call{}
	for _, m := range req.Messages {
		var said []string
		for _, b := range blocksOf(m.Content) {
			switch b.Type {
			case "tool_use":
				c.calls++
				k := &call{name: b.Name, code: codeOf(b.Input)}
				byID[b.ID] = k
				c.after = append(c.after, k)
			case "tool_result":
				if k := byID[b.ToolUseID]; k != nil {
					k.answered, k.result, k.isError = true, resultText(b.Content), b.IsError
				}
			case "text":
				if m.Role == "user" && strings.TrimSpace(b.Text) != "" {
					said = append(said, b.Text)
				}
			}
		}
		if m.Role != "user" {
			continue
		}
		text := strings.Join(said, "\n")
		c.summaryRequest = strings.Contains(text, markSummaryRequest)
		switch {
		case text == "" || c.summaryRequest:
		case strings.HasPrefix(strings.TrimSpace(text), markSummary):
			// The calls kept after a summary still follow the prompt it
			// stands for.
			c.prompt, c.summary = "", text
		default:
			c.prompt, c.summary, c.after = text, "", nil
			byID = map[string]*call{}
		}
	}
	return c
}

// codeOf reads the script of a tool call's input.
func codeOf(input json.RawMessage) string {
	var in struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Code
}

// resultText joins the text of a tool result, a string or a list of blocks.
func resultText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocksOf(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
