import { type ModelFetch, modelPart } from "./model";
import { diffLines, hunks } from "../diff";
import { highlightPython } from "../highlight";
import { documentNote, replacedText } from "../document";
import { rollbackInexact, rollbackNote, rollbackScope, rollbackUnverified } from "../rollback";
import type { ChangeReport, HostImage, HostResult } from "../types";

// The DOM of the parts of a tool call's card: the change report, rendered
// views, what the host reported, and a fix as a diff.

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
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
    // Properties says which changed on a modified element; a report of
    // added or deleted elements only has none to say, so the column goes.
    const props = elements.some((e) => (e.properties ?? []).length > 0);
    // The same readable words as the terminal's table: the type and level
    // a person knows the element by; the host's internal id on hover.
    for (const h of ["Change", "Category", "Type", "Label", "Level", ...(props ? ["Properties changed"] : [])]) head.append(el("th", "", h));
    table.append(el("thead"), el("tbody"));
    table.tHead!.append(head);
    for (const e of elements) {
      const tr = el("tr");
      const change = changeWords[e.change ?? ""] ?? "";
      tr.dataset.change = change;
      if (e.name) tr.title = `id ${e.name}`;
      tr.append(
        el("td", "change", change),
        el("td", "", e.category ?? ""),
        el("td", "", e.type ?? ""),
        el("td", "", e.label ?? ""),
        el("td", "", e.level ?? ""),
      );
      if (props) tr.append(el("td", "props", (e.properties ?? []).join(", ") || (change === "added" ? "(new)" : change === "deleted" ? "(gone)" : "")));
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

/**
 * The download of the document a commit saved, once Nexus received it: a
 * button, and the words an older card shows in its place once a later
 * change replaced the file (settleDocuments decides which).
 */
function documentButton(download: () => Promise<void>): HTMLElement {
  const box = el("span", "document");
  box.dataset.handOver = "received";
  const b = el("button", "download-document", "Download the document");
  b.type = "button";
  b.title = "The document as the host saved it after this change";
  b.addEventListener("click", () => {
    b.disabled = true;
    download()
      .catch((e) => b.after(el("span", "error download-error", e instanceof Error ? e.message : String(e))))
      .finally(() => (b.disabled = false));
  });
  const replaced = el("span", "document-replaced", replacedText);
  replaced.hidden = true;
  box.append(b, replaced);
  return box;
}

/**
 * Leaves the download on the newest card of transcript whose file Nexus
 * received, and says on every older one that a later change replaced the
 * file (document.ts says why one file per session). Cards are in the
 * transcript in the order they ran, across the session's runs.
 */
export function settleDocuments(transcript: ParentNode): void {
  const saved = [...transcript.querySelectorAll<HTMLElement>(".document[data-hand-over='received']")];
  saved.forEach((box, i) => {
    const latest = i === saved.length - 1;
    box.dataset.latest = String(latest);
    box.querySelector<HTMLElement>("button.download-document")!.hidden = !latest;
    box.querySelector<HTMLElement>(".document-replaced")!.hidden = latest;
  });
}

/** A rendered view: large, opens full size on click, and can be downloaded. */
function viewFigure(img: HostImage, name: string, doc?: () => Promise<void>): HTMLElement {
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
  if (doc) caption.append(" ", documentButton(doc));
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

/**
 * Appends what the host reported (error, output, change report, views) to
 * box; doc, for a commit whose file Nexus received, downloads the document
 * beside its view, and a commit whose file was not saved or not received
 * says so in its place.
 */
export function resultInto(box: HTMLElement, r: HostResult, name: string, doc?: () => Promise<void>, model?: ModelFetch): void {
  const inexact = rollbackNote(r);
  if (inexact) box.append(el("div", "rollback-inexact", inexact));
  const scope = rollbackScope(r);
  if (scope) box.append(el("div", "note rollback-scope", scope));
  // What the application did on its own while the script ran (a dialog
  // answered so it never held the application), in the host's words.
  for (const said of r.hostNotes ?? []) box.append(el("div", "note host-note", said));
  if (r.error?.condition === "EXEC_CONDITION_RUNTIME_RESTARTED") {
    // Said plainly first: the application died and came back.
    box.append(
      el("div", "runtime-restarted", "The host application stopped while this script ran and was restarted on the document as of its last commit; nothing this script did was kept."),
    );
  }
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
  const images = (r.images ?? []).filter((img) => img.data);
  // Whether this card is the latest to offer the download is settled once
  // it is in the transcript (settleDocuments); drawn, it offers it.
  const note = documentNote(r, true);
  const download = doc && note?.kind === "download" ? doc : undefined;
  images.forEach((img, i) => box.append(viewFigure(img, name, i === 0 ? download : undefined)));
  if (download && !images.length) box.append(documentButton(download));
  if (note && note.kind !== "download") {
    const said = el("div", `document-note ${note.kind}`, note.text);
    if (r.save?.path) said.title = r.save.path;
    box.append(said);
  }
  if (r.captureNote) box.append(el("div", "note", r.captureNote));
  if (model && r.model) box.append(modelPart(r, name, model));
  else if (r.modelNote) box.append(el("div", "note", r.modelNote));
}

/** A fix of a failed automation as what it changes in the failed script. */
export function fixDiff(failed: string, code: string): HTMLElement {
  const box = el("div", "fix");
  box.append(el("div", "label", "What the fix changes in the failed script"));
  const pre = el("pre", "diff");
  for (const l of hunks(diffLines(failed, code))) {
    if (!l) {
      pre.append(el("span", "gap", "  …\n"));
      continue;
    }
    const span = el("span", l.op === "+" ? "ins" : l.op === "-" ? "del" : "ctx");
    span.innerHTML = `${l.op} ${highlightPython(l.text)}\n`;
    pre.append(span);
  }
  box.append(pre);
  return box;
}

/**
 * A preview's effect: what it would change beside the script, and its
 * rendered views spanning the card under both, so neither column is left
 * half empty beside a tall picture.
 */
export function previewPart(r: HostResult, name: string, model?: ModelFetch): HTMLElement {
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
  resultInto(box, r, name, undefined, model);
  const part = el("div", "preview-part");
  const views = [...box.querySelectorAll<HTMLElement>(":scope > figure.view, :scope > .model-review")];
  part.append(box);
  if (views.length) {
    const wide = el("div", "preview-views");
    wide.append(...views);
    part.append(wide);
  }
  return part;
}
