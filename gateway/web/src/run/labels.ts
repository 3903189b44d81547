import type { RolledBackStatus } from "../rollback";
import type { ToolName } from "../types";

// What the page calls the parts of a run: tool names, statuses, phases and
// error codes in the person's words.

export type ToolStatus =
  | "awaiting review"
  | "approved"
  | "waiting for the host"
  | "previewing"
  | "previewed"
  | "running"
  | "committed"
  | "read-only"
  | RolledBackStatus
  | "failed in preview"
  | "declined"
  | "not delivered"
  | "no result";

/** What a run is doing now; since resets when its kind changes. */
export interface Activity {
  kind: "start" | "model" | "host" | "review" | "ended";
  label: string;
  since: number;
}

const toolLabels: Record<ToolName, string> = {
  TOOL_NAME_UNSPECIFIED: "tool",
  TOOL_NAME_EXECUTE_DATA_COLLECTION: "Inspect (read-only)",
  TOOL_NAME_EXECUTE_TASK_AUTOMATION: "Change the document",
  TOOL_NAME_CAPTURE_VIEW: "Capture a view",
};

export function toolLabel(name: ToolName | string | undefined): string {
  return toolLabels[name as ToolName] ?? (name || "tool");
}

export const phaseLabels: Record<string, string> = {
  PHASE_INITIAL: "first turn",
  PHASE_POST_DATA_COLLECTION: "writing the change",
  PHASE_EDIT: "fixing the script",
  PHASE_VERIFY: "checking the result",
  PHASE_SUMMARY: "summarising",
};

/** What an error code means for the person, and what to do about it. */
export function describeError(code: string | undefined, message: string | undefined): { title: string; hint: string } {
  const m = message ?? "";
  switch (code) {
    case "ERROR_CODE_HOST_UNREACHABLE":
      return {
        title: "The host runtime could not be reached",
        hint: "Nothing ran. On this page: start the runtime, or fix its URL under Sessions and host (Save and check), then run the prompt again.",
      };
    case "ERROR_CODE_HOST_UNAUTHORIZED":
      return {
        title: "The host runtime refused this page's pairing token",
        hint: "Nothing ran. On this page: enter the token the runtime printed under Sessions and host (or open the URL nexus dev printed), then run the prompt again.",
      };
    case "ERROR_CODE_HOST_NOT_PAIRED":
      return {
        title: "No host runtime is paired with this page",
        hint: "Nothing ran. On this page: enter the runtime's URL and token under Sessions and host (or open the URL nexus dev printed), then run the prompt again.",
      };
    case "ERROR_CODE_HOST_MISMATCH":
      return {
        title: "The paired runtime is for another application",
        hint: "Nothing ran. Pair the runtime of this session's application, or start a new session for the paired one.",
      };
    case "ERROR_CODE_CANCELLED":
      return { title: "Cancelled", hint: m || "You cancelled the run." };
    case "ERROR_CODE_REVIEW_TIMEOUT":
      return { title: "Nobody reviewed the script in time", hint: "It did not run. Run the prompt again to review it." };
    case "ERROR_CODE_MAX_TOKENS":
      return { title: "The model ran out of output budget", hint: "Try a smaller request or a model with a larger output budget." };
    case "ERROR_CODE_TURN_LIMIT":
      return { title: "The run reached its turn limit", hint: "Check the document, then ask for what is left." };
    case "ERROR_CODE_STORE_FULL":
      return {
        title: "The server's disk is full",
        hint: "Nexus could not save the run, so it ended. Trying again will not help until space is freed where the server keeps its data; then run the prompt again.",
      };
    case "ERROR_CODE_STATE_UNAVAILABLE":
      return { title: "The server's store was unavailable", hint: "This passes: run the prompt again shortly." };
    case "ERROR_CODE_MODEL_ERROR":
      return { title: "The model failed", hint: "Try again, or pick another model." };
    default:
      return { title: (code ?? "error").replace(/^ERROR_CODE_/, "").toLowerCase().replace(/_/g, " "), hint: "" };
  }
}

/** The call a preview call stands for: previews have ids "<id>.preview<N>". */
export function baseCallId(id: string): string {
  return id.replace(/\.preview\d+$/, "");
}
