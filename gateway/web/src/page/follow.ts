import { api, carryToHost } from "../api";
import { followSSE, newStreamState } from "../sse";
import { RunView } from "../run/render";
import type { ReviewVerdict, StreamChunk, ToolCall } from "../types";
import { drawHost, drawStatus } from "./controls";
import { callKey } from "./ledger";
import type { Page } from "./page";
import { awaitReachable, checkReachable, isNetworkError } from "./reach";
import { loadSessions } from "./sessions";

// A run's stream on the page: each chunk drawn, and each call with a result
// token carried to the host once, by the tab that started the run.

const chunkTypes = ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"];

/**
 * How a chunk reached the page: on the stream of a run started here, while
 * following a run rejoined from its log, or from a finished run's log.
 */
export type Source = "started" | "rejoined" | "history";

/** Carries a call with a result token to the host once and posts the answer. */
async function relay(p: Page, view: RunView, session: string, tc: ToolCall): Promise<void> {
  const { calls } = p;
  const key = callKey(session, tc);
  // A call for a linked host is carried by that host; the page only watches it.
  if (!tc.resultToken || tc.hostId || calls.carried.has(key) || calls.answered.has(key) || view.ended) return;
  calls.carried.add(key);
  const preview = tc.review === "REVIEW_STATE_PREVIEW";
  view.setStatus(tc.toolCallId, preview ? "previewing" : "running");
  view.setActivity("host", preview ? "Host previewing the script" : tc.exportView ? "Host rendering a view" : "Host running the script");
  drawStatus(p);
  calls.sentToHost.add(key);
  const answer = await carryToHost(p.host.url, p.host.token, tc, view.hostApp || p.sessionHostApp);
  if ("courierFailure" in answer) {
    view.setStatus(tc.toolCallId, "not delivered");
    p.hostState = { ok: false, failure: answer.courierFailure };
    drawHost(p);
  }
  try {
    await api.submit(session, tc, answer);
  } catch (e) {
    view.errorNote(`could not post the result of ${tc.toolCallId}: ${String(e)}`);
  }
}

/** Draws one chunk, and carries the call it brings when this tab should. */
export function handle(p: Page, view: RunView, session: string, chunk: StreamChunk, source: Source): void {
  const { calls } = p;
  const wasEnded = view.ended;
  if (!view.apply(chunk)) return;
  if (view === p.active) drawStatus(p);
  // A run seen to end no longer reads "running" in the session list.
  if (view.ended && !wasEnded && view.runId && source !== "history") {
    p.endedRuns.add(view.runId);
    void loadSessions(p);
  }
  const tr = chunk.metadata?.toolResult;
  if (tr?.toolCallId) calls.resultSeen(session, tr.toolCallId);
  const tc = chunk.toolCall;
  if (!tc?.resultToken) return;
  calls.tokenSeen(session, tc);
  if (source === "history") return;
  if (source === "started") {
    if (view.runId) calls.startedRuns.add(view.runId);
    void relay(p, view, session, tc);
    return;
  }
  if (!calls.startedRuns.has(view.runId)) {
    view.viewerNote(tc.toolCallId);
    return;
  }
  // A rejoined call may be answered already: carry it only while the log has
  // no result for it and the session still waits on it.
  const gen = p.generation;
  void api
    .session(session)
    .then((s) => {
      const key = callKey(session, tc);
      if (gen !== p.generation || calls.answered.has(key) || calls.carried.has(key)) return;
      const pending = s.pendingToolCall;
      if (pending?.toolCallId !== tc.toolCallId && pending?.toolCall?.toolCallId !== tc.toolCallId) return;
      if (calls.sentToHost.has(key)) {
        view.errorNote(
          `${tc.toolCallId} was sent to the host before this page reloaded, and its result was lost with the page. ` +
            "It is not sent again, so it cannot run twice: cancel the run, or wait for the tool-result timeout.",
        );
        return;
      }
      void relay(p, view, session, tc);
    })
    .catch((e) => view.errorNote(`could not read session ${session}: ${String(e)}`));
}

/** A new run's view at the end of the transcript, its review buttons wired to the session. */
export function newView(p: Page, session: string, prompt: string): RunView {
  const view = new RunView(p.el.transcript, prompt, {
    review: async (toolCallId: string, verdict: ReviewVerdict, code?: string) => {
      // A decision made while Nexus cannot be reached is kept and sent once
      // it answers again, rather than lost to "Failed to fetch".
      for (;;) {
        try {
          await api.review(session, toolCallId, verdict, code);
          p.decisionWaiting = "";
          return;
        } catch (e) {
          if (!isNetworkError(e)) {
            p.decisionWaiting = "";
            throw e;
          }
          p.decisionWaiting = verdict === "REVIEW_VERDICT_DECLINE" ? "decline" : "approval";
          await awaitReachable(p, () => drawStatus(p));
        }
      }
    },
    self: p.sessionOwner,
    model: (toolCallId, state) => api.model(session, toolCallId, state),
    downloadDocument: async () => {
      const { blob, fileName } = await api.document(session);
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = fileName;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
    },
  });
  p.lastView = view;
  return view;
}

/**
 * Reads a run's event log from after view.lastSeq, over fetch with the
 * credential in a header. A live run is followed until it ends: a dropped
 * stream is reopened after the stream's retry delay with Last-Event-ID. A
 * finished run's log is read until the server closes it.
 */
export async function follow(p: Page, view: RunView, session: string, runId: string, source: "rejoined" | "history"): Promise<void> {
  const stop = new AbortController();
  const done = () => stop.abort();
  p.followers.add(done);
  try {
    await followSSE(api.eventsURL(runId), {
      headers: api.authHeaders,
      state: newStreamState(view.lastSeq > 0 ? String(view.lastSeq) : ""),
      signal: stop.signal,
      onEvent: (ev) => {
        if (chunkTypes.includes(ev.event)) handle(p, view, session, JSON.parse(ev.data) as StreamChunk, source);
      },
      // The usage that follows a run's end is its last chunk; a dropped
      // stream of an ended run, or a finished run's log that brings no new
      // event, has nothing more.
      finished: (n, ev) => (ev ? ev.event === "usage" && view.ended : view.ended || (source === "history" && n === 0)),
      // Whether Nexus answers at all is asked aside while the stream
      // reconnects, so the status line can say it does not.
      onDisconnect: () => void checkReachable(p, () => drawStatus(p)),
    });
  } catch (e) {
    if (!stop.signal.aborted) view.errorNote(`could not follow run ${runId}: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    p.followers.delete(done);
  }
}
