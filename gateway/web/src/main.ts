import "./style.css";
import { api, carryToHost, hostInfo, settings } from "./api";
import { readSSE } from "./sse";
import type { HostResult, StreamChunk, ToolCall } from "./types";
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

let sessionId = settings.get("session");
let active: RunView | null = null;
const carried = new Set<string>();

function setRunning(on: boolean): void {
  sendButton.disabled = on;
  cancelButton.disabled = !on;
  document.body.classList.toggle("running", on);
}

function showSession(): void {
  sessionLabel.textContent = sessionId ? `session ${sessionId}` : "new session";
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
  settings.set("session", sessionId);
  showSession();
  return sessionId;
}

/** Carries a tool call to the host (after review, when on) and posts the result. */
async function relay(view: RunView, tc: ToolCall): Promise<void> {
  if (carried.has(tc.toolCallId)) return;
  carried.add(tc.toolCallId);
  let result: HostResult;
  if (reviewToggle.checked && !(await view.review(tc.toolCallId))) {
    result = { error: { type: "Declined", message: "the person reviewing declined to run this script" } };
  } else {
    view.setStatus(tc.toolCallId, "running");
    result = await carryToHost(hostUrlInput.value, hostTokenInput.value, tc);
  }
  try {
    await api.submit(sessionId, tc, result);
  } catch (e) {
    view.errorNote(`could not post the result of ${tc.toolCallId}: ${String(e)}`);
  }
}

function handle(view: RunView, chunk: StreamChunk, replayed: boolean): void {
  if (!view.apply(chunk)) return;
  if (chunk.toolCall) {
    const tc = chunk.toolCall;
    if (!replayed) {
      void relay(view, tc);
      return;
    }
    // A replayed call may be answered already; carry it only while pending.
    void api.session(sessionId).then((s) => {
      if ((s as { pendingToolCall?: { toolCallId?: string } }).pendingToolCall?.toolCallId === tc.toolCallId) {
        void relay(view, tc);
      }
    });
  }
}

/** Follows a run with EventSource from after; resolves when it ends. */
function rejoin(view: RunView, runId: string, after: number): Promise<void> {
  return new Promise((resolve) => {
    const es = new EventSource(api.eventsURL(runId, after));
    const types = ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"];
    for (const t of types) {
      es.addEventListener(t, (ev) => {
        if (!(ev instanceof MessageEvent)) return;
        handle(view, JSON.parse(ev.data) as StreamChunk, true);
        if (t === "usage" && view.ended) {
          es.close();
          resolve();
        }
      });
    }
    es.onerror = () => {
      // The server closes a finished run's stream; anything else reconnects
      // by itself with Last-Event-ID.
      if (view.ended) {
        es.close();
        resolve();
      }
    };
  });
}

async function startRun(prompt: string): Promise<void> {
  setRunning(true);
  const view = new RunView(transcript, prompt);
  active = view;
  try {
    const id = await ensureSession();
    const resp = await api.run(id, prompt, modelSelect.value);
    try {
      for await (const ev of readSSE(resp.body!)) handle(view, JSON.parse(ev.data) as StreamChunk, false);
    } catch {
      // The connection broke; the run goes on server-side, so rejoin it.
    }
    if (!view.ended && view.runId) await rejoin(view, view.runId, view.lastSeq);
  } catch (e) {
    view.errorNote(String(e instanceof Error ? e.message : e));
  } finally {
    setRunning(false);
    active = null;
    view.root.scrollIntoView({ block: "end" });
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

async function resume(): Promise<void> {
  if (!sessionId) return;
  try {
    const s = await api.session(sessionId);
    const runId = s.activeRunId || s.lastRunId;
    if (!runId) return;
    const view = new RunView(transcript, "");
    if (s.activeRunId) setRunning(true);
    await rejoin(view, runId, 0);
    setRunning(false);
  } catch {
    sessionId = "";
    settings.set("session", "");
    showSession();
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
  sessionId = "";
  settings.set("session", "");
  transcript.replaceChildren();
  showSession();
});

showSession();
setRunning(false);
void loadModels();
void loadHost();
void resume();
