import "./style.css";
import { api, carryToHost, hostInfo, settings } from "./api";
import { readSSE } from "./sse";
import type { HostResult, Session, StreamChunk, ToolCall } from "./types";
import { RunView } from "./view";

// The page is the courier: it starts runs, draws their streams, carries tool
// calls to the host runtime on this machine, and posts the results back.

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const transcript = $<HTMLElement>("transcript");
const form = $<HTMLFormElement>("composer");
const promptInput = $<HTMLTextAreaElement>("prompt");
const sendButton = $<HTMLButtonElement>("send");
const cancelButton = $<HTMLButtonElement>("cancel");
const modelSelect = $<HTMLSelectElement>("model");
const hostUrlInput = $<HTMLInputElement>("host-url");
const hostTokenInput = $<HTMLInputElement>("host-token");
const hostStatus = $<HTMLElement>("host-status");
const apiKeyInput = $<HTMLInputElement>("api-key");
const reviewToggle = $<HTMLInputElement>("review");
const newSessionButton = $<HTMLButtonElement>("new-session");
const sessionLabel = $<HTMLElement>("session");

const sessionsList = $<HTMLUListElement>("sessions");

// The session shown comes from the page's URL (?session=ID), so a reload or a
// shared link reopens it.
let sessionId = "";
// The run this page is starting or following live, if any.
let active: RunView | null = null;
// Bumped whenever another session is opened: work for the old one stops.
let generation = 0;
// Ends the event streams of the session on show (without ending their runs).
const followers = new Set<() => void>();
let runAbort: AbortController | null = null;
// Calls carried by this page, and calls whose result is in their run's log
// (decided, never carried again), by callKey: a model may reuse a call id in
// another run (the demo model always does).
const carried = new Set<string>();
const decided = new Set<string>();

function callKey(view: RunView, toolCallId: string): string {
  return `${view.runId}/${toolCallId}`;
}

// Calls this tab sent to the host, kept across reloads: a page reloaded while
// the host ran a script lost that script's result, and sending it again
// could run it twice.
const sentStore = "nexus.sentToHost";

function sentBefore(key: string): boolean {
  try {
    return (JSON.parse(sessionStorage.getItem(sentStore) ?? "[]") as string[]).includes(key);
  } catch {
    return false;
  }
}

function markSent(key: string): void {
  try {
    const list = JSON.parse(sessionStorage.getItem(sentStore) ?? "[]") as string[];
    list.push(key);
    sessionStorage.setItem(sentStore, JSON.stringify(list.slice(-200)));
  } catch {
    // Without storage a reload may offer the call again, as before.
  }
}

const chunkTypes = ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"];

function setRunning(on: boolean): void {
  sendButton.disabled = on;
  cancelButton.disabled = !on;
  document.body.classList.toggle("running", on);
}

function showSession(): void {
  sessionLabel.textContent = sessionId ? `session ${sessionId}` : "new session";
  for (const a of sessionsList.querySelectorAll<HTMLAnchorElement>("a[data-session]")) {
    if (a.dataset.session === sessionId) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function sessionFromURL(): string {
  return new URLSearchParams(location.search).get("session") ?? "";
}

function sessionURL(id: string): string {
  const u = new URL(location.href);
  if (id) u.searchParams.set("session", id);
  else u.searchParams.delete("session");
  // Never the fragment: it may hold the host pairing secret.
  return u.pathname + u.search;
}

/** Records the session in the page's history, so Back and reload reopen it. */
function pushSession(id: string): void {
  if (sessionFromURL() !== id) history.pushState({ session: id }, "", sessionURL(id));
}

async function ensureSession(): Promise<string> {
  if (sessionId) return sessionId;
  let hostApp = "freecad";
  if (hostUrlInput.value) {
    try {
      hostApp = (await hostInfo(hostUrlInput.value, hostTokenInput.value)).hostApp || hostApp;
    } catch {
      // The host may be started later; the session still needs an application.
    }
  }
  const s = await api.createSession(hostApp, modelSelect.value);
  sessionId = s.sessionId;
  pushSession(sessionId);
  showSession();
  void loadSessions();
  return sessionId;
}

/** Carries a tool call to the host (after review, when on) and posts the result. */
async function relay(view: RunView, tc: ToolCall): Promise<void> {
  const key = callKey(view, tc.toolCallId);
  if (carried.has(key) || decided.has(key)) return;
  carried.add(key);
  let result: HostResult;
  if (reviewToggle.checked && !(await view.review(tc.toolCallId))) {
    result = { error: { type: "Declined", message: "the person reviewing declined to run this script" } };
  } else {
    // Decided meanwhile (another page), or the run ended: never run it.
    if (decided.has(key) || view.ended) return;
    view.setStatus(tc.toolCallId, "running");
    markSent(key);
    result = await carryToHost(hostUrlInput.value, hostTokenInput.value, tc);
  }
  try {
    await api.submit(sessionId, tc, result);
  } catch (e) {
    view.errorNote(`could not post the result of ${tc.toolCallId}: ${String(e)}`);
  }
}

/**
 * How a chunk reached the page: on the stream of a run started here, while
 * following a run rejoined from its log, or from a finished run's log.
 */
type Source = "started" | "rejoined" | "history";

function handle(view: RunView, chunk: StreamChunk, source: Source): void {
  if (!view.apply(chunk)) return;
  const m = chunk.metadata;
  if (m?.kind === "METADATA_KIND_TOOL_RESULT" && m.toolCallId) decided.add(callKey(view, m.toolCallId));
  const tc = chunk.toolCall;
  if (!tc || source === "history") return;
  if (source === "started") {
    void relay(view, tc);
    return;
  }
  // A rejoined call may be decided already: carry it only while the log has
  // no result for it and the session still waits on it.
  const gen = generation;
  const session = sessionId;
  void api
    .session(session)
    .then((s) => {
      const key = callKey(view, tc.toolCallId);
      if (gen !== generation || decided.has(key)) return;
      if (s.pendingToolCall?.toolCallId !== tc.toolCallId) return;
      if (sentBefore(key)) {
        view.errorNote(
          `${tc.toolCallId} was sent to the host before this page reloaded, and its result was lost with the page. ` +
            "It is not sent again, so it cannot run twice: cancel the run, or wait for the tool-result timeout.",
        );
        return;
      }
      void relay(view, tc);
    })
    .catch((e) => view.errorNote(`could not read session ${session}: ${String(e)}`));
}

/**
 * Reads a run's event log from after view.lastSeq with an EventSource. A live
 * run is followed until it ends (the EventSource reconnects by itself with
 * Last-Event-ID); a finished run's log is read until the server closes it.
 */
function follow(view: RunView, runId: string, source: "rejoined" | "history"): Promise<void> {
  return new Promise((resolve) => {
    const es = new EventSource(api.eventsURL(runId, view.lastSeq));
    const done = () => {
      es.close();
      followers.delete(done);
      resolve();
    };
    followers.add(done);
    for (const t of chunkTypes) {
      es.addEventListener(t, (ev) => {
        if (!(ev instanceof MessageEvent)) return;
        handle(view, JSON.parse(ev.data) as StreamChunk, source);
        if (t === "usage" && view.ended) done();
      });
    }
    es.onerror = () => {
      if (view.ended || source === "history") done();
    };
  });
}

/** Stops following the shown session's runs; the runs go on server-side. */
function leaveSession(): void {
  generation++;
  for (const done of [...followers]) done();
  runAbort?.abort();
  runAbort = null;
  active = null;
  setRunning(false);
}

/**
 * Shows a session: each of its runs, oldest first, replayed from its event
 * log (the prompt, what it streamed, its tool results), then rejoins the run
 * still active, including a tool call that awaits review.
 */
async function openSession(id: string): Promise<void> {
  leaveSession();
  const gen = generation;
  transcript.replaceChildren();
  sessionId = id;
  showSession();
  if (!id) return;
  let s: Session;
  try {
    s = await api.session(id);
  } catch (e) {
    if (gen !== generation) return;
    const note = document.createElement("div");
    note.className = "error";
    note.textContent = `cannot open session ${id}: ${e instanceof Error ? e.message : String(e)}`;
    transcript.append(note);
    sessionId = "";
    showSession();
    return;
  }
  if (gen !== generation) return;
  const runs = s.runIds?.length ? [...s.runIds] : s.lastRunId ? [s.lastRunId] : [];
  if (s.activeRunId && !runs.includes(s.activeRunId)) runs.push(s.activeRunId);
  if (s.activeRunId) setRunning(true);
  for (const runId of runs) {
    if (gen !== generation) return;
    const live = runId === s.activeRunId;
    const view = new RunView(transcript, "");
    if (live) active = view;
    await follow(view, runId, live ? "rejoined" : "history");
    transcript.scrollTop = transcript.scrollHeight;
  }
  if (gen !== generation) return;
  active = null;
  setRunning(false);
}

async function startRun(prompt: string): Promise<void> {
  setRunning(true);
  const gen = generation;
  const view = new RunView(transcript, prompt);
  active = view;
  try {
    const id = await ensureSession();
    runAbort = new AbortController();
    const resp = await api.run(id, prompt, modelSelect.value, runAbort.signal);
    try {
      for await (const ev of readSSE(resp.body!)) handle(view, JSON.parse(ev.data) as StreamChunk, "started");
    } catch {
      // The connection broke (or the page left the session); the run goes
      // on server-side, so rejoin it while this session is still shown.
    }
    if (gen === generation && !view.ended && view.runId) await follow(view, view.runId, "rejoined");
  } catch (e) {
    if (gen === generation) view.errorNote(String(e instanceof Error ? e.message : e));
  } finally {
    if (gen === generation) {
      setRunning(false);
      active = null;
      runAbort = null;
      view.root.scrollIntoView({ block: "end" });
    }
  }
}

/** Lists the person's recent sessions as links that reopen them. */
async function loadSessions(): Promise<void> {
  try {
    const { sessions = [] } = await api.sessions();
    sessionsList.replaceChildren(
      ...sessions.slice(0, 20).map((s) => {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = sessionURL(s.sessionId);
        a.dataset.session = s.sessionId;
        const when = s.createTime ? new Date(s.createTime).toLocaleString() : "";
        a.textContent = `${s.sessionId}${when ? " · " + when : ""}${s.activeRunId ? " · running" : ""}`;
        a.addEventListener("click", (ev) => {
          ev.preventDefault();
          pushSession(s.sessionId);
          void openSession(s.sessionId);
        });
        li.append(a);
        return li;
      }),
    );
    showSession();
  } catch {
    // The list is a convenience; the session in the URL still opens.
    sessionsList.replaceChildren();
  }
}

async function loadModels(): Promise<void> {
  try {
    const { models = [], defaultModel = "" } = await api.models();
    const chosen = settings.get("model") || defaultModel;
    modelSelect.replaceChildren(
      ...models.map((m) => {
        const o = document.createElement("option");
        o.value = m.id;
        o.textContent = m.displayName ? `${m.displayName} (${m.id})` : m.id;
        o.selected = m.id === chosen;
        return o;
      }),
    );
  } catch (e) {
    hostStatus.textContent = String(e);
  }
}

async function loadHost(): Promise<void> {
  hostUrlInput.value = settings.get("hostUrl");
  hostTokenInput.value = settings.get("hostToken");
  if (!hostUrlInput.value) {
    const p = await api.hostPairing();
    if (p?.hostUrl) {
      hostUrlInput.value = p.hostUrl;
      hostTokenInput.value = p.hostToken ?? "";
    }
  }
  await checkHost();
}

async function checkHost(): Promise<void> {
  if (!hostUrlInput.value) {
    hostStatus.textContent = "no host paired";
    return;
  }
  try {
    const info = await hostInfo(hostUrlInput.value, hostTokenInput.value);
    hostStatus.textContent = `${info.hostApp ?? "host"} ${info.hostVersion ?? ""} · ${info.document || "no document"}`;
    hostStatus.dataset.ok = "true";
  } catch (e) {
    hostStatus.textContent = `host unreachable: ${String(e)}`;
    hostStatus.dataset.ok = "false";
  }
}

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const prompt = promptInput.value.trim();
  if (!prompt || active) return;
  promptInput.value = "";
  void startRun(prompt);
});
promptInput.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && (ev.metaKey || ev.ctrlKey)) form.requestSubmit();
});
// Cancelling is always the person's explicit choice: leaving or reloading the
// page only stops following, and the run goes on server-side.
cancelButton.addEventListener("click", () => {
  if (sessionId) void api.cancel(sessionId).catch((e) => active?.errorNote(String(e)));
});
modelSelect.addEventListener("change", () => settings.set("model", modelSelect.value));
reviewToggle.checked = settings.get("review") === "true";
reviewToggle.addEventListener("change", () => settings.set("review", String(reviewToggle.checked)));
apiKeyInput.value = settings.get("apiKey");
apiKeyInput.addEventListener("change", () => {
  settings.set("apiKey", apiKeyInput.value.trim());
  void loadModels();
});
$<HTMLFormElement>("host-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  settings.set("hostUrl", hostUrlInput.value.trim());
  settings.set("hostToken", hostTokenInput.value.trim());
  void checkHost();
});
newSessionButton.addEventListener("click", () => {
  pushSession("");
  void openSession("");
});
window.addEventListener("popstate", () => void openSession(sessionFromURL()));

showSession();
setRunning(false);
void loadModels();
void loadSessions();
// The host pairing comes first: a rejoined tool call may need carrying.
void loadHost().finally(() => openSession(sessionFromURL()));
