// The JSON shapes of the public API, as the gateway writes them (protojson,
// camelCase, enums by name, zero values omitted).

export interface ExecError {
  type?: string;
  message?: string;
  traceback?: string;
  line?: number;
}

export interface HostImage {
  mimeType?: string;
  data?: string;
  view?: string;
  width?: number;
  height?: number;
  framed?: string;
}

export type ChangeKind = "CHANGE_KIND_UNSPECIFIED" | "CHANGE_KIND_ADDED" | "CHANGE_KIND_MODIFIED" | "CHANGE_KIND_DELETED";

/** The change report as data (host.v1 ChangeReport). */
export interface ChangeReport {
  elements?: { change?: ChangeKind; category?: string; name?: string; label?: string; properties?: string[] }[];
  helpers?: { change?: ChangeKind; kind?: string; count?: number }[];
}

export interface HostResult {
  committed?: boolean;
  stdout?: string;
  error?: ExecError;
  changes?: { added?: string[]; modified?: string[]; deleted?: string[] };
  epilogue?: { stdout?: string; error?: ExecError; contentHash?: string; report?: ChangeReport };
  images?: HostImage[];
  durationMs?: string | number;
  captureNote?: string;
  documentRevision?: string;
  previewed?: boolean;
  rollback?: RollbackExactness;
  rollbackDifferences?: string[];
}

/** Whether a rollback left the document exactly as before (host.v1 RollbackExactness). */
export type RollbackExactness = "ROLLBACK_EXACTNESS_UNSPECIFIED" | "ROLLBACK_EXACTNESS_EXACT" | "ROLLBACK_EXACTNESS_NOT_EXACT";

export type ToolName =
  | "TOOL_NAME_UNSPECIFIED"
  | "TOOL_NAME_EXECUTE_DATA_COLLECTION"
  | "TOOL_NAME_EXECUTE_TASK_AUTOMATION"
  | "TOOL_NAME_CAPTURE_VIEW";

export type ReviewState = "REVIEW_STATE_UNSPECIFIED" | "REVIEW_STATE_PREVIEW" | "REVIEW_STATE_AWAITING" | "REVIEW_STATE_APPROVED";

export type ReviewPolicy =
  | "REVIEW_POLICY_UNSPECIFIED"
  | "REVIEW_POLICY_EVERY_SCRIPT"
  | "REVIEW_POLICY_AUTOMATIONS"
  | "REVIEW_POLICY_NONE"
  | "REVIEW_POLICY_PREVIEW";

export type ReviewVerdict = "REVIEW_VERDICT_UNSPECIFIED" | "REVIEW_VERDICT_APPROVE" | "REVIEW_VERDICT_DECLINE";

export type ErrorCode =
  | "ERROR_CODE_UNSPECIFIED"
  | "ERROR_CODE_CANCELLED"
  | "ERROR_CODE_MAX_TOKENS"
  | "ERROR_CODE_TURN_LIMIT"
  | "ERROR_CODE_MODEL_ERROR"
  | "ERROR_CODE_STATE_UNAVAILABLE"
  | "ERROR_CODE_CAPABILITY_UNAVAILABLE"
  | "ERROR_CODE_REPLICA_LOST"
  | "ERROR_CODE_INTERNAL"
  | "ERROR_CODE_HOST_UNREACHABLE"
  | "ERROR_CODE_HOST_UNAUTHORIZED"
  | "ERROR_CODE_HOST_NOT_PAIRED"
  | "ERROR_CODE_HOST_MISMATCH"
  | "ERROR_CODE_REVIEW_TIMEOUT";

/** The courier failures a page may report instead of a result. */
export type CourierCode =
  | "ERROR_CODE_HOST_UNREACHABLE"
  | "ERROR_CODE_HOST_UNAUTHORIZED"
  | "ERROR_CODE_HOST_NOT_PAIRED"
  | "ERROR_CODE_HOST_MISMATCH";

export interface CourierFailure {
  code: CourierCode;
  message: string;
}

export interface ToolCall {
  toolCallId: string;
  toolName?: ToolName;
  description?: string;
  resultToken?: string;
  execute?: Record<string, unknown> & { code?: string; mode?: string; expectRevision?: string };
  exportView?: Record<string, unknown>;
  mergeNotes?: string[];
  hostApp?: string;
  traceparent?: string;
  epilogueStamp?: { hostApp?: string; capabilityVersion?: string; contentHash?: string };
  review?: ReviewState;
  preview?: HostResult;
  reviewer?: string;
  /** The linked host that carries the call; the page only watches it. */
  hostId?: string;
}

export interface TokenUsage {
  inputTokens?: string | number;
  outputTokens?: string | number;
  cacheReadTokens?: string | number;
  cacheWriteTokens?: string | number;
  reasoningTokens?: string | number;
  costUsd?: number;
}

export interface Metadata {
  runStarted?: { model?: string; hostApp?: string; prompt?: string; reviewPolicy?: ReviewPolicy };
  turnStarted?: { model?: string; phase?: string; maxTokens?: number };
  contextSummarized?: { model?: string; text?: string };
  turnRetried?: { model?: string; phase?: string; maxTokens?: number; text?: string };
  toolResult?: { toolCallId?: string; toolName?: ToolName; result?: HostResult; noResult?: boolean; preview?: boolean };
  notice?: { text?: string };
  turnRestarted?: { model?: string; text?: string };
  reviewDecided?: { toolCallId?: string; verdict?: ReviewVerdict; reviewer?: string; decideTime?: string; edited?: boolean };
  hostWaiting?: { toolCallId?: string; hostId?: string; hostApp?: string; offlineSince?: string };
}

export interface StreamChunk {
  seq?: string | number;
  runId?: string;
  sessionId?: string;
  metadata?: Metadata;
  thinking?: { text?: string };
  message?: { text?: string };
  toolInputDelta?: { toolCallId?: string; toolName?: ToolName; partialJson?: string };
  toolCall?: ToolCall;
  complete?: { text?: string; stopReason?: string };
  error?: { code?: ErrorCode; message?: string; retryable?: boolean; vendorCode?: string };
  usage?: { model?: string; total?: TokenUsage; turn?: TokenUsage; turns?: number; final?: boolean };
}

export interface Session {
  sessionId: string;
  hostApp?: string;
  model?: string;
  activeRunId?: string;
  lastRunId?: string;
  /** The session's runs, oldest first. */
  runIds?: string[];
  pendingToolCall?: { toolCallId?: string; toolName?: string; review?: ReviewState; toolCall?: ToolCall };
  createTime?: string;
  updateTime?: string;
  reviewPolicy?: ReviewPolicy;
  lastPrompt?: string;
}

export interface ModelInfo {
  id: string;
  displayName?: string;
  vendor?: string;
  available?: boolean;
  note?: string;
}

export interface HostInfo {
  hostApp?: string;
  hostVersion?: string;
  runtimeVersion?: string;
  document?: string;
  documentRevision?: string;
}
