import { highlightPython } from "../highlight";
import { renderMarkdown } from "../markdown";
import type { StreamChunk } from "../types";
import type { Activity, ToolStatus } from "./labels";
import { baseCallId, toolLabel } from "./labels";
import { el, fixDiff, previewPart, resultInto, settleDocuments } from "./parts";
import { reviewBar, type ViewHooks } from "./review";
import { initialState, isReplay, reduce, type Action, type CardState, type Item, type RunState } from "./state";

export type { ViewHooks } from "./review";

// RunView draws one run's state into a container. The state is the reducer's
// (state.ts); the view only redraws what changed from the state it drew last,
// so an open editor or an unfolded detail stays as the person left it.

/** The elements of a drawn card, and the card state they show. */
interface DrawnCard {
  state: CardState;
  root: HTMLElement;
  name: HTMLElement;
  status: HTMLElement;
  body: HTMLElement;
  col: HTMLElement;
  script: HTMLElement | null;
  code: HTMLElement | null;
  parts: Partial<Record<"description" | "notes" | "preview" | "result" | "decided" | "edited" | "viewer", HTMLElement>>;
  bar: HTMLElement | null;
}

export class RunView {
  readonly root: HTMLElement;
  private state: RunState;
  private promptEl: HTMLElement | null = null;
  private usageEl: HTMLElement;
  private drawn = new Map<number, { item: Item; node: HTMLElement }>();
  private cards = new Map<string, DrawnCard>();
  /** A result was drawn: which card offers the document's download is settled again. */
  private resultDrawn = false;

  constructor(
    parent: HTMLElement,
    prompt: string,
    private hooks: ViewHooks,
  ) {
    this.state = initialState(prompt, Date.now(), hooks.self);
    this.root = el("section", "run");
    this.usageEl = el("div", "usage");
    this.root.append(this.usageEl);
    parent.append(this.root);
    this.draw();
  }

  get lastSeq(): number {
    return this.state.lastSeq;
  }
  get runId(): string {
    return this.state.runId;
  }
  get hostApp(): string {
    return this.state.hostApp;
  }
  get ended(): boolean {
    return this.state.ended;
  }
  get activity(): Activity {
    return this.state.activity;
  }

  private dispatch(a: Action): void {
    const next = reduce(this.state, a, Date.now());
    if (next === this.state) return;
    this.state = next;
    this.draw();
  }

  /** Applies one chunk; returns false for a chunk already shown (a replay). */
  apply(c: StreamChunk): boolean {
    if (isReplay(this.state, c)) return false;
    this.dispatch({ type: "chunk", chunk: c });
    return true;
  }

  setActivity(kind: Activity["kind"], label: string): void {
    this.dispatch({ type: "activity", kind, label });
  }

  status(id: string): string | undefined {
    return this.state.cards[baseCallId(id)]?.status || undefined;
  }

  setStatus(id: string, status: ToolStatus): void {
    this.dispatch({ type: "status", id, status });
  }

  /** Says that another tab carries this call: this page only follows the run. */
  viewerNote(id: string): void {
    this.dispatch({ type: "viewer", id });
  }

  errorNote(text: string): void {
    this.dispatch({ type: "note-error", text });
  }

  private draw(): void {
    const s = this.state;
    if (s.prompt && !this.promptEl) {
      this.promptEl = el("div", "prompt", s.prompt);
      this.root.prepend(this.promptEl);
    }
    this.root.dataset.model = s.model;
    this.root.classList.toggle("done", s.outcome === "done");
    this.root.classList.toggle("failed", s.outcome === "failed");
    const live = new Set<number>();
    let cursor: ChildNode | null = this.promptEl ? this.promptEl.nextSibling : this.root.firstChild;
    for (const item of s.items) {
      live.add(item.key);
      const node = this.item(item);
      if (cursor === node) cursor = node.nextSibling;
      else this.root.insertBefore(node, cursor);
    }
    for (const [key, d] of this.drawn) {
      if (live.has(key)) continue;
      d.node.remove();
      this.drawn.delete(key);
      if (d.item.kind === "card") this.cards.delete(d.item.id);
    }
    this.usageEl.textContent = s.usage;
    if (this.resultDrawn) {
      this.resultDrawn = false;
      // Across the session's runs: the transcript holds them all, in order.
      settleDocuments(this.root.parentElement ?? this.root);
    }
  }

  /** The node of item, made or brought up to date. */
  private item(item: Item): HTMLElement {
    const had = this.drawn.get(item.key);
    if (item.kind === "card") {
      const node = this.card(item.id);
      this.drawn.set(item.key, { item, node });
      return node;
    }
    if (had && had.item === item) return had.node;
    let node = had?.node;
    switch (item.kind) {
      case "thinking":
        if (!node) {
          node = el("details", "thinking");
          node.append(el("summary", "", "Thinking"), el("div", "thinking-text"));
        }
        node.querySelector(".thinking-text")!.textContent = item.text;
        break;
      case "message":
        node ??= el("div", "message");
        node.innerHTML = renderMarkdown(item.text);
        break;
      case "meta":
      case "notice":
        node = el("div", item.kind, item.text);
        break;
      case "note-error":
        node = el("div", "error", item.text);
        break;
      case "marker":
        node = el("div", item.restarted ? "marker restarted" : "marker", item.text);
        break;
      case "turn-mark":
        node = el("span", "turn-mark");
        node.hidden = true;
        break;
      case "run-error":
        node = el("div", "error run-error");
        node.dataset.code = item.code;
        node.append(el("strong", "", item.title));
        if (item.detail) node.append(el("div", "detail", item.detail));
        if (item.hint) node.append(el("div", "hint", item.hint));
        break;
    }
    if (had && had.node !== node) had.node.replaceWith(node);
    this.drawn.set(item.key, { item, node });
    return node;
  }

  private card(id: string): HTMLElement {
    const c = this.state.cards[id];
    let d = this.cards.get(id);
    if (!d) {
      const root = el("div", "tool");
      root.dataset.toolCallId = id;
      const head = el("div", "head");
      const name = el("span", "name");
      const status = el("span", "status");
      head.append(name, status);
      const body = el("div", "body");
      const col = el("div", "code-col");
      body.append(col);
      root.append(head, body);
      d = { state: c, root, name, status, body, col, script: null, code: null, parts: {}, bar: null };
      this.cards.set(id, d);
      this.drawCard(d, c, null);
    } else if (d.state !== c) {
      this.drawCard(d, c, d.state);
    }
    d.state = c;
    return d.root;
  }

  private drawCard(d: DrawnCard, c: CardState, was: CardState | null): void {
    d.name.textContent = toolLabel(c.tool);
    if (c.tool) d.root.dataset.tool = c.tool;
    d.status.textContent = c.status || "writing";
    if (c.status) d.root.dataset.status = c.status;
    d.root.classList.toggle("typing", c.typing);
    if (c.code && (c.code !== was?.code || !d.code)) {
      if (!d.code) {
        d.script = el("pre", "script");
        d.code = el("code");
        d.script.append(d.code);
        d.col.append(d.script);
      }
      d.code.innerHTML = highlightPython(c.code);
    }
    if (c.fixOf && !d.col.querySelector(".fix")) {
      // The whole script stays one click away.
      const whole = el("details", "whole");
      whole.append(el("summary", "", "Whole script"));
      if (d.script) whole.append(d.script);
      d.col.append(fixDiff(c.fixOf, c.code), whole);
    }
    const part = (key: keyof DrawnCard["parts"], show: boolean, make: () => HTMLElement) => {
      d.parts[key]?.remove();
      delete d.parts[key];
      if (show) d.body.append((d.parts[key] = make()));
    };
    if (c.description && !d.parts.description) {
      d.parts.description = el("div", "description", c.description);
      d.body.prepend(d.parts.description);
    }
    if (c.notes !== was?.notes) {
      part("notes", c.notes.length > 0, () => {
        const box = el("div", "notes-list");
        box.style.display = "contents";
        for (const n of c.notes) box.append(el("div", "note", n));
        return box;
      });
    }
    if (c.preview !== was?.preview && c.preview) {
      const r = c.preview;
      part("preview", true, () => previewPart(r, c.id, this.hooks.model));
      d.body.classList.add("split");
    }
    if (c.result !== was?.result && c.result) {
      const r = c.result;
      part("result", true, () => {
        const box = el("div", "result");
        box.style.display = "contents";
        resultInto(box, r, c.id, r.committed ? this.hooks.downloadDocument : undefined, this.hooks.model);
        return box;
      });
      this.resultDrawn = true;
    }
    if (c.decided !== was?.decided) part("decided", c.decided !== "", () => el("div", "decided", c.decided));
    if (c.editedNotes !== was?.editedNotes) {
      part("edited", c.editedNotes.length > 0, () => {
        const box = el("div", "edited-notes");
        box.style.display = "contents";
        for (const n of c.editedNotes) box.append(el("div", "edited-note", n));
        return box;
      });
    }
    if (c.viewer && !d.parts.viewer) part("viewer", true, () => el("div", "note viewer", "The tab that started this run carries this call to its host runtime."));
    if (c.reviewOpen && !d.bar) {
      d.bar = reviewBar(
        c.id,
        () => this.state.cards[c.id]?.code ?? "",
        () => this.state.cards[c.id]?.preview !== undefined,
        (id, verdict, code) => this.hooks.review(id, verdict, code),
        (text) => this.errorNote(text),
      );
      d.root.append(d.bar);
    } else if (!c.reviewOpen && d.bar) {
      d.bar.remove();
      d.root.querySelector(".editor")?.remove();
      d.bar = null;
    }
  }
}
