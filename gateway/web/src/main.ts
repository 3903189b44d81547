import "./style.css";
import { api, APIError, carryToHost, checkHost, settings, type HostState } from "./api";
import { readSSE } from "./sse";
import type { ModelInfo, ReviewPolicy, ReviewVerdict, Session, StreamChunk, ToolCall } from "./types";
import { limitWords } from "./refusal";
import { RunView } from "./run/render";

// The page is the courier: it starts runs, draws their streams, carries tool
// calls to the host runtime on this machine, and posts the results back. It
// never decides a review itself: a call awaiting review is approved or
// declined on the server (from this page or any other client), and the page
// carries a call only once it has a result token.

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const transcript = $<HTMLElement>("transcript");
const form = $<HTMLFormElement>("composer");
const promptInput = $<HTMLTextAreaElement>("prompt");
const sendButton = $<HTMLButtonElement>("send");
const cancelButton = $<HTMLButtonElement>("cancel");
const modelSelect = $<HTMLSelectElement>("model");
const policySelect = $<HTMLSelectElement>("policy");
const hostUrlInput = $<HTMLInputElement>("host-url");
const hostTokenInput = $<HTMLInputElement>("host-token");
const hostStatus = $<HTMLElement>("host-status");
const apiKeyInput = $<HTMLInputElement>("api-key");
const newSessionButton = $<HTMLButtonElement>("new-session");
const sessionLabel = $<HTMLElement>("session");
const sessionsList = $<HTMLUListElement>("sessions");
const statusLine = $<HTMLElement>("status");
const runReason = $<HTMLElement>("run-reason");
const jumpButton = $<HTMLButtonElement>("jump");
const authForm = $<HTMLFormElement>("auth");
const authKey = $<HTMLInputElement>("auth-key");
const authStatus = $<HTMLElement>("auth-status");
const menuButton = $<HTMLButtonElement>("menu");

// The session shown comes from the page's URL (?session=ID), so a reload or a
// shared link reopens it.
let sessionId = "";
let sessionHostApp = "";
// The run this page is starting or following live, if any, and the last run
// shown (for the status line once it ended).
let active: RunView | null = null;
let lastView: RunView | null = null;
let running = false;
// Bumped whenever another session is opened: work for the old one stops.
let generation = 0;
// Ends the event streams of the session on show (without ending their runs).
const followers = new Set<() => void>();
let runAbort: AbortController | null = null;
// The host runtime the page carries calls to, as last saved, and what its
// /v1/info last said.
const host = { url: "", token: "" };
let hostState: HostState | null = null;
let models: ModelInfo[] = [];
let needsKey = false;

// Calls carried by this page, by (session, call id, result token): a call id
// may come again with a new token (approved after review, or after a
// preview), and models reuse call ids across sessions (the demo model does),
// so neither the id alone nor one set across sessions will do.
const carried = new Set<string>();
// The latest token seen per (session, call id), and the (session, id, token)
// whose result is in the run's log: those are never carried again.
const latestToken = new Map<string, string>();
const answered = new Set<string>();

function callKey(session: string, tc: ToolCall): string {
  return `${session}|${tc.toolCallId}|${tc.resultToken ?? ""}`;
}

// A set of strings this tab keeps in sessionStorage, so it outlives a
// reload; only the newest `keep` are kept. Without storage it is empty.
function storedSet(name: string, keep: number) {
  const read = (): string[] => {
    try {
      return JSON.parse(sessionStorage.getItem(name) ?? "[]") as string[];
    } catch {
      return [];
    }
  };
  return {
    has: (v: string): boolean => read().includes(v),
    add(v: string): void {
      const list = read();
      if (list.includes(v)) return;
      list.push(v);
      try {
        sessionStorage.setItem(name, JSON.stringify(list.slice(-keep)));
      } catch {
        // Without storage a reload forgets it, as before.
      }
    },
  };
}

// Calls this tab sent to the host, kept across reloads: a page reloaded while
// the host ran a script lost that script's result, and sending it again
// could run it twice. Without storage a reload may offer the call again.
const sentToHost = storedSet("nexus.sentToHost", 200);

// Runs this tab started, kept across reloads: only the tab that started a run
// carries its calls. Another tab or browser following the run (a reviewer)
// is a viewer, so a script never runs twice and a viewer without a host
// never fails the run. Without storage a reloaded tab follows its run as a
// viewer.
const startedRuns = storedSet("nexus.startedRuns", 100);

const chunkTypes = ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"];

/** Why Run is off now, or "" when a run may start. */
function blockedReason(): string {
  if (needsKey) return "Sign in first: this gateway needs an API key or token.";
  const m = models.find((x) => x.id === modelSelect.value);
  if (!modelSelect.value) return "No model to run: the gateway lists none.";
  if (m && m.available === false) return `${m.displayName || m.id} is unavailable${m.note ? ": " + m.note : ""}. Pick another model.`;
  if (!hostState) return "Checking the host runtime…";
  if (!hostState.ok) return hostReason(hostState.failure.code, hostState.failure.message);
  return "";
}

function hostReason(code: string, message: string): string {
  switch (code) {
    case "ERROR_CODE_HOST_NOT_PAIRED":
      return "No host runtime is paired: enter its URL and pairing token under Sessions and host (or open the URL nexus dev printed).";
    case "ERROR_CODE_HOST_UNAUTHORIZED":
      return `The host runtime refuses this page's pairing token: enter the token it printed under Sessions and host. (${message})`;
    default:
      return `The host runtime cannot be reached: start it, or fix its URL under Sessions and host. (${message})`;
  }
}

function refreshControls(): void {
  const reason = blockedReason();
  sendButton.disabled = running || reason !== "";
  cancelButton.disabled = !running;
  runReason.textContent = running ? "" : reason;
  sendButton.title = reason;
  document.body.classList.toggle("running", running);
}

function setRunning(on: boolean): void {
  running = on;
  refreshControls();
}

// The status line: what the run is doing and for how long.
function drawStatus(): void {
  const view = active ?? lastView;
  if (!view) {
    statusLine.textContent = "";
    return;
  }
  const a = view.activity;
  const secs = Math.max(0, Math.round((Date.now() - a.since) / 1000));
  statusLine.dataset.kind = a.kind;
  statusLine.textContent = a.kind === "ended" ? a.label : `${a.label} · ${secs} s`;
}
setInterval(drawStatus, 500);

// Following the stream: the transcript keeps to its end while the person is
// there; once they scroll up, a button brings them back.
let pinned = true;
function nearEnd(): boolean {
  return transcript.scrollTop + transcript.clientHeight >= transcript.scrollHeight - 48;
}
function toEnd(): void {
  transcript.scrollTop = transcript.scrollHeight;
  pinned = true;
  jumpButton.hidden = true;
}
transcript.addEventListener("scroll", () => {
  pinned = nearEnd();
  if (pinned) jumpButton.hidden = true;
});
const onGrow = () => {
  if (pinned) transcript.scrollTop = transcript.scrollHeight;
  else if (!nearEnd()) jumpButton.hidden = false;
};
new MutationObserver(onGrow).observe(transcript, { childList: true, subtree: true, characterData: true });
transcript.addEventListener("load", onGrow, true);
jumpButton.addEventListener("click", toEnd);

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

// A new session gets the preview unless the person picks otherwise for it.
const defaultPolicy: ReviewPolicy = "REVIEW_POLICY_PREVIEW";

function chosenPolicy(): ReviewPolicy {
  return (policySelect.value || defaultPolicy) as ReviewPolicy;
}

/** What will wait for the person under a policy, said plainly. */
function reviewNoticeText(policy: ReviewPolicy): string {
  switch (policy) {
    case "REVIEW_POLICY_NONE":
      return "Nothing waits for you in this session: every script runs unattended and what it changes is kept.";
    case "REVIEW_POLICY_EVERY_SCRIPT":
      return "Every script in this session, inspections included, waits for your decision before it runs.";
    case "REVIEW_POLICY_AUTOMATIONS":
      return "Every script that would change the document waits for your decision before it runs, each fix after a failure too; inspections run without asking.";
    default:
      return (
        "A script that would change the document first runs as a preview (rolled back, nothing kept) and waits for your decision on its change report and view; " +
        "a script that fails goes back to the model without asking; inspections run without asking."
      );
  }
}

/** Says once, at the top of the session, what will wait for the person. */
function showReviewNotice(policy: ReviewPolicy): void {
  let note = transcript.querySelector<HTMLElement>(".review-notice");
  if (!note) {
    note = document.createElement("div");
    note.className = "review-notice";
    transcript.prepend(note);
  }
  note.dataset.policy = policy;
  note.textContent = reviewNoticeText(policy);
}

async function ensureSession(): Promise<string> {
  if (sessionId) return sessionId;
  const hostApp = (hostState?.ok && hostState.info.hostApp) || "freecad";
  const s = await api.createSession(hostApp, modelSelect.value, chosenPolicy());
  sessionId = s.sessionId;
  sessionHostApp = s.hostApp ?? hostApp;
  pushSession(sessionId);
  showSession();
  void loadSessions();
  return sessionId;
}

/** Carries a call with a result token to the host once and posts the answer. */
async function relay(view: RunView, session: string, tc: ToolCall): Promise<void> {
  const key = callKey(session, tc);
  // A call for a linked host is carried by that host; the page only watches it.
  if (!tc.resultToken || tc.hostId || carried.has(key) || answered.has(key) || view.ended) return;
  carried.add(key);
  const preview = tc.review === "REVIEW_STATE_PREVIEW";
  view.setStatus(tc.toolCallId, preview ? "previewing" : "running");
  view.setActivity("host", preview ? "Host previewing the script" : tc.exportView ? "Host rendering a view" : "Host running the script");
  drawStatus();
  sentToHost.add(key);
  const answer = await carryToHost(host.url, host.token, tc, view.hostApp || sessionHostApp);
  if ("courierFailure" in answer) {
    view.setStatus(tc.toolCallId, "not delivered");
    hostState = { ok: false, failure: answer.courierFailure };
    drawHost();
  }
  try {
    await api.submit(session, tc, answer);
  } catch (e) {
    view.errorNote(`could not post the result of ${tc.toolCallId}: ${String(e)}`);
  }
}

/**
 * How a chunk reached the page: on the stream of a run started here, while
 * following a run rejoined from its log, or from a finished run's log.
 */
type Source = "started" | "rejoined" | "history";

function handle(view: RunView, session: string, chunk: StreamChunk, source: Source): void {
  if (!view.apply(chunk)) return;
  if (view === active) drawStatus();
  const tr = chunk.metadata?.toolResult;
  if (tr?.toolCallId) {
    const token = latestToken.get(`${session}|${tr.toolCallId}`) ?? "";
    answered.add(`${session}|${tr.toolCallId}|${token}`);
  }
  const tc = chunk.toolCall;
  if (!tc?.resultToken) return;
  latestToken.set(`${session}|${tc.toolCallId}`, tc.resultToken);
  if (source === "history") return;
  if (source === "started") {
    if (view.runId) startedRuns.add(view.runId);
    void relay(view, session, tc);
    return;
  }
  if (!startedRuns.has(view.runId)) {
    view.viewerNote(tc.toolCallId);
    return;
  }
  // A rejoined call may be answered already: carry it only while the log has
  // no result for it and the session still waits on it.
  const gen = generation;
  void api
    .session(session)
    .then((s) => {
      const key = callKey(session, tc);
      if (gen !== generation || answered.has(key) || carried.has(key)) return;
      const p = s.pendingToolCall;
      if (p?.toolCallId !== tc.toolCallId && p?.toolCall?.toolCallId !== tc.toolCallId) return;
      if (sentToHost.has(key)) {
        view.errorNote(
          `${tc.toolCallId} was sent to the host before this page reloaded, and its result was lost with the page. ` +
            "It is not sent again, so it cannot run twice: cancel the run, or wait for the tool-result timeout.",
        );
        return;
      }
      void relay(view, session, tc);
    })
    .catch((e) => view.errorNote(`could not read session ${session}: ${String(e)}`));
}

function newView(session: string, prompt: string): RunView {
  const view = new RunView(transcript, prompt, {
    review: async (toolCallId: string, verdict: ReviewVerdict, code?: string) => {
      await api.review(session, toolCallId, verdict, code);
    },
  });
  lastView = view;
  return view;
}

/**
 * Reads a run's event log from after view.lastSeq with an EventSource. A live
 * run is followed until it ends (the EventSource reconnects by itself with
 * Last-Event-ID); a finished run's log is read until the server closes it.
 */
function follow(view: RunView, session: string, runId: string, source: "rejoined" | "history"): Promise<void> {
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
        handle(view, session, JSON.parse(ev.data) as StreamChunk, source);
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
  lastView = null;
  setRunning(false);
}

/**
 * Shows a session: each of its runs, oldest first, replayed from its event
 * log (the prompt, what it streamed, its tool results and reviews), then
 * rejoins the run still active, including a tool call that awaits review.
 */
async function openSession(id: string): Promise<void> {
  leaveSession();
  const gen = generation;
  transcript.replaceChildren();
  pinned = true;
  sessionId = id;
  sessionHostApp = "";
  showSession();
  drawStatus();
  // A new session reviews the scripts that change the document unless the
  // person picks otherwise for it; a choice never carries over silently.
  if (!id) {
    policySelect.value = defaultPolicy;
    showReviewNotice(defaultPolicy);
    return;
  }
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
  sessionHostApp = s.hostApp ?? "";
  if (s.reviewPolicy && s.reviewPolicy !== "REVIEW_POLICY_UNSPECIFIED") policySelect.value = s.reviewPolicy;
  showReviewNotice(chosenPolicy());
  const runs = s.runIds?.length ? [...s.runIds] : s.lastRunId ? [s.lastRunId] : [];
  if (s.activeRunId && !runs.includes(s.activeRunId)) runs.push(s.activeRunId);
  if (s.activeRunId) setRunning(true);
  for (const runId of runs) {
    if (gen !== generation) return;
    const live = runId === s.activeRunId;
    const view = newView(id, "");
    if (live) active = view;
    await follow(view, id, runId, live ? "rejoined" : "history");
  }
  if (gen !== generation) return;
  active = null;
  setRunning(false);
  void checkHostNow();
}

async function startRun(prompt: string): Promise<void> {
  setRunning(true);
  const gen = generation;
  let view: RunView | null = null;
  try {
    const id = await ensureSession();
    if (gen !== generation) return;
    view = newView(id, prompt);
    active = view;
    toEnd();
    runAbort = new AbortController();
    const resp = await api.run(id, prompt, modelSelect.value, runAbort.signal);
    // The run started: the prompt is in its bubble now, not in the input.
    if (promptInput.value.trim() === prompt) promptInput.value = "";
    try {
      for await (const ev of readSSE(resp.body!)) {
        const chunk = JSON.parse(ev.data) as StreamChunk;
        if (chunk.runId) startedRuns.add(chunk.runId);
        handle(view, id, chunk, "started");
      }
    } catch {
      // The connection broke (or the page left the session); the run goes
      // on server-side, so rejoin it while this session is still shown.
    }
    if (gen === generation && !view.ended && view.runId) await follow(view, id, view.runId, "rejoined");
  } catch (e) {
    if (gen === generation) {
      const msg = e instanceof Error ? e.message : String(e);
      if (view && view.lastSeq === 0 && !view.runId) {
        // Refused before it started: no bubble, no spinner; the prompt stays
        // in the input and the reason beside it, where the person looks.
        view.root.remove();
        if (lastView === view) lastView = null;
        showRefusal((e instanceof APIError && limitWords(e.limit)) || msg);
      } else if (view) view.errorNote(msg);
      else showPageError(msg);
      if (e instanceof APIError && e.status === 401) showAuth("The gateway refused the request: sign in again.");
    }
  } finally {
    if (gen === generation) {
      active = null;
      runAbort = null;
      setRunning(false);
      drawStatus();
      void loadSessions();
      void checkHostNow();
    }
  }
}

/** Says why the last prompt was refused, under the input; "" clears it. */
function showRefusal(text: string): void {
  const box = $<HTMLElement>("refusal");
  box.textContent = text;
  box.hidden = !text;
  if (text) box.scrollIntoView({ block: "nearest" });
}

function showPageError(text: string): void {
  const note = document.createElement("div");
  note.className = "error";
  note.textContent = text;
  transcript.append(note);
}

/** Lists the person's recent sessions as links that reopen them. */
async function loadSessions(): Promise<void> {
  try {
    const { sessions = [] } = await api.sessions();
    sessionsList.replaceChildren(
      ...sessions.slice(0, 30).map((s) => {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = sessionURL(s.sessionId);
        a.dataset.session = s.sessionId;
        const when = s.updateTime || s.createTime;
        const title = document.createElement("span");
        title.className = "title";
        title.textContent = s.lastPrompt || "(no run yet)";
        const meta = document.createElement("span");
        meta.className = "when";
        meta.textContent = `${when ? new Date(when).toLocaleString() : ""}${s.activeRunId ? " · running" : ""}`;
        a.title = s.sessionId;
        a.append(title, meta);
        a.addEventListener("click", (ev) => {
          ev.preventDefault();
          pushSession(s.sessionId);
          closeMenu();
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

function showAuth(text: string): void {
  needsKey = true;
  authForm.hidden = false;
  authStatus.textContent = text;
  refreshControls();
}

async function loadModels(): Promise<void> {
  try {
    const resp = await api.models();
    needsKey = false;
    authForm.hidden = true;
    models = resp.models ?? [];
    const usable = (m: ModelInfo) => m.available !== false;
    let chosen = settings.get("model") || resp.defaultModel || "";
    if (!models.some((m) => m.id === chosen && usable(m))) chosen = models.find(usable)?.id ?? chosen;
    modelSelect.replaceChildren(
      ...models.map((m) => {
        const o = document.createElement("option");
        o.value = m.id;
        const name = m.displayName ? `${m.displayName} (${m.id})` : m.id;
        // Unavailable models are shown, greyed, with the reason.
        o.textContent = usable(m) ? name : `${name} — unavailable${m.note ? ": " + m.note : ""}`;
        o.disabled = !usable(m);
        o.title = m.note ?? "";
        o.selected = m.id === chosen;
        return o;
      }),
    );
  } catch (e) {
    models = [];
    modelSelect.replaceChildren();
    if (e instanceof APIError && e.status === 401) showAuth("");
    else showPageError(`cannot list models: ${e instanceof Error ? e.message : String(e)}`);
  }
  refreshControls();
}

function drawHost(): void {
  if (!hostState) {
    hostStatus.textContent = "checking…";
    delete hostStatus.dataset.ok;
  } else if (hostState.ok) {
    const i = hostState.info;
    hostStatus.textContent = `${i.hostApp ?? "host"} ${i.hostVersion ?? ""} · ${i.document || "no document"}`;
    hostStatus.dataset.ok = "true";
  } else {
    hostStatus.textContent = hostReason(hostState.failure.code, hostState.failure.message);
    hostStatus.dataset.ok = "false";
  }
  document.body.dataset.host = hostState ? (hostState.ok ? "ok" : hostState.failure.code) : "checking";
  refreshControls();
}

async function loadHost(): Promise<void> {
  host.url = settings.get("hostUrl");
  host.token = settings.get("hostToken");
  if (!host.url) {
    const p = await api.hostPairing();
    if (p?.hostUrl) {
      host.url = p.hostUrl;
      host.token = p.hostToken ?? "";
    }
  }
  hostUrlInput.value = host.url;
  hostTokenInput.value = host.token;
  await checkHostNow();
}

let checking: Promise<void> | null = null;
function checkHostNow(): Promise<void> {
  checking ??= checkHost(host.url, host.token)
    .then((s) => {
      hostState = s;
      drawHost();
    })
    .finally(() => (checking = null));
  return checking;
}

function closeMenu(): void {
  document.body.classList.remove("menu-open");
  menuButton.setAttribute("aria-expanded", "false");
}

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const prompt = promptInput.value.trim();
  if (!prompt || running || blockedReason()) return;
  showRefusal("");
  void startRun(prompt);
});
promptInput.addEventListener("keydown", (ev) => {
  // Enter runs; Shift+Enter starts a new line; an IME composition is left alone.
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    form.requestSubmit();
  }
});
// Cancelling is always the person's explicit choice: leaving or reloading the
// page only stops following, and the run goes on server-side.
cancelButton.addEventListener("click", () => {
  if (sessionId) void api.cancel(sessionId).catch((e) => active?.errorNote(String(e)));
});
modelSelect.addEventListener("change", () => {
  settings.set("model", modelSelect.value);
  refreshControls();
});
policySelect.addEventListener("change", () => {
  showReviewNotice(chosenPolicy());
  if (!sessionId) return;
  const id = sessionId;
  void api.updateSession(id, chosenPolicy()).catch((e) => showPageError(`could not change the review policy: ${String(e)}`));
});
apiKeyInput.value = settings.get("apiKey");
const useKey = (key: string) => {
  settings.set("apiKey", key.trim());
  apiKeyInput.value = key.trim();
  void loadModels();
  void loadSessions();
};
// A host runtime prints a link ending in #approve=CODE: the person opens
// it signed in, and the runtime that printed the code is linked to them.
const approveCode = /[#&]approve=([A-Za-z-]+)/.exec(location.hash)?.[1];
if (approveCode) {
  history.replaceState(null, "", location.pathname + location.search);
  api
    .approvePairing(approveCode)
    .then((h) => alert(`Linked ${h.hostApp ?? "host"} ${h.hostId ?? ""} (${h.document ?? ""}): it carries your sessions' calls now.`))
    .catch((e) => alert(`Could not approve pairing code ${approveCode}: ${e instanceof Error ? e.message : String(e)}`));
}
apiKeyInput.addEventListener("change", () => useKey(apiKeyInput.value));
authForm.addEventListener("submit", (ev) => {
  ev.preventDefault();
  authStatus.textContent = "checking…";
  useKey(authKey.value);
});
$<HTMLFormElement>("host-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  host.url = hostUrlInput.value.trim();
  host.token = hostTokenInput.value.trim();
  settings.set("hostUrl", host.url);
  settings.set("hostToken", host.token);
  hostState = null;
  drawHost();
  void checkHostNow();
});
newSessionButton.addEventListener("click", () => {
  pushSession("");
  void openSession("");
});
menuButton.addEventListener("click", () => {
  const open = document.body.classList.toggle("menu-open");
  menuButton.setAttribute("aria-expanded", String(open));
});
window.addEventListener("popstate", () => void openSession(sessionFromURL()));
// The host may start or stop while the page is open.
window.addEventListener("focus", () => void checkHostNow());
setInterval(() => {
  if (!running && document.visibilityState === "visible") void checkHostNow();
}, 10_000);

policySelect.value = defaultPolicy;
showSession();
drawHost();
void loadModels();
void loadSessions();
// The host pairing comes first: a rejoined tool call may need carrying.
void loadHost().finally(() => openSession(sessionFromURL()));
