import { partialString } from "../partial";
import type { HostResult, StreamChunk, ToolCall } from "../types";
import { cardResult, settle, withCard, type CardState } from "./cards";
import { baseCallId, describeError, phaseLabels, toolLabel, type Activity, type ToolStatus } from "./labels";

// The run as the page knows it: a pure reduction of its stream (and of what
// the page itself did: carrying a call, a note) into a value the renderer
// draws. reduce never changes the state it is given; it returns the next one,
// sharing what did not change, so the renderer redraws only what did.

export type { CardState } from "./cards";

/** One thing shown in the run, in order; key stays with it while it lives. */
export type Item =
  | { key: number; kind: "meta" | "notice" | "note-error"; text: string }
  | { key: number; kind: "thinking" | "message"; text: string }
  | { key: number; kind: "marker"; text: string; restarted: boolean }
  | { key: number; kind: "run-error"; code: string; title: string; detail: string; hint: string }
  | { key: number; kind: "card"; id: string }
  | { key: number; kind: "turn-mark" };

export interface RunState {
  prompt: string;
  /** The signed-in person's user name, so their own decisions read "by you". */
  self: string;
  model: string;
  lastSeq: number;
  runId: string;
  hostApp: string;
  ended: boolean;
  outcome: "" | "done" | "failed";
  activity: Activity;
  items: readonly Item[];
  cards: Readonly<Record<string, CardState>>;
  /** Calls whose tool_call chunk arrived: they outlive a restarted turn. */
  called: readonly string[];
  /** The last automation script that failed, to show its fix as a diff. */
  failedScript: string;
  turns: number;
  phase: string;
  /** The key of the open thinking or message item that text extends, or -1. */
  current: number;
  /** The key of the mark where the current model turn began, or -1. */
  turnMark: number;
  usage: string;
  nextKey: number;
}

export type Action =
  | { type: "chunk"; chunk: StreamChunk }
  | { type: "status"; id: string; status: ToolStatus }
  | { type: "activity"; kind: Activity["kind"]; label: string }
  | { type: "viewer"; id: string }
  | { type: "note-error"; text: string };

export function initialState(prompt: string, now: number, self = ""): RunState {
  return {
    prompt, self, model: "", lastSeq: 0, runId: "", hostApp: "", ended: false, outcome: "",
    activity: { kind: "start", label: "Starting the run", since: now },
    items: [], cards: {}, called: [], failedScript: "", turns: 0, phase: "", current: -1, turnMark: -1, usage: "", nextKey: 1,
  };
}

function num(v: string | number | undefined): number {
  return typeof v === "string" ? Number(v) : (v ?? 0);
}

/** Whether the chunk was applied already (a replay after a rejoin). */
export function isReplay(s: RunState, c: StreamChunk): boolean {
  const seq = num(c.seq);
  return seq > 0 && seq <= s.lastSeq;
}

export function reduce(s: RunState, a: Action, now: number): RunState {
  switch (a.type) {
    case "chunk":
      return isReplay(s, a.chunk) ? s : chunk(s, a.chunk, now);
    case "status":
      return withCard(s, baseCallId(a.id), (c) => ({ ...c, status: a.status }));
    case "activity":
      return activity(s, a.kind, a.label, now);
    case "viewer":
      return withCard(s, baseCallId(a.id), (c) => (c.viewer ? c : { ...c, viewer: true }));
    case "note-error":
      return push(s, { kind: "note-error", text: a.text });
  }
}

function activity(s: RunState, kind: Activity["kind"], label: string, now: number): RunState {
  const since = kind === s.activity.kind && kind !== "host" ? s.activity.since : now;
  return { ...s, activity: { kind, label, since } };
}

function modelActivity(s: RunState, doing: string, now: number): RunState {
  if (s.ended) return s;
  return activity(s, "model", `Model turn ${s.turns || 1}${s.phase ? ` (${s.phase})` : ""}: ${doing}`, now);
}

type NewItem = Item extends infer I ? (I extends Item ? Omit<I, "key"> : never) : never;

/** Appends an item and closes the open text. */
function push(s: RunState, item: NewItem): RunState {
  return { ...s, items: [...s.items, { ...item, key: s.nextKey } as Item], nextKey: s.nextKey + 1, current: -1 };
}

function chunk(s: RunState, c: StreamChunk, now: number): RunState {
  const seq = num(c.seq);
  if (seq > 0) s = { ...s, lastSeq: seq };
  if (c.runId) s = { ...s, runId: c.runId };
  if (c.metadata) return metadata(s, c.metadata, now);
  if (c.thinking) return modelActivity(text(s, "thinking", c.thinking.text ?? ""), "thinking", now);
  if (c.message) return modelActivity(text(s, "message", c.message.text ?? ""), "writing", now);
  if (c.toolInputDelta) {
    const d = c.toolInputDelta;
    s = ensureCard(s, d.toolCallId ?? "", d.toolName ?? "");
    s = withCard(s, d.toolCallId ?? "", (card) => {
      const raw = card.raw + (d.partialJson ?? "");
      return { ...card, raw, code: partialString(raw, "code")[0], typing: true };
    });
    return modelActivity(s, "typing a script", now);
  }
  if (c.toolCall) return toolCall(s, c.toolCall, now);
  if (c.complete) {
    s = end(s);
    if (!s.items.some((i) => i.kind === "message") && c.complete.text) s = text(s, "message", c.complete.text);
    return activity({ ...s, outcome: "done" }, "ended", "Run completed", now);
  }
  if (c.error) {
    s = end(s);
    const { title, hint } = describeError(c.error.code, c.error.message);
    const detail = c.error.message ?? "";
    s = push(s, { kind: "run-error", code: c.error.code ?? "", title, detail, hint: hint && hint !== detail ? hint : "" });
    return activity({ ...s, outcome: "failed" }, "ended", `Run ended: ${title}`, now);
  }
  if (c.usage) {
    const t = c.usage.total ?? {};
    const cost = t.costUsd ? ` · $${t.costUsd.toFixed(4)}` : "";
    const cached = num(t.cacheReadTokens) ? ` · ${num(t.cacheReadTokens)} cached` : "";
    return { ...s, usage: `${c.usage.model ?? ""} · ${c.usage.turns ?? 0} turns · ${num(t.inputTokens)} in / ${num(t.outputTokens)} out tokens${cached}${cost}` };
  }
  return s;
}

/** Extends the open text of kind, or opens a new one. */
function text(s: RunState, kind: "thinking" | "message", t: string): RunState {
  const i = s.items.findIndex((it) => it.key === s.current);
  const open = s.items[i];
  if (open && open.kind === kind) {
    const items = [...s.items];
    items[i] = { ...open, text: open.text + t };
    return { ...s, items };
  }
  s = push(s, { kind, text: t });
  return { ...s, current: s.nextKey - 1 };
}

function end(s: RunState): RunState {
  return settle({ ...s, ended: true, current: -1 });
}

function ensureCard(s: RunState, id: string, tool: string): RunState {
  if (s.cards[id]) return s;
  s = push(s, { kind: "card", id });
  const card: CardState = {
    id, tool, raw: "", code: "", typing: false, status: "", description: "", notes: [], fixOf: "",
    reviewOpen: false, decided: "", editedNotes: [], viewer: false,
  };
  return { ...s, cards: { ...s.cards, [id]: card } };
}

function toolCall(s: RunState, tc: ToolCall, now: number): RunState {
  const id = baseCallId(tc.toolCallId);
  if (!s.called.includes(id)) s = { ...s, called: [...s.called, id] };
  s = ensureCard(s, id, tc.toolName ?? "");
  if (tc.hostApp) s = { ...s, hostApp: tc.hostApp };
  const failed = s.failedScript;
  s = withCard(s, id, (card) => {
    const next: CardState = { ...card, tool: tc.toolName ?? card.tool, typing: false };
    if (tc.description && !next.description) next.description = tc.description;
    const code = tc.execute?.code;
    // The merged script the host will run replaces what was typed (line
    // edits are merged on the server). A fix shows what changed.
    if (code && code !== card.code) {
      next.code = code;
      if (failed && next.tool === "TOOL_NAME_EXECUTE_TASK_AUTOMATION" && !next.fixOf) next.fixOf = failed;
    }
    const notes = (tc.mergeNotes ?? []).filter((n) => !next.notes.includes(n));
    if (notes.length) next.notes = [...next.notes, ...notes];
    return next;
  });
  switch (tc.review) {
    case "REVIEW_STATE_AWAITING":
      s = withCard(s, id, (card) => ({ ...card, preview: tc.preview ?? card.preview, reviewOpen: true, status: "awaiting review" }));
      return activity(s, "review", `Awaiting your review: ${toolLabel(tc.toolName)}`, now);
    case "REVIEW_STATE_APPROVED":
      s = withCard(s, id, (card) => ({ ...card, reviewOpen: false, decided: tc.reviewer ? `Approved${byWhom(s, tc.reviewer)}` : card.decided }));
      break;
  }
  const preview = tc.review === "REVIEW_STATE_PREVIEW";
  // A call for a linked host is delivered to it by the server: the host runs
  // it now, unless a host_waiting notice says it is offline.
  if (tc.hostId) {
    s = withCard(s, id, (card) => ({ ...card, status: preview ? "previewing" : "running" }));
    return activity(s, "host", preview ? "Host previewing the script" : tc.exportView ? "Host rendering a view" : "Host running the script", now);
  }
  s = withCard(s, id, (card) => ({ ...card, status: preview ? "previewing" : "waiting for the host" }));
  return activity(s, "host", preview ? "Waiting for the host to preview the script" : "Waiting for the host", now);
}

type Metadata = NonNullable<StreamChunk["metadata"]>;

function metadata(s: RunState, m: Metadata, now: number): RunState {
  if (m.runStarted) {
    const r = m.runStarted;
    s = { ...s, model: r.model ?? "", hostApp: r.hostApp ?? s.hostApp, prompt: s.prompt || r.prompt || "" };
    return push(s, { kind: "meta", text: `${r.model ?? ""} · ${r.hostApp ?? ""}` });
  }
  if (m.turnStarted) {
    s = push({ ...s, turns: s.turns + 1, phase: phaseLabels[m.turnStarted.phase ?? ""] ?? "" }, { kind: "turn-mark" });
    // A new turn restarts the clock.
    s = { ...s, turnMark: s.nextKey - 1, activity: { ...s.activity, kind: "start" } };
    return modelActivity(s, "thinking", now);
  }
  if (m.turnRetried) return push(s, { kind: "marker", text: m.turnRetried.text || "the turn is redone with a larger budget", restarted: false });
  if (m.turnRestarted) return dropPartialTurn(s, m.turnRestarted.text || "the turn was restarted");
  if (m.contextSummarized) return push(s, { kind: "marker", text: m.contextSummarized.text || "context summarized", restarted: false });
  if (m.notice) return push(s, { kind: "notice", text: m.notice.text ?? "" });
  if (m.scriptLeft) return push(s, { kind: "notice", text: m.scriptLeft.text ?? "" });
  if (m.hostWaiting) {
    const w = m.hostWaiting;
    const since = w.offlineSince ? ` (offline since ${new Date(w.offlineSince).toLocaleTimeString()})` : "";
    // The server's words name the application as the person knows it, and
    // say when no host of it is linked yet.
    const text = w.text || `Waiting for ${w.hostApp || "the"} host ${w.hostId ?? ""}${since}: the call is delivered when it connects.`;
    s = push(s, { kind: "notice", text });
    return activity(s, "host", w.hostId ? `Waiting for the host to connect${since}` : "Waiting for a host to connect", now);
  }
  if (m.toolResult) {
    const t = m.toolResult;
    s = { ...s, current: -1 };
    s = result(s, t.toolCallId ?? "", t.result, t.noResult ?? false, t.preview ?? false);
    return s.ended ? s : activity(s, "model", "Model reading the result", now);
  }
  if (m.reviewDecided) return reviewDecided(s, m.reviewDecided, now);
  return s;
}

/**
 * Drops what the current turn streamed (thinking, prose, scripts being
 * typed) because the turn is redone; calls already sent stay.
 */
function dropPartialTurn(s: RunState, note: string): RunState {
  const at = s.items.findIndex((i) => i.key === s.turnMark);
  const marker: Item = { key: s.nextKey, kind: "marker", text: note, restarted: true };
  if (at < 0) return { ...s, items: [...s.items, marker], nextKey: s.nextKey + 1, current: -1 };
  const kept: Item[] = [];
  const cards = { ...s.cards };
  for (const item of s.items.slice(at + 1)) {
    if (item.kind === "card" && s.called.includes(item.id)) kept.push(item);
    else if (item.kind === "card") delete cards[item.id];
  }
  const items = [...s.items.slice(0, at), marker, s.items[at], ...kept];
  return { ...s, items, cards, nextKey: s.nextKey + 1, current: -1 };
}

function result(s: RunState, rawId: string, r: HostResult | undefined, noResult: boolean, preview: boolean): RunState {
  const id = baseCallId(rawId);
  s = ensureCard(s, id, "");
  const out = cardResult(s.cards[id], r, noResult, preview || rawId !== id);
  s = withCard(s, id, () => out.card);
  return out.failedScript ? { ...s, failedScript: out.failedScript } : s;
}

type Decided = NonNullable<Metadata["reviewDecided"]>;

/** Who decided, for the person: "by you" for their own decisions, never an internal user name of theirs. */
function byWhom(s: RunState, reviewer: string | undefined): string {
  if (!reviewer) return "";
  return reviewer === s.self ? " by you" : ` by ${reviewer}`;
}

function reviewDecided(s: RunState, d: Decided, now: number): RunState {
  const id = d.toolCallId ?? "";
  const card = s.cards[id];
  if (!card) return s;
  const approved = d.verdict === "REVIEW_VERDICT_APPROVE";
  const who = byWhom(s, d.reviewer);
  const awaiting = card.status === "awaiting review";
  if (approved && d.edited && card.preview) {
    // Under the preview policy an edit is not yet an approval of what
    // commits: it is previewed in turn and decided again.
    const note = `Edited${who}: the edited script is previewed before anything commits, then waits for a decision`;
    s = withCard(s, id, (c) => ({ ...c, reviewOpen: false, editedNotes: [...c.editedNotes, note], status: awaiting ? "approved" : c.status }));
    return s.ended ? s : activity(s, "host", "Edited: waiting for the host to preview the edit", now);
  }
  const decided = `${approved ? "Approved" : "Declined"}${who}${d.edited ? " (edited)" : ""}`;
  s = withCard(s, id, (c) => ({ ...c, reviewOpen: false, decided, status: awaiting ? (approved ? "approved" : "declined") : c.status }));
  return s.ended ? s : activity(s, "model", approved ? "Approved: waiting for the host" : "Declined: telling the model", now);
}
