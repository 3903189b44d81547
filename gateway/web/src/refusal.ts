// A request the gateway refused, said in words: by the limit it names or
// by its reason, never by the gateway's sentence.
import type { RefusalReason } from "./types";

/** The limit a refusal names, as the gateway's error body carries it. */
export interface Limit {
  name?: string;
  setting?: string;
  max?: number | string;
  actual?: number | string;
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const kb = bytes / 1024;
  if (kb < 1024) return `${Number.isInteger(Math.round(kb * 10) / 10) ? Math.round(kb) : (Math.round(kb * 10) / 10).toFixed(1)} KB`;
  return `${(Math.round((kb / 1024) * 10) / 10).toFixed(1)} MB`;
}

/** The refusal in words, or "" when it names no limit this page knows. */
export function limitWords(l: Limit | undefined): string {
  if (!l) return "";
  const max = Number(l.max ?? 0);
  const actual = Number(l.actual ?? 0);
  switch (l.name) {
    case "prompt_bytes":
      return `The prompt is ${size(actual)}; the limit is ${size(max)}. Shorten it and run again.`;
    case "body_bytes":
      return `The request is ${size(actual)}; the limit is ${size(max)}.`;
    case "open_streams":
      return `You follow ${max === 1 ? "a run" : `${max} runs`} already, the most you may at once; close another tab's run first, then run again.`;
    case "requests_per_second":
      return `Too many requests at once: the limit is ${max} in a burst. Wait a moment and run again.`;
    case "json_depth":
      return `The request nests ${actual} levels deep; the limit is ${max}.`;
    case "message_bytes":
      return `The request is ${size(actual)}; the limit is ${size(max)}.`;
    case "body_seconds":
      return `The request took ${actual} s to arrive; the limit is ${max} s. Check the connection and run again.`;
  }
  return "";
}

/** Whether the refusal says the caller must sign in (again). */
export function needsSignIn(reason: RefusalReason | undefined): boolean {
  return reason === "REFUSAL_REASON_UNAUTHENTICATED";
}

/** Whether a decision was refused because the call was decided already (or is no longer waiting). */
export function decidedAlready(reason: RefusalReason | undefined): boolean {
  return reason === "REFUSAL_REASON_ALREADY_DECIDED" || reason === "REFUSAL_REASON_NOT_AWAITING_REVIEW" || reason === "REFUSAL_REASON_NO_PENDING_CALL";
}
