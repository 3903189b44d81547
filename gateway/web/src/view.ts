import { diffLines, hunks } from "./diff";
import { highlightPython } from "./highlight";
import { escapeHTML, renderMarkdown } from "./markdown";
import { partialString } from "./partial";
import { type RolledBackStatus, rollbackInexact, rollbackNote, rollbackUnverified, rolledBackStatus } from "./rollback";
import type { ChangeReport, HostImage, HostResult, ReviewVerdict, StreamChunk, ToolCall, ToolName } from "./types";

// RunView draws one run's stream into a container: thinking, prose, the
// script as it is typed, tool calls with their status and review, the change
// report, the rendered view, notices, errors and usage. It also keeps what the
// run is doing now (its activity), for the page's status line.

export type ToolStatus =
  | "awaiting review"
  | "approved"
  | "waiting for the host"
  | "previewing"
  | "previewed"
  | "running"
  | "committed"
  | "read-only"
  | RolledBackStatus
  | "failed in preview"
  | "declined"
  | "not delivered"
  | "no result";

/** What a run is doing now; since resets when its kind changes. */
export interface Activity {
  kind: "start" | "model" | "host" | "review" | "ended";
  label: string;
  since: number;
}

export interface ViewHooks {
  /** The person approved or declined a call awaiting review; code is their edit of the script. */
  review(toolCallId: string, verdict: ReviewVerdict, code?: string): Promise<void>;
}

const toolLabels: Record<ToolName, string> = {
  TOOL_NAME_UNSPECIFIED: "tool",
  TOOL_NAME_EXECUTE_DATA_COLLECTION: "Inspect (read-only)",
  TOOL_NAME_EXECUTE_TASK_AUTOMATION: "Change the document",
  TOOL_NAME_CAPTURE_VIEW: "Capture a view",
};

export function toolLabel(name: ToolName | string | undefined): string {
  return toolLabels[name as ToolName] ?? (name || "tool");
}

const phaseLabels: Record<string, string> = {
  PHASE_INITIAL: "first turn",
  PHASE_POST_DATA_COLLECTION: "writing the change",
  PHASE_EDIT: "fixing the script",
  PHASE_VERIFY: "checking the result",
  PHASE_SUMMARY: "summarising",
};

/** What an error code means for the person, and what to do about it. */
export function describeError(code: string | undefined, message: string | undefined): { title: string; hint: string } {
  const m = message ?? "";
  switch (code) {
    case "ERROR_CODE_HOST_UNREACHABLE":
      return {
        title: "The host runtime could not be reached",
        hint: "Nothing ran. On this page: start the runtime, or fix its URL under Sessions and host (Save and check), then run the prompt again.",
      };
    case "ERROR_CODE_HOST_UNAUTHORIZED":
      return {
        title: "The host runtime refused this page's pairing token",
        hint: "Nothing ran. On this page: enter the token the runtime printed under Sessions and host (or open the URL nexus dev printed), then run the prompt again.",
      };
    case "ERROR_CODE_HOST_NOT_PAIRED":
      return {
        title: "No host runtime is paired with this page",
        hint: "Nothing ran. On this page: enter the runtime's URL and token under Sessions and host (or open the URL nexus dev printed), then run the prompt again.",
      };
    case "ERROR_CODE_HOST_MISMATCH":
      return {
        title: "The paired runtime is for another application",
        hint: "Nothing ran. Pair the runtime of this session's application, or start a new session for the paired one.",
      };
    case "ERROR_CODE_CANCELLED":
      return { title: "Cancelled", hint: m || "You cancelled the run." };
    case "ERROR_CODE_REVIEW_TIMEOUT":
      return { title: "Nobody reviewed the script in time", hint: "It did not run. Run the prompt again to review it." };
    case "ERROR_CODE_MAX_TOKENS":
      return { title: "The model ran out of output budget", hint: "Try a smaller request or a model with a larger output budget." };
    case "ERROR_CODE_TURN_LIMIT":
      return { title: "The run reached its turn limit", hint: "Check the document, then ask for what is left." };
    case "ERROR_CODE_MODEL_ERROR":
      return { title: "The model failed", hint: "Try again, or pick another model." };
    default:
      return { title: (code ?? "error").replace(/^ERROR_CODE_/, "").toLowerCase().replace(/_/g, " "), hint: "" };
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function num(v: string | number | undefined): number {
  return typeof v === "string" ? Number(v) : (v ?? 0);
}

/** Takes away a decided call's review bar and any open editor. */
function closeReview(card: { el: HTMLElement }): void {
  card.el.querySelector(".review")?.remove();
  card.el.querySelector(".editor")?.remove();
}

/** The call a preview call stands for: previews have ids "<id>.preview<N>". */
export function baseCallId(id: string): string {
  return id.replace(/\.preview\d+$/, "");
}

const changeWords: Record<string, string> = {
  CHANGE_KIND_ADDED: "added",
  CHANGE_KIND_MODIFIED: "modified",
  CHANGE_KIND_DELETED: "deleted",
};

/** The change report as a table; null when the host sent no report data. */
export function reportTable(report: ChangeReport | undefined): HTMLElement | null {
  const elements = report?.elements ?? [];
  const helpers = report?.helpers ?? [];
  if (!elements.length && !helpers.length) return null;
  const box = el("div", "report-data");
  if (elements.length) {
    const table = el("table", "report");
    const head = el("tr");
    for (const h of ["Change", "Category", "Name", "Label", "Properties"]) head.append(el("th", "", h));
    table.append(el("thead"), el("tbody"));
    table.tHead!.append(head);
    for (const e of elements) {
      const tr = el("tr");
      const change = changeWords[e.change ?? ""] ?? "";
      tr.dataset.change = change;
      tr.append(
        el("td", "change", change),
        el("td", "", e.category ?? ""),
        el("td", "", e.name ?? ""),
        el("td", "", e.label ?? ""),
        el("td", "props", (e.properties ?? []).join(", ")),
      );
      table.tBodies[0].append(tr);
    }
    box.append(table);
  }
  if (helpers.length) {
    box.append(
      el(
        "div",
        "helpers",
        "Helper objects: " + helpers.map((h) => `${changeWords[h.change ?? ""] ?? ""} ${h.count ?? 0} × ${h.kind ?? ""}`).join(", "),
      ),
    );
  }
  return box;
}

function imageURL(img: HostImage): string {
  return `data:${img.mimeType || "image/png"};base64,${img.data}`;
}

/** A rendered view: large, opens full size on click, and can be downloaded. */
function viewFigure(img: HostImage, name: string): HTMLElement {
  const fig = el("figure", "view");
  const url = imageURL(img);
  const image = el("img");
  image.src = url;
  image.alt = `${img.view ?? "view"} of the document`;
  image.title = "Open full size";
  image.addEventListener("click", () => openLightbox(url, image.alt));
  const caption = el("figcaption");
  const ext = (img.mimeType ?? "image/png").split("/")[1] ?? "png";
  const dl = el("a", "download", "Download");
  dl.href = url;
  dl.download = `${name}-${img.view ?? "view"}.${ext}`;
  const open = el("button", "open-large", "Full size");
  open.type = "button";
  open.addEventListener("click", () => openLightbox(url, image.alt));
  caption.append(`${img.view ?? "view"} ${img.width ?? ""}×${img.height ?? ""} `, open, " ", dl);
  fig.append(image, caption);
  return fig;
}

function openLightbox(url: string, alt: string): void {
  let dialog = document.querySelector<HTMLDialogElement>("dialog.lightbox");
  if (!dialog) {
    dialog = el("dialog", "lightbox");
    dialog.addEventListener("click", () => dialog!.close());
    document.body.append(dialog);
  }
  const img = el("img");
  img.src = url;
  img.alt = alt;
  dialog.replaceChildren(img, el("div", "hint", "Click to close"));
  dialog.showModal();
}

interface Card {
  el: HTMLElement;
  body: HTMLElement;
  /** The typed or merged script. */
  code: string;
  raw: string;
  codeEl: HTMLElement | null;
  tool: ToolName | string;
}

export class RunView {
  readonly root: HTMLElement;
  lastSeq = 0;
  runId = "";
  hostApp = "";
  ended = false;
  activity: Activity = { kind: "start", label: "Starting the run", since: Date.now() };
  private turns = 0;
  private current: { kind: string; el: HTMLElement; text: string } | null = null;
  private cards = new Map<string, Card>();
  // Calls whose tool_call chunk arrived: they outlive a restarted turn.
  private called = new Set<string>();
  // The last automation script that failed, to show its fix as a diff.
  private failedScript = "";
  // Marks where the current model turn began, so a restarted turn's partial
  // output can be dropped.
  private turnMark: HTMLElement | null = null;
  private usageEl: HTMLElement;

  constructor(
    parent: HTMLElement,
    prompt: string,
    private hooks: ViewHooks,
  ) {
    this.root = el("section", "run");
    if (prompt) this.root.append(el("div", "prompt", prompt));
    this.usageEl = el("div", "usage");
    this.root.append(this.usageEl);
    parent.append(this.root);
  }

  setActivity(kind: Activity["kind"], label: string): void {
    const since = kind === this.activity.kind && kind !== "host" ? this.activity.since : Date.now();
    this.activity = { kind, label, since };
  }

  /** Applies one chunk; returns false for a chunk already shown (a replay). */
  apply(c: StreamChunk): boolean {
    const seq = num(c.seq);
    if (seq > 0 && seq <= this.lastSeq) return false;
    if (seq > 0) this.lastSeq = seq;
    if (c.runId) this.runId = c.runId;
    if (c.metadata) this.metadata(c);
    else if (c.thinking) {
      this.append("thinking", c.thinking.text ?? "");
      this.modelActivity("thinking");
    } else if (c.message) {
      this.append("message", c.message.text ?? "");
      this.modelActivity("writing");
    } else if (c.toolInputDelta) {
      this.scriptDelta(c.toolInputDelta);
      this.modelActivity("typing a script");
    } else if (c.toolCall) this.toolCall(c.toolCall);
    else if (c.complete) {
      this.end();
      if (!this.root.querySelector(".message") && c.complete.text) this.append("message", c.complete.text);
      this.root.classList.add("done");
      this.setActivity("ended", "Run completed");
    } else if (c.error) {
      this.end();
      const { title, hint } = describeError(c.error.code, c.error.message);
      const box = el("div", "error run-error");
      box.dataset.code = c.error.code ?? "";
      box.append(el("strong", "", title));
      if (c.error.message) box.append(el("div", "detail", c.error.message));
      if (hint && hint !== c.error.message) box.append(el("div", "hint", hint));
      this.insert(box);
      this.root.classList.add("failed");
      this.setActivity("ended", `Run ended: ${title}`);
    } else if (c.usage) {
      const t = c.usage.total ?? {};
      const cost = t.costUsd ? ` · $${t.costUsd.toFixed(4)}` : "";
      const cached = num(t.cacheReadTokens) ? ` · ${num(t.cacheReadTokens)} cached` : "";
      this.usageEl.textContent =
        `${c.usage.model ?? ""} · ${c.usage.turns ?? 0} turns · ${num(t.inputTokens)} in / ${num(t.outputTokens)} out tokens${cached}${cost}`;
    }
    return true;
  }

  private modelActivity(doing: string): void {
    if (this.ended) return;
    this.setActivity("model", `Model turn ${this.turns || 1}${this.phase ? ` (${this.phase})` : ""}: ${doing}`);
  }

  private phase = "";

  private end(): void {
    this.ended = true;
    this.current = null;
    this.settleOpenCalls();
  }

  private insert(node: HTMLElement): void {
    this.root.insertBefore(node, this.usageEl);
  }

  private append(kind: "thinking" | "message", text: string): void {
    if (!this.current || this.current.kind !== kind) {
      let node: HTMLElement;
      if (kind === "thinking") {
        const details = el("details", "thinking");
        details.append(el("summary", "", "Thinking"), el("div", "thinking-text"));
        node = details;
      } else {
        node = el("div", "message");
      }
      this.insert(node);
      this.current = { kind, el: node, text: "" };
    }
    this.current.text += text;
    if (kind === "thinking") {
      this.current.el.querySelector(".thinking-text")!.textContent = this.current.text;
    } else {
      this.current.el.innerHTML = renderMarkdown(this.current.text);
    }
  }

  private scriptDelta(d: NonNullable<StreamChunk["toolInputDelta"]>): void {
    const card = this.card(d.toolCallId ?? "", d.toolName ?? "");
    card.raw += d.partialJson ?? "";
    const [code] = partialString(card.raw, "code");
    this.showScript(card, code);
    card.el.classList.add("typing");
  }

  private showScript(card: Card, code: string): void {
    if (!card.codeEl) {
      const pre = el("pre", "script");
      card.codeEl = el("code");
      pre.append(card.codeEl);
      card.body.querySelector(".code-col")!.append(pre);
    }
    card.code = code;
    card.codeEl.innerHTML = highlightPython(code);
  }

  private card(id: string, tool: ToolName | string): Card {
    let card = this.cards.get(id);
    if (card) return card;
    this.current = null;
    const root = el("div", "tool");
    root.dataset.toolCallId = id;
    const head = el("div", "head");
    head.append(el("span", "name", toolLabel(tool)), el("span", "status", "writing"));
    const body = el("div", "body");
    body.append(el("div", "code-col"));
    root.append(head, body);
    this.insert(root);
    card = { el: root, body, code: "", raw: "", codeEl: null, tool };
    this.cards.set(id, card);
    return card;
  }

  private toolCall(tc: ToolCall): void {
    const id = baseCallId(tc.toolCallId);
    const isPreview = tc.review === "REVIEW_STATE_PREVIEW";
    this.called.add(id);
    const card = this.card(id, tc.toolName ?? "");
    card.tool = tc.toolName ?? card.tool;
    card.el.classList.remove("typing");
    card.el.dataset.tool = tc.toolName ?? "";
    card.el.querySelector(".name")!.textContent = toolLabel(tc.toolName);
    if (tc.hostApp) this.hostApp = tc.hostApp;
    if (tc.description && !card.body.querySelector(".description")) {
      card.body.prepend(el("div", "description", tc.description));
    }
    const code = tc.execute?.code;
    // The merged script the host will run replaces what was typed (line
    // edits are merged on the server). A fix shows what changed.
    if (code && code !== card.code) {
      this.showScript(card, code);
      this.showFix(card, code);
    }
    for (const n of tc.mergeNotes ?? []) {
      if (![...card.body.querySelectorAll(".note")].some((e) => e.textContent === n)) card.body.append(el("div", "note", n));
    }
    switch (tc.review) {
      case "REVIEW_STATE_AWAITING":
        if (tc.preview) this.showPreview(card, tc.preview);
        this.offerReview(card, id);
        this.setStatus(id, "awaiting review");
        this.setActivity("review", `Awaiting your review: ${toolLabel(tc.toolName)}`);
        return;
      case "REVIEW_STATE_APPROVED":
        closeReview(card);
        if (tc.reviewer) this.decidedNote(card, `Approved by ${tc.reviewer}`);
        break;
    }
    this.setStatus(id, isPreview ? "previewing" : "waiting for the host");
    this.setActivity("host", isPreview ? "Waiting for the host to preview the script" : "Waiting for the host");
  }

  /** Shows a fix of a failed automation as a diff against the failed script. */
  private showFix(card: Card, code: string): void {
    if (!this.failedScript || card.tool !== "TOOL_NAME_EXECUTE_TASK_AUTOMATION" || card.el.querySelector(".fix")) return;
    const lines = hunks(diffLines(this.failedScript, code));
    const box = el("div", "fix");
    box.append(el("div", "label", "What the fix changes in the failed script"));
    const pre = el("pre", "diff");
    for (const l of lines) {
      if (!l) {
        pre.append(el("span", "gap", "  …\n"));
        continue;
      }
      const span = el("span", l.op === "+" ? "ins" : l.op === "-" ? "del" : "ctx");
      span.innerHTML = `${l.op} ${highlightPython(l.text)}\n`;
      pre.append(span);
    }
    box.append(pre);
    // The whole script stays one click away.
    const whole = el("details", "whole");
    whole.append(el("summary", "", "Whole script"));
    const col = card.body.querySelector(".code-col")!;
    const script = col.querySelector("pre.script");
    if (script) whole.append(script);
    col.append(box, whole);
  }

  private offerReview(card: Card, id: string): void {
    if (card.el.querySelector(".review")) return;
    const bar = el("div", "review");
    const ok = el("button", "approve", "Approve");
    const no = el("button", "decline", "Decline");
    const edit = el("button", "edit", "Edit");
    ok.type = no.type = edit.type = "button";
    const decide = (verdict: ReviewVerdict, code?: string) => {
      for (const b of bar.querySelectorAll("button")) b.disabled = true;
      this.hooks.review(id, verdict, code).catch((e) => {
        for (const b of bar.querySelectorAll("button")) b.disabled = false;
        this.errorNote(`could not record the review of ${id}: ${e instanceof Error ? e.message : String(e)}`);
      });
    };
    ok.onclick = () => decide("REVIEW_VERDICT_APPROVE");
    no.onclick = () => decide("REVIEW_VERDICT_DECLINE");
    // Edit opens the script in an editor; the bar then approves the edit
    // (which, under the preview policy, is previewed in turn before it
    // commits) or closes the editor. Approving as shown waits until then.
    const send = el("button", "approve-edited", "Approve as edited");
    const cancel = el("button", "cancel-edit", "Cancel edit");
    send.type = cancel.type = "button";
    send.hidden = cancel.hidden = true;
    const editing = (on: boolean) => {
      ok.hidden = edit.hidden = on;
      send.hidden = cancel.hidden = !on;
    };
    edit.onclick = () => {
      if (card.el.querySelector(".editor")) return;
      const box = el("div", "editor");
      const area = el("textarea", "edit-script");
      area.value = card.code;
      area.spellcheck = false;
      area.rows = Math.min(30, Math.max(8, card.code.split("\n").length + 1));
      area.setAttribute("aria-label", `edit the script of ${id}`);
      const previewed = card.el.querySelector(".preview") !== null;
      box.append(area, el("div", "hint", previewed ? "Your edit runs as a preview first; you decide again on what it would change." : "Your edit is what runs."));
      send.onclick = () => {
        const code = area.value;
        if (!code.trim()) {
          this.errorNote(`the edited script of ${id} is blank: approve the script as shown, or decline it`);
          return;
        }
        decide("REVIEW_VERDICT_APPROVE", code === card.code ? undefined : code);
      };
      cancel.onclick = () => {
        box.remove();
        editing(false);
      };
      editing(true);
      bar.before(box);
      area.focus();
    };
    bar.append(ok, send, no, edit, cancel);
    card.el.append(bar);
  }

  private decidedNote(card: Card, text: string): void {
    let note = card.el.querySelector<HTMLElement>(".decided");
    if (!note) {
      note = el("div", "decided");
      card.body.append(note);
    }
    note.textContent = text;
  }

  /** The preview's effect (report table and view) beside the script. */
  private showPreview(card: Card, r: HostResult): void {
    card.body.querySelector(".preview")?.remove();
    const box = el("div", "preview");
    const label = rollbackInexact(r)
      ? r.error
        ? "Preview failed, and its rollback was not exact"
        : "Preview: what it would change (rolled back, but not exactly)"
      : rollbackUnverified(r)
        ? "Preview: rolled back, not verified"
        : r.error
        ? "Preview failed (nothing was kept)"
        : "Preview: what it would change (rolled back, nothing kept)";
    box.append(el("div", "label", label));
    this.resultInto(box, r, card.el.dataset.toolCallId ?? "preview");
    card.body.classList.add("split");
    card.body.append(box);
  }

  /**
   * Once the run has ended, a call still open got no result: it is shown so,
   * and its review (if any) goes away, so nothing is carried for a run that
   * no longer waits.
   */
  private settleOpenCalls(): void {
    for (const [id, card] of this.cards) {
      const status = card.el.dataset.status;
      if (["waiting for the host", "awaiting review", "running", "previewing", "approved", "writing", undefined].includes(status)) {
        closeReview(card);
        this.setStatus(id, "no result");
      }
    }
  }

  status(id: string): string | undefined {
    return this.cards.get(baseCallId(id))?.el.dataset.status;
  }

  setStatus(id: string, status: ToolStatus): void {
    const card = this.cards.get(baseCallId(id));
    if (!card) return;
    card.el.querySelector(".status")!.textContent = status;
    card.el.dataset.status = status;
  }

  private metadata(c: StreamChunk): void {
    const m = c.metadata!;
    if (m.runStarted) {
      const r = m.runStarted;
      this.root.dataset.model = r.model ?? "";
      this.hostApp = r.hostApp ?? this.hostApp;
      // A replayed run shows what was asked; a run started here shows it already.
      if (r.prompt && !this.root.querySelector(".prompt")) this.root.prepend(el("div", "prompt", r.prompt));
      this.insert(el("div", "meta", `${r.model ?? ""} · ${r.hostApp ?? ""}`));
    } else if (m.turnStarted) {
      this.current = null;
      this.turns++;
      this.phase = phaseLabels[m.turnStarted.phase ?? ""] ?? "";
      this.turnMark = el("span", "turn-mark");
      this.turnMark.hidden = true;
      this.insert(this.turnMark);
      this.activity.kind = "start"; // A new turn restarts the clock.
      this.modelActivity("thinking");
    } else if (m.turnRetried) {
      this.current = null;
      this.insert(el("div", "marker", m.turnRetried.text || "the turn is redone with a larger budget"));
    } else if (m.turnRestarted) {
      this.dropPartialTurn(m.turnRestarted.text || "the turn was restarted");
    } else if (m.contextSummarized) {
      this.current = null;
      this.insert(el("div", "marker", m.contextSummarized.text || "context summarized"));
    } else if (m.notice) {
      this.current = null;
      this.insert(el("div", "notice", m.notice.text ?? ""));
    } else if (m.toolResult) {
      this.current = null;
      const t = m.toolResult;
      this.result(t.toolCallId ?? "", t.result, t.noResult ?? false, t.preview ?? false);
      if (!this.ended) this.setActivity("model", "Model reading the result");
    } else if (m.reviewDecided) {
      const d = m.reviewDecided;
      const id = d.toolCallId ?? "";
      const card = this.cards.get(id);
      if (!card) return;
      closeReview(card);
      const approved = d.verdict === "REVIEW_VERDICT_APPROVE";
      const who = d.reviewer ? ` by ${d.reviewer}` : "";
      if (approved && d.edited && card.body.querySelector(".preview")) {
        // Under the preview policy an edit is not yet an approval of what
        // commits: it is previewed in turn and decided again. The card keeps
        // saying it was edited.
        const note = el("div", "edited-note", `Edited${who}: the edited script is previewed before anything commits, then waits for a decision`);
        card.body.append(note);
        if (card.el.dataset.status === "awaiting review") this.setStatus(id, "approved");
        if (!this.ended) this.setActivity("host", "Edited: waiting for the host to preview the edit");
        return;
      }
      this.decidedNote(card, `${approved ? "Approved" : "Declined"}${who}${d.edited ? " (edited)" : ""}`);
      if (card.el.dataset.status === "awaiting review") this.setStatus(id, approved ? "approved" : "declined");
      if (!this.ended) this.setActivity("model", approved ? "Approved: waiting for the host" : "Declined: telling the model");
    }
  }

  /**
   * Removes what the current turn streamed (thinking, prose, scripts being
   * typed) because another replica redoes the turn; calls already sent stay.
   */
  private dropPartialTurn(note: string): void {
    this.current = null;
    const mark = this.turnMark;
    let node = mark ? mark.nextSibling : null;
    while (node && node !== this.usageEl) {
      const next = node.nextSibling;
      const id = node instanceof HTMLElement ? node.dataset.toolCallId : undefined;
      if (id === undefined || !this.called.has(id)) {
        node.parentNode?.removeChild(node);
        if (id !== undefined) this.cards.delete(id);
      }
      node = next;
    }
    const marker = el("div", "marker restarted", note);
    if (mark) this.root.insertBefore(marker, mark);
    else this.insert(marker);
  }

  private result(rawId: string, r: HostResult | undefined, noResult: boolean, preview: boolean): void {
    const id = baseCallId(rawId);
    const card = this.card(id, "");
    const status = card.el.dataset.status;
    if (preview || rawId !== id) {
      // A preview's result: nothing was kept; the call comes back for review.
      if (noResult || !r) {
        this.setStatus(id, "no result");
        return;
      }
      this.showPreview(card, r);
      this.setStatus(id, r.error ? "failed in preview" : "previewed");
      if (r.error && card.tool === "TOOL_NAME_EXECUTE_TASK_AUTOMATION" && card.code) this.failedScript = card.code;
      return;
    }
    closeReview(card);
    // A call the page could not deliver, or one declined, keeps saying so.
    if (status === "not delivered") return;
    if (noResult || !r) {
      if (status !== "declined") this.setStatus(id, "no result");
      return;
    }
    if (r.error?.type === "Declined" || status === "declined") this.setStatus(id, "declined");
    else if (r.error) this.setStatus(id, rolledBackStatus(r));
    else this.setStatus(id, r.committed ? "committed" : "read-only");
    if (r.error && card.tool === "TOOL_NAME_EXECUTE_TASK_AUTOMATION" && card.code) this.failedScript = card.code;
    if (r.error?.type === "Declined") return;
    this.resultInto(card.body, r, id);
  }

  private resultInto(box: HTMLElement, r: HostResult, name: string): void {
    const inexact = rollbackNote(r);
    if (inexact) box.append(el("div", "rollback-inexact", inexact));
    if (r.error) {
      const e = r.error;
      const at = e.line ? ` (line ${e.line})` : "";
      box.append(el("pre", "exec-error", `${e.type ?? "Error"}${at}: ${e.message ?? ""}${e.traceback ? "\n" + e.traceback : ""}`));
    }
    if (r.stdout?.trim()) box.append(el("pre", "stdout", r.stdout.trim()));
    const text = r.epilogue?.stdout?.trim();
    const table = reportTable(r.epilogue?.report);
    if (table || text) {
      const changes = el("div", "changes");
      changes.append(el("div", "label", "What changed"));
      if (table) {
        changes.append(table);
        if (text) {
          const raw = el("details", "raw");
          raw.append(el("summary", "", "Report as text"), el("pre", "", text));
          changes.append(raw);
        }
      } else {
        changes.append(el("pre", "", text));
      }
      box.append(changes);
    }
    for (const img of r.images ?? []) {
      if (img.data) box.append(viewFigure(img, name));
    }
    if (r.captureNote) box.append(el("div", "note", r.captureNote));
  }

  /** Says that another tab carries this call: this page only follows the run. */
  viewerNote(rawId: string): void {
    const card = this.cards.get(baseCallId(rawId));
    if (!card || card.body.querySelector(".viewer")) return;
    card.body.append(el("div", "note viewer", "The tab that started this run carries this call to its host runtime."));
  }

  errorNote(text: string): void {
    this.insert(el("div", "error", text));
  }
}

export { escapeHTML };
