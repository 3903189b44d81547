// The JSON shapes of the public API, as the gateway writes them (protojson,
// camelCase, zero values omitted).

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
}

export interface HostResult {
  committed?: boolean;
  stdout?: string;
  error?: ExecError;
  changes?: { added?: string[]; modified?: string[]; deleted?: string[] };
  epilogue?: { stdout?: string; error?: ExecError; contentHash?: string };
  images?: HostImage[];
  durationMs?: string | number;
}

export interface ToolCall {
  toolCallId: string;
  toolName?: string;
  description?: string;
  resultToken?: string;
  execute?: Record<string, unknown> & { code?: string; mode?: string };
  exportView?: Record<string, unknown>;
  mergeNotes?: string[];
  hostApp?: string;
  traceparent?: string;
}

export interface Usage {
  inputTokens?: string | number;
  outputTokens?: string | number;
  cacheReadTokens?: string | number;
  cacheWriteTokens?: string | number;
  reasoningTokens?: string | number;
  costUsd?: number;
}

export interface StreamChunk {
  seq?: string | number;
  runId?: string;
  sessionId?: string;
  metadata?: {
    kind?: string;
    model?: string;
    phase?: string;
    maxTokens?: number;
    text?: string;
    toolCallId?: string;
    toolResult?: HostResult;
    noResult?: boolean;
    hostApp?: string;
    prompt?: string;
  };
  thinking?: { text?: string };
  message?: { text?: string };
  toolInputDelta?: { toolCallId?: string; toolName?: string; partialJson?: string };
  toolCall?: ToolCall;
  complete?: { text?: string; stopReason?: string };
  error?: { code?: string; message?: string; retryable?: boolean };
  usage?: { model?: string; total?: Usage; turn?: Usage; turns?: number; final?: boolean };
}

export interface Session {
  sessionId: string;
  hostApp?: string;
  model?: string;
  activeRunId?: string;
  lastRunId?: string;
  /** The session's runs, oldest first. */
  runIds?: string[];
  pendingToolCall?: { toolCallId?: string; toolName?: string };
  createTime?: string;
}

export interface ModelInfo {
  id: string;
  displayName?: string;
  vendor?: string;
}
