import { rolledBackStatus } from "../rollback";
import type { HostResult } from "../types";
import type { ToolStatus } from "./labels";
import type { RunState } from "./state";

/** One tool call as the page shows it. */
export interface CardState {
  id: string;
  tool: string;
  /** The partial tool input typed so far, and the script read from it (or merged). */
  raw: string;
  code: string;
  typing: boolean;
  /** "" while the model is still writing the call. */
  status: ToolStatus | "";
  description: string;
  notes: readonly string[];
  /** The failed script this one fixes, shown as a diff against it; "" for none. */
  fixOf: string;
  /** The preview's effect, shown beside the script. */
  preview?: HostResult;
  /** The final result, shown below the script. */
  result?: HostResult;
  reviewOpen: boolean;
  decided: string;
  editedNotes: readonly string[];
  /** Another tab carries this call; this page only follows. */
  viewer: boolean;
}

/** Replaces card id with fn's answer; a missing card changes nothing. */
export function withCard(s: RunState, id: string, fn: (c: CardState) => CardState): RunState {
  const card = s.cards[id];
  if (!card) return s;
  const next = fn(card);
  return next === card ? s : { ...s, cards: { ...s.cards, [id]: next } };
}

const open = new Set<CardState["status"]>(["waiting for the host", "awaiting review", "running", "previewing", "approved", ""]);

/**
 * Once the run has ended, a call still open got no result: it is shown so,
 * and its review (if any) goes away, so nothing is carried for a run that no
 * longer waits.
 */
export function settle(s: RunState): RunState {
  for (const id of Object.keys(s.cards)) {
    if (open.has(s.cards[id].status)) s = withCard(s, id, (c) => ({ ...c, reviewOpen: false, status: "no result" }));
  }
  return s;
}

/** The card once its (preview) result came, and the script that failed if one did. */
export function cardResult(card: CardState, r: HostResult | undefined, noResult: boolean, preview: boolean): { card: CardState; failedScript: string } {
  const automation = card.tool === "TOOL_NAME_EXECUTE_TASK_AUTOMATION";
  const failed = (res: HostResult) => (res.error && automation && card.code ? card.code : "");
  if (preview) {
    // A preview's result: nothing was kept; the call comes back for review.
    if (noResult || !r) return { card: { ...card, status: "no result" }, failedScript: "" };
    return { card: { ...card, preview: r, status: r.error ? "failed in preview" : "previewed" }, failedScript: failed(r) };
  }
  const closed = { ...card, reviewOpen: false };
  // A call the page could not deliver, or one declined, keeps saying so.
  if (card.status === "not delivered") return { card: closed, failedScript: "" };
  if (noResult || !r) return { card: { ...closed, status: card.status === "declined" ? "declined" : "no result" }, failedScript: "" };
  let status: ToolStatus;
  if (r.error?.type === "Declined" || card.status === "declined") status = "declined";
  else if (r.error) status = rolledBackStatus(r);
  else status = r.committed ? "committed" : "read-only";
  return { card: { ...closed, status, result: r.error?.type === "Declined" ? undefined : r }, failedScript: failed(r) };
}
