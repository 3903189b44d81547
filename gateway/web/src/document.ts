import type { HostResult } from "./types";

// What a committed change's card says of the session's document, from the
// host's own fields (host.proto DocumentSave): the download is offered only
// where it answers the file this change saved.
//
// Nexus keeps one file per session, the last one its host handed over, so
// the newest card whose file Nexus received is the one card whose download
// is that change's file; an older card says its file was saved and that a
// later change replaced it. Keeping every version per call on the server
// instead would hold a whole document (megabytes) for every commit, with its
// own retention and limits, for downloads a person rarely asks of an older
// change; the file on their computer, and its numbered backups, hold those.

/** What a card shows of the document: the download, or why not, in words. */
export type DocumentNote =
  | { kind: "download" }
  | { kind: "replaced"; text: string }
  | { kind: "not-received"; text: string }
  | { kind: "not-saved"; text: string };

/** The text of an older card whose file a later change replaced. */
export const replacedText = "The document was saved after this change; a later change replaced the file, so its download is on the latest change's card.";

function sentence(s: string): string {
  return s.trim().replace(/[.\s]+$/, "");
}

/**
 * What the card of result says of the document, when anything: latest says
 * whether it is the session's newest card whose file Nexus received. A
 * commit its host neither saved nor handed over (a runtime that is not
 * linked, a host that does not save) says nothing: there is no file to offer.
 */
export function documentNote(r: HostResult, latest: boolean): DocumentNote | null {
  const save = r.save;
  if (!r.committed || !save) return null;
  if (save.outcome === "SAVE_OUTCOME_FAILED") {
    return { kind: "not-saved", text: `The file was not saved: ${sentence(save.error || "the host gave no reason")}. The change is in the open document only.` };
  }
  if (save.outcome !== "SAVE_OUTCOME_SAVED") return null;
  switch (save.handOver) {
    case "DOCUMENT_HAND_OVER_RECEIVED":
      return latest ? { kind: "download" } : { kind: "replaced", text: replacedText };
    case "DOCUMENT_HAND_OVER_FAILED":
      return {
        kind: "not-received",
        text: `Nexus did not receive the saved file: ${sentence(save.handOverError || "the host gave no reason")}. The file on your computer holds this change.`,
      };
    default:
      return null;
  }
}
