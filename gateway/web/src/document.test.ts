import { describe, expect, it } from "vitest";
import { documentNote, replacedText } from "./document";
import type { HostResult } from "./types";

const saved = (extra: object = {}): HostResult => ({
  committed: true,
  save: { outcome: "SAVE_OUTCOME_SAVED", path: "/home/p/Nexus.FCStd", ...extra },
});

describe("the document of a committed change", () => {
  it("offers the download only on the latest card whose file Nexus received", () => {
    const r = saved({ handOver: "DOCUMENT_HAND_OVER_RECEIVED" });
    expect(documentNote(r, true)).toEqual({ kind: "download" });
    expect(documentNote(r, false)).toEqual({ kind: "replaced", text: replacedText });
    expect(replacedText).toMatch(/was saved after this change; a later change replaced the file/);
  });
  it("says a failed hand-over in words instead of the download", () => {
    const r = saved({
      handOver: "DOCUMENT_HAND_OVER_FAILED",
      handOverError: "HTTP 413: the document is 30 KB; the limit is 1 KB (NEXUS_MAX_DOCUMENT_BYTES).",
    });
    expect(documentNote(r, true)).toEqual({
      kind: "not-received",
      text: "Nexus did not receive the saved file: HTTP 413: the document is 30 KB; the limit is 1 KB (NEXUS_MAX_DOCUMENT_BYTES). The file on your computer holds this change.",
    });
  });
  it("says a failed save, whose change is in the open document only", () => {
    const r: HostResult = { committed: true, save: { outcome: "SAVE_OUTCOME_FAILED", path: "/ro/Nexus.FCStd", error: "the folder /ro is read-only" } };
    expect(documentNote(r, true)).toEqual({
      kind: "not-saved",
      text: "The file was not saved: the folder /ro is read-only. The change is in the open document only.",
    });
  });
  it("offers nothing when nothing was handed over or nothing committed", () => {
    // A runtime that is not linked saves, but hands nothing to Nexus.
    expect(documentNote(saved(), true)).toBeNull();
    expect(documentNote({ committed: true }, true)).toBeNull();
    expect(documentNote({ committed: false, save: { outcome: "SAVE_OUTCOME_SAVED", handOver: "DOCUMENT_HAND_OVER_RECEIVED" } }, true)).toBeNull();
  });
});
