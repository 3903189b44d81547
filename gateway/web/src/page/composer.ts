import { api, APIError, settings } from "../api";
import { limitWords, needsSignIn } from "../refusal";
import type { RefusalReason } from "../types";
import type { RunView } from "../run/render";
import type { StreamChunk } from "../types";
import { readSSE } from "../sse";
import { blockedReason, drawStatus, refreshControls, setRunning, showPageError } from "./controls";
import { handle, follow, newView } from "./follow";
import { checkHostNow } from "./host";
import { showAuth } from "./models";
import type { Page } from "./page";
import { chosenPolicy, showReviewNotice } from "./policy";
import { toEnd } from "./scroll";
import { askHost } from "./choice";
import { dropNewSession, ensureSession, loadSessions, showSession } from "./sessions";

// The composer: the prompt, the model and the policy it runs with, Run and
// Cancel, and the run it starts followed to its end.

/** Says why the last prompt was refused, under the input, with the refusal's reason as data-reason; "" clears it. */
export function showRefusal(p: Page, text: string, reason?: RefusalReason): void {
  const box = p.el.refusal;
  box.textContent = text;
  box.dataset.reason = (text && reason) || "";
  box.hidden = !text;
  if (text) box.scrollIntoView({ block: "nearest" });
}

async function startRun(p: Page, prompt: string): Promise<void> {
  setRunning(p, true);
  const gen = p.generation;
  let view: RunView | null = null;
  let made = "";
  try {
    const { id, created } = await ensureSession(p);
    if (created) made = id;
    if (gen !== p.generation) return;
    p.hasRuns = true;
    if (!p.sessionTitle) {
      p.sessionTitle = prompt;
      showSession(p);
    }
    view = newView(p, id, prompt);
    p.active = view;
    toEnd(p);
    p.runAbort = new AbortController();
    const resp = await api.run(id, prompt, p.el.modelSelect.value, p.runAbort.signal);
    // The run started: the prompt is in its bubble now, not in the input.
    if (p.el.promptInput.value.trim() === prompt) p.el.promptInput.value = "";
    // The list names the session by its prompt now.
    void loadSessions(p);
    try {
      for await (const ev of readSSE(resp.body!)) {
        const chunk = JSON.parse(ev.data) as StreamChunk;
        if (chunk.runId) p.calls.startedRuns.add(chunk.runId);
        handle(p, view, id, chunk, "started");
      }
    } catch {
      // The connection broke (or the page left the session); the run goes
      // on server-side, so rejoin it while this session is still shown.
    }
    if (gen === p.generation && !view.ended && view.runId) await follow(p, view, id, view.runId, "rejoined");
  } catch (e) {
    if (gen === p.generation) {
      const msg = e instanceof Error ? e.message : String(e);
      if (!view && e instanceof APIError && e.reason === "REFUSAL_REASON_HOST_AMBIGUOUS") {
        // Several linked hosts of the application: the person picks one,
        // and the prompt, still in the input, runs on it.
        showRefusal(p, "");
        askHost(p, msg);
      } else if (!view || (view.lastSeq === 0 && !view.runId)) {
        // Refused before it started: no bubble, no spinner, no session made
        // for it; the prompt stays in the input and the reason beside it,
        // where the person looks.
        view?.root.remove();
        if (view && p.lastView === view) p.lastView = null;
        p.hasRuns = p.el.transcript.querySelector(".run") !== null;
        if (made) await dropNewSession(p, made);
        showRefusal(p, (e instanceof APIError && limitWords(e.limit)) || msg, e instanceof APIError ? e.reason : undefined);
      } else if (view) view.errorNote(msg);
      if (e instanceof APIError && needsSignIn(e.reason)) showAuth(p, "The gateway refused the request: sign in again.");
    }
  } finally {
    if (gen === p.generation) {
      p.active = null;
      p.runAbort = null;
      setRunning(p, false);
      drawStatus(p);
      void loadSessions(p);
      void checkHostNow(p);
    }
  }
}

/** Wires the composer's controls. */
export function wireComposer(p: Page): void {
  const { form, promptInput, cancelButton, modelSelect, policySelect } = p.el;
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const prompt = promptInput.value.trim();
    if (!prompt || p.running || blockedReason(p)) return;
    showRefusal(p, "");
    p.el.hostChoice.hidden = true;
    void startRun(p, prompt);
  });
  promptInput.addEventListener("keydown", (ev) => {
    // Enter runs; Shift+Enter starts a new line; an IME composition is left alone.
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  // Cancelling is always the person's explicit choice: leaving or reloading
  // the page only stops following, and the run goes on server-side.
  cancelButton.addEventListener("click", () => {
    if (p.sessionId) void api.cancel(p.sessionId).catch((e) => p.active?.errorNote(String(e)));
  });
  modelSelect.addEventListener("change", () => {
    settings.set("model", modelSelect.value);
    refreshControls(p);
  });
  policySelect.addEventListener("change", () => {
    showReviewNotice(p, chosenPolicy(p));
    if (!p.sessionId) return;
    const id = p.sessionId;
    void api.updateSession(id, chosenPolicy(p)).catch((e) => showPageError(p, `could not change the review policy: ${String(e)}`));
  });
}
