// The JSON shapes of the public API, as the gateway writes them (protojson,
// camelCase, enums by name, zero values omitted). They are the generated
// gen/openapi/nexus.d.ts (openapi-typescript over the gateway's own
// /openapi.json, the document tests/client is built from; `make gen` writes
// it and the drift check holds it), so the page cannot drift from the API.
// This file only names them and marks the few fields the gateway always sets.
import type { components } from "../../../gen/openapi/nexus";

type S = components["schemas"];

export type ExecError = S["ExecError"];
export type HostImage = S["Image"];
export type ChangeKind = S["ChangeKind"];
/** The change report as data (host.v1 ChangeReport). */
export type ChangeReport = S["ChangeReport"];
export type HostResult = S["HostResult"];
export type RollbackExactness = S["RollbackExactness"];
export type ToolName = S["ToolName"];
export type ReviewState = S["ReviewState"];
export type ReviewPolicy = S["ReviewPolicy"];
export type ReviewVerdict = S["ReviewVerdict"];
export type ErrorCode = S["ErrorCode"];
/** Why the gateway refused a request, and the problem body that says so. */
export type RefusalReason = S["RefusalReason"];
export type Problem = S["Problem"];
export type Phase = S["Phase"];

/** The courier failures a page may report instead of a result. */
export type CourierCode = Extract<
  ErrorCode,
  "ERROR_CODE_HOST_UNREACHABLE" | "ERROR_CODE_HOST_UNAUTHORIZED" | "ERROR_CODE_HOST_NOT_PAIRED" | "ERROR_CODE_HOST_MISMATCH"
>;

export interface CourierFailure {
  code: CourierCode;
  message: string;
}

/** A tool call; the gateway always names it. */
export type ToolCall = S["ToolCall"] & { toolCallId: string };
export type TokenUsage = S["TokenUsage"];
export type Metadata = S["Metadata"];

/** One chunk of a run's stream: its envelope and exactly one of the rest. */
export type StreamChunk = { seq?: string; runId?: string; sessionId?: string } & Partial<{
  metadata: Metadata;
  thinking: S["Thinking"];
  message: S["MessageDelta"];
  toolInputDelta: S["ToolInputDelta"];
  toolCall: ToolCall;
  complete: S["Complete"];
  error: S["Error"];
  usage: S["Usage"];
}>;

/** A session; the gateway always names it. */
export type Session = S["Session"] & { sessionId: string };
/** A desktop host linked to the person; the gateway always names it. */
export type LinkedHost = S["LinkedHost"] & { hostId: string };
/** A pairing that waits for the person's approval, as its runtime described itself. */
export type PendingPairing = S["PendingPairing"];
/** A model of the catalog; the gateway always names it. */
export type ModelInfo = S["Model"] & { id: string };

/** What a host runtime's GET /v1/info answers (the host contract, not the
 * gateway's API, so it is not in the gateway's document). */
export interface HostInfo {
  hostApp?: string;
  hostVersion?: string;
  runtimeVersion?: string;
  document?: string;
  documentRevision?: string;
}
