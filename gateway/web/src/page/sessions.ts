import { api } from "../api";
import type { Session } from "../types";
import { closeMenu, drawHost, drawStatus, setRunning } from "./controls";
import { follow, newView } from "./follow";
import { checkHostNow } from "./host";
import { loadLinkedHosts, pageHostApp } from "./linked";
import type { Page } from "./page";
import { chosenPolicy, defaultPolicy, showReviewNotice } from "./policy";

// The sessions: the one shown (named in the page's URL), the list of recent
// ones, and opening one by replaying its runs.

export function showSession(p: Page): void {
  const { sessionLabel, sessionsList } = p.el;
  // The session by its first prompt, as the list names it; its id on hover.
  sessionLabel.textContent = !p.sessionId ? "new session" : p.sessionTitle || "session without a run yet";
  sessionLabel.title = p.sessionId;
  for (const a of sessionsList.querySelectorAll<HTMLAnchorElement>("a[data-session]")) {
    if (a.dataset.session === p.sessionId) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

export function sessionFromURL(): string {
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
export function pushSession(id: string): void {
  if (sessionFromURL() !== id) history.pushState({ session: id }, "", sessionURL(id));
}

/**
 * The session shown, created first when there is none yet: created says
 * which. With several linked hosts of the application and none picked the
 * gateway refuses with a 409, and the page asks which host.
 */
export async function ensureSession(p: Page): Promise<{ id: string; created: boolean }> {
  if (p.sessionId) return { id: p.sessionId, created: false };
  const hostApp = pageHostApp(p);
  const s = await api.createSession(hostApp, p.el.modelSelect.value, chosenPolicy(p), p.chosenHostId, p.newDocument);
  p.sessionId = s.sessionId;
  p.sessionTitle = "";
  p.sessionHostApp = s.hostApp ?? hostApp;
  p.sessionHostId = s.hostId ?? "";
  p.sessionOwner = s.owner ?? "";
  p.chosenHostId = "";
  p.newDocument = false;
  pushSession(p.sessionId);
  showSession(p);
  drawHost(p);
  void loadSessions(p);
  return { id: p.sessionId, created: true };
}

/** Forgets a session the page just made for a prompt the gateway refused, so no empty session is left. */
export async function dropNewSession(p: Page, id: string): Promise<void> {
  try {
    await api.deleteSession(id);
  } catch {
    // It stays listed as a session without a run; nothing else depends on it.
  }
  if (p.sessionId !== id) return;
  p.sessionId = "";
  p.sessionHostId = "";
  p.sessionOwner = "";
  history.replaceState(null, "", sessionURL(""));
  showSession(p);
}

/** Stops following the shown session's runs; the runs go on server-side. */
function leaveSession(p: Page): void {
  p.generation++;
  for (const done of [...p.followers]) done();
  p.runAbort?.abort();
  p.runAbort = null;
  p.active = null;
  p.lastView = null;
  setRunning(p, false);
}

/**
 * Shows a session: each of its runs, oldest first, replayed from its event
 * log (the prompt, what it streamed, its tool results and reviews), then
 * rejoins the run still active, including a tool call that awaits review.
 */
export async function openSession(p: Page, id: string): Promise<void> {
  const { transcript, policySelect } = p.el;
  leaveSession(p);
  const gen = p.generation;
  transcript.replaceChildren(p.el.welcome);
  p.pinned = true;
  p.sessionId = id;
  p.sessionTitle = "";
  p.sessionHostApp = "";
  p.sessionHostId = "";
  p.sessionOwner = "";
  p.hasRuns = false;
  showSession(p);
  drawStatus(p);
  void loadLinkedHosts(p).then(() => gen === p.generation && drawHost(p));
  // A new session reviews the scripts that change the document unless the
  // person picks otherwise for it; a choice never carries over silently.
  if (!id) {
    policySelect.value = defaultPolicy;
    showReviewNotice(p, defaultPolicy);
    drawHost(p);
    return;
  }
  let s: Session;
  try {
    s = await api.session(id);
  } catch (e) {
    if (gen !== p.generation) return;
    const note = document.createElement("div");
    note.className = "error";
    note.textContent = `cannot open session ${id}: ${e instanceof Error ? e.message : String(e)}`;
    transcript.append(note);
    p.sessionId = "";
    showSession(p);
    return;
  }
  if (gen !== p.generation) return;
  p.sessionHostApp = s.hostApp ?? "";
  p.sessionHostId = s.hostId ?? "";
  p.sessionOwner = s.owner ?? "";
  p.sessionTitle = s.firstPrompt || s.lastPrompt || "";
  showSession(p);
  if (s.reviewPolicy && s.reviewPolicy !== "REVIEW_POLICY_UNSPECIFIED") policySelect.value = s.reviewPolicy;
  showReviewNotice(p, chosenPolicy(p));
  const runs = s.runIds?.length ? [...s.runIds] : s.lastRunId ? [s.lastRunId] : [];
  if (s.activeRunId && !runs.includes(s.activeRunId)) runs.push(s.activeRunId);
  p.hasRuns = runs.length > 0;
  drawHost(p);
  if (s.activeRunId) setRunning(p, true);
  for (const runId of runs) {
    if (gen !== p.generation) return;
    const live = runId === s.activeRunId;
    const view = newView(p, id, "");
    if (live) p.active = view;
    await follow(p, view, id, runId, live ? "rejoined" : "history");
  }
  if (gen !== p.generation) return;
  p.active = null;
  setRunning(p, false);
  // The status line says how the last run shown ended, as it does in the
  // tab that followed it live.
  drawStatus(p);
  void checkHostNow(p);
}

/** Lists the person's recent sessions as links that reopen them. */
export async function loadSessions(p: Page): Promise<void> {
  const { sessionsList } = p.el;
  try {
    const { sessions = [] } = await api.sessions();
    // Sorted by what each shows: its last activity, newest first.
    const last = (s: Session) => Date.parse(s.updateTime || s.createTime || "") || 0;
    sessions.sort((a, b) => last(b) - last(a));
    // Redrawn only when it changed, so a periodic read never takes a link
    // from under a click.
    const shown = sessions.slice(0, 30);
    const sig = JSON.stringify(shown.map((s) => [s.sessionId, s.updateTime, s.firstPrompt, s.activeRunId && !p.endedRuns.has(s.activeRunId)]));
    if (sessionsList.dataset.sig === sig) return;
    sessionsList.dataset.sig = sig;
    sessionsList.replaceChildren(
      ...shown.map((s) => {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = sessionURL(s.sessionId);
        a.dataset.session = s.sessionId;
        const when = s.updateTime || s.createTime;
        const title = document.createElement("span");
        title.className = "title";
        title.textContent = s.firstPrompt || s.lastPrompt || "(no run yet)";
        const meta = document.createElement("span");
        meta.className = "when";
        const running = s.activeRunId && !p.endedRuns.has(s.activeRunId);
        meta.textContent = `${when ? new Date(when).toLocaleString() : ""}${running ? " · running" : ""}`;
        if (s.sessionId === p.sessionId && !p.sessionTitle) p.sessionTitle = s.firstPrompt || s.lastPrompt || "";
        a.title = s.sessionId;
        a.append(title, meta);
        a.addEventListener("click", (ev) => {
          ev.preventDefault();
          pushSession(s.sessionId);
          closeMenu(p);
          void openSession(p, s.sessionId);
        });
        li.append(a);
        return li;
      }),
    );
    showSession(p);
  } catch {
    // The list is a convenience; the session in the URL still opens.
    sessionsList.replaceChildren();
    delete sessionsList.dataset.sig;
  }
}

/**
 * Keeps the page in step with runs started elsewhere (another tab, the
 * terminal): the list is read again every few seconds while the page is in
 * view, and a run of the shown session that this page neither started nor
 * follows is shown, and rejoined while it goes on.
 */
export function watchSessions(p: Page): void {
  setInterval(() => {
    if (document.visibilityState !== "visible" || p.needsKey) return;
    void loadSessions(p);
    const id = p.sessionId;
    const gen = p.generation;
    if (!id || p.running) return;
    void api
      .session(id)
      .then((s) => {
        if (gen !== p.generation || p.running) return;
        // A run this page does not show: one still going, or one that ended
        // between two reads.
        const live = s.activeRunId && !p.endedRuns.has(s.activeRunId);
        const unseen = (s.runIds?.length ?? 0) > p.el.transcript.querySelectorAll(".run").length;
        if (live || unseen) void openSession(p, id);
      })
      .catch(() => {
        // Nexus may be away for a moment; the next read tries again.
      });
  }, 3000);
}
