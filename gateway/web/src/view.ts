import { highlightPython } from "./highlight";
import { escapeHTML, renderMarkdown } from "./markdown";
import { partialString } from "./partial";
import type { HostResult, StreamChunk, ToolCall } from "./types";

// RunView draws one run's stream into a container: thinking, prose, the
// script as it is typed, tool calls with their status, the change report, the
// rendered view, notices and usage.

export type ToolStatus =
  | "awaiting review"
  | "waiting for the host"
  | "running"
  | "committed"
  | "read-only"
  | "rolled back"
  | "declined"
  | "no result";

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function num(v: string | number | undefined): number {
  return typeof v === "string" ? Number(v) : (v ?? 0);
}

export class RunView {
  readonly root: HTMLElement;
  lastSeq = 0;
  runId = "";
  ended = false;
  private current: { kind: string; el: HTMLElement; text: string } | null = null;
  private scripts = new Map<string, { raw: string; code: HTMLElement; card: HTMLElement }>();
  private cards = new Map<string, HTMLElement>();
  // Calls whose tool_call chunk arrived: they outlive a restarted turn.
  private called = new Set<string>();
  // Marks where the current model turn began, so a restarted turn's partial
  // output can be dropped.
  private turnMark: HTMLElement | null = null;
  private usageEl: HTMLElement;

  constructor(parent: HTMLElement, prompt: string) {
    this.root = el("section", "run");
    if (prompt) this.root.append(el("div", "prompt", prompt));
    this.usageEl = el("div", "usage");
    this.root.append(this.usageEl);
    parent.append(this.root);
  }

  /** Applies one chunk; returns false for a chunk already shown (a replay). */
  apply(c: StreamChunk): boolean {
    const seq = num(c.seq);
    if (seq > 0 && seq <= this.lastSeq) return false;
    if (seq > 0) this.lastSeq = seq;
    if (c.runId) this.runId = c.runId;
    if (c.metadata) this.metadata(c);
    else if (c.thinking) this.append("thinking", c.thinking.text ?? "");
    else if (c.message) this.append("message", c.message.text ?? "");
    else if (c.toolInputDelta) this.scriptDelta(c.toolInputDelta);
    else if (c.toolCall) this.toolCall(c.toolCall);
    else if (c.complete) {
      this.ended = true;
      this.current = null;
      this.settleOpenCalls();
      if (!this.root.querySelector(".message") && c.complete.text) this.append("message", c.complete.text);
      this.root.classList.add("done");
    } else if (c.error) {
      this.ended = true;
      this.current = null;
      this.settleOpenCalls();
      this.insert(el("div", "error", `${c.error.code ?? "error"}: ${c.error.message ?? ""}`));
      this.root.classList.add("failed");
    } else if (c.usage) {
      const t = c.usage.total ?? {};
      const cost = t.costUsd ? ` · $${t.costUsd.toFixed(4)}` : "";
      const cached = num(t.cacheReadTokens) ? ` · ${num(t.cacheReadTokens)} cached` : "";
      this.usageEl.textContent =
        `${c.usage.model ?? ""} · ${c.usage.turns ?? 0} turns · ${num(t.inputTokens)} in / ${num(t.outputTokens)} out tokens${cached}${cost}`;
    }
    return true;
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
    const id = d.toolCallId ?? "";
    let s = this.scripts.get(id);
    if (!s) {
      const card = this.card(id, d.toolName ?? "script");
      const pre = el("pre", "script");
      const code = el("code");
      pre.append(code);
      card.querySelector(".body")!.append(pre);
      s = { raw: "", code, card };
      this.scripts.set(id, s);
    }
    s.raw += d.partialJson ?? "";
    const [code] = partialString(s.raw, "code");
    s.code.innerHTML = highlightPython(code);
    s.card.classList.add("typing");
  }

  private card(id: string, name: string): HTMLElement {
    let card = this.cards.get(id);
    if (card) return card;
    this.current = null;
    card = el("div", "tool");
    card.dataset.toolCallId = id;
    const head = el("div", "head");
    head.append(el("span", "name", name), el("span", "status", "writing"));
    card.append(head, el("div", "body"));
    this.insert(card);
    this.cards.set(id, card);
    return card;
  }

  private toolCall(tc: ToolCall): void {
    this.called.add(tc.toolCallId);
    const card = this.card(tc.toolCallId, tc.toolName ?? "tool");
    card.classList.remove("typing");
    card.querySelector(".name")!.textContent = tc.toolName ?? "tool";
    const body = card.querySelector(".body")!;
    if (tc.description) body.prepend(el("div", "description", tc.description));
    const code = tc.execute?.code;
    if (code) {
      let s = this.scripts.get(tc.toolCallId);
      if (!s) {
        const pre = el("pre", "script");
        const c = el("code");
        pre.append(c);
        body.append(pre);
        s = { raw: "", code: c, card };
        this.scripts.set(tc.toolCallId, s);
      }
      // The merged script the host will run replaces what was typed (line
      // edits are merged on the server).
      s.code.innerHTML = highlightPython(code);
    }
    for (const n of tc.mergeNotes ?? []) body.append(el("div", "note", n));
    this.setStatus(tc.toolCallId, "waiting for the host");
  }

  /**
   * Once the run has ended, a call still open got no result: it is shown so,
   * and its review (if any) goes away, so nothing is carried for a run that
   * no longer waits.
   */
  private settleOpenCalls(): void {
    for (const [id, card] of this.cards) {
      const status = card.dataset.status;
      if (status === "waiting for the host" || status === "awaiting review") {
        card.querySelector(".review")?.remove();
        this.setStatus(id, "no result");
      }
    }
  }

  setStatus(id: string, status: ToolStatus): void {
    const card = this.cards.get(id);
    if (!card) return;
    card.querySelector(".status")!.textContent = status;
    card.dataset.status = status;
  }

  /** Shows review buttons on the call's card; resolves true when approved. */
  review(id: string): Promise<boolean> {
    const card = this.cards.get(id);
    if (!card) return Promise.resolve(true);
    this.setStatus(id, "awaiting review");
    return new Promise((resolve) => {
      const bar = el("div", "review");
      const ok = el("button", "approve", "Run it");
      const no = el("button", "decline", "Decline");
      ok.onclick = () => (bar.remove(), resolve(true));
      no.onclick = () => (bar.remove(), resolve(false));
      bar.append(ok, no);
      card.append(bar);
      bar.scrollIntoView({ block: "nearest" });
    });
  }

  private metadata(c: StreamChunk): void {
    const m = c.metadata!;
    switch (m.kind) {
      case "METADATA_KIND_RUN_STARTED":
        this.root.dataset.model = m.model ?? "";
        // A replayed run shows what was asked; a run started here shows it already.
        if (m.prompt && !this.root.querySelector(".prompt")) this.root.prepend(el("div", "prompt", m.prompt));
        this.insert(el("div", "meta", `${m.model ?? ""} · ${m.hostApp ?? ""}`));
        break;
      case "METADATA_KIND_TURN_STARTED":
        this.current = null;
        this.turnMark = el("span", "turn-mark");
        this.turnMark.hidden = true;
        this.insert(this.turnMark);
        break;
      case "METADATA_KIND_TURN_RESTARTED":
        this.dropPartialTurn(m.text || "the turn was restarted");
        break;
      case "METADATA_KIND_CONTEXT_SUMMARIZED":
        this.current = null;
        this.insert(el("div", "marker", m.text || "context summarized"));
        break;
      case "METADATA_KIND_NOTICE":
        this.current = null;
        this.insert(el("div", "notice", m.text ?? ""));
        break;
      case "METADATA_KIND_TOOL_RESULT":
        this.current = null;
        this.result(m.toolCallId ?? "", m.toolResult, m.noResult ?? false);
        break;
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
        if (id !== undefined) {
          this.cards.delete(id);
          this.scripts.delete(id);
        }
      }
      node = next;
    }
    const marker = el("div", "marker restarted", note);
    if (mark) this.root.insertBefore(marker, mark);
    else this.insert(marker);
  }

  private result(id: string, r: HostResult | undefined, noResult: boolean): void {
    const card = this.card(id, "tool");
    const body = card.querySelector(".body")!;
    card.querySelector(".review")?.remove();
    if (noResult || !r) {
      this.setStatus(id, "no result");
      return;
    }
    if (r.error?.type === "Declined") this.setStatus(id, "declined");
    else if (r.error) this.setStatus(id, "rolled back");
    else this.setStatus(id, r.committed ? "committed" : "read-only");
    if (r.error) {
      const e = r.error;
      const at = e.line ? ` (line ${e.line})` : "";
      body.append(el("pre", "exec-error", `${e.type ?? "Error"}${at}: ${e.message ?? ""}${e.traceback ? "\n" + e.traceback : ""}`));
    }
    if (r.stdout?.trim()) body.append(el("pre", "stdout", r.stdout.trim()));
    const report = r.epilogue?.stdout?.trim();
    if (report) {
      const box = el("div", "changes");
      box.append(el("div", "label", "What changed"), el("pre", "", report));
      body.append(box);
    }
    for (const img of r.images ?? []) {
      if (!img.data) continue;
      const fig = el("figure", "view");
      const image = el("img");
      image.src = `data:${img.mimeType || "image/png"};base64,${img.data}`;
      image.alt = `${img.view ?? "view"} of the document`;
      fig.append(image, el("figcaption", "", `${img.view ?? "view"} ${img.width ?? ""}×${img.height ?? ""}`));
      body.append(fig);
    }
  }

  errorNote(text: string): void {
    this.insert(el("div", "error", text));
  }
}

export { escapeHTML };
