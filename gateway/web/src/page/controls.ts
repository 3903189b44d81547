import { describeError } from "../run/labels";
import { appName, describeLinked, documentWords, shownHost } from "./linked";
import type { Page } from "./page";
import { unreachableWords } from "./reach";
import { drawWelcome } from "./welcome";

// What the controls, the status line and the host line say, drawn from the
// page's state.

/** Why Run is off now, or "" when a run may start. */
export function blockedReason(p: Page): string {
  const { modelSelect } = p.el;
  if (p.needsKey) return "Sign in first: this gateway needs an API key or token.";
  const m = p.models.find((x) => x.id === modelSelect.value);
  if (!modelSelect.value) return "No model to run: the gateway lists none.";
  if (m && m.available === false) return `${m.displayName || m.id} is unavailable${m.note ? ": " + m.note : ""}. Pick another model.`;
  // A linked host carries its own calls (an offline one gets them when it
  // is back): the runtime this page would carry to does not matter.
  if (shownHost(p) || (p.sessionId && p.sessionHostId)) return "";
  if (!p.hostState) return "Checking the host runtime…";
  if (!p.hostState.ok) return hostReason(p.hostState.failure.code, p.hostState.failure.message);
  return "";
}

/** Why the page's host runtime cannot take calls now: the same words a run
 * that failed for it ends with (describeError), said once. */
export function hostReason(code: string, message: string): string {
  const d = describeError(code, message);
  return `${d.title} (${message}). ${d.hint.replace(/^Nothing ran\. /, "")}`;
}

export function refreshControls(p: Page): void {
  const { sendButton, cancelButton, runReason } = p.el;
  const reason = blockedReason(p);
  sendButton.disabled = p.running || reason !== "";
  cancelButton.disabled = !p.running;
  runReason.textContent = p.running ? "" : reason;
  sendButton.title = reason;
  document.body.classList.toggle("running", p.running);
  drawWelcome(p);
}

export function setRunning(p: Page, on: boolean): void {
  p.running = on;
  refreshControls(p);
}

// The status line: what the run is doing and for how long.
export function drawStatus(p: Page): void {
  const { statusLine } = p.el;
  if (p.unreachableSince !== null) {
    statusLine.dataset.kind = "unreachable";
    statusLine.textContent = unreachableWords(p);
    return;
  }
  const view = p.active ?? p.lastView;
  if (!view) {
    statusLine.textContent = "";
    return;
  }
  const a = view.activity;
  const secs = Math.max(0, Math.round((Date.now() - a.since) / 1000));
  statusLine.dataset.kind = a.kind;
  statusLine.textContent = a.kind === "ended" ? a.label : `${a.label} · ${secs} s`;
}

export function drawHost(p: Page): void {
  const { hostStatus, boundHost, pairDetails } = p.el;
  const hostState = p.hostState;
  // The session's linked host, in place of the pairing form: the form is
  // for a runtime that is not linked, folded away while one is.
  const linked = shownHost(p);
  boundHost.hidden = !linked && !(p.sessionId && p.sessionHostId);
  boundHost.textContent = linked ? describeLinked(linked) : p.sessionHostId ? `This session's host (${p.sessionHostId}) is no longer linked.` : "";
  boundHost.dataset.online = String(linked?.online ?? false);
  if (linked?.hostId) boundHost.dataset.hostId = linked.hostId;
  if (pairDetails.dataset.auto !== String(boundHost.hidden)) {
    pairDetails.open = boundHost.hidden;
    pairDetails.dataset.auto = String(boundHost.hidden);
  }
  if (!hostState) {
    hostStatus.textContent = "checking…";
    delete hostStatus.dataset.ok;
  } else if (hostState.ok) {
    const i = hostState.info;
    hostStatus.textContent = `${appName(i.hostApp)} ${i.hostVersion ?? ""} · ${documentWords(i.document)}`;
    hostStatus.dataset.ok = "true";
  } else {
    hostStatus.textContent = hostReason(hostState.failure.code, hostState.failure.message);
    hostStatus.dataset.ok = "false";
  }
  document.body.dataset.host = hostState ? (hostState.ok ? "ok" : hostState.failure.code) : "checking";
  refreshControls(p);
}

export function showPageError(p: Page, text: string): void {
  const note = document.createElement("div");
  note.className = "error";
  note.textContent = text;
  p.el.transcript.append(note);
}

export function closeMenu(p: Page): void {
  document.body.classList.remove("menu-open");
  p.el.menuButton.setAttribute("aria-expanded", "false");
}
