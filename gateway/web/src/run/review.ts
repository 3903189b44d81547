import { APIError } from "../api";
import { decidedAlready } from "../refusal";
import type { ReviewVerdict } from "../types";
import { el } from "./parts";

export interface ViewHooks {
  /** The person approved or declined a call awaiting review; code is their edit of the script. */
  review(toolCallId: string, verdict: ReviewVerdict, code?: string): Promise<void>;
  /** The signed-in person's user name: their own decisions read "by you". */
  self?: string;
  /** Saves the session's document as its host last handed it over; rejects saying why not. */
  downloadDocument?: () => Promise<void>;
  /** Fetches the 3D model a call's result carried; rejects saying why not. */
  model?: (toolCallId: string, state: "before" | "after") => Promise<ArrayBuffer>;
}

/**
 * The review bar of a call awaiting review: approve, decline, or edit the
 * script and approve the edit. It calls review with the decision and says
 * through fail what could not be recorded. code reads the script now shown.
 */
export function reviewBar(id: string, code: () => string, previewed: () => boolean, review: ViewHooks["review"], fail: (text: string) => void): HTMLElement {
  const bar = el("div", "review");
  const ok = el("button", "approve", "Approve");
  const no = el("button", "decline", "Decline");
  const edit = el("button", "edit", "Edit");
  ok.type = no.type = edit.type = "button";
  const decide = (verdict: ReviewVerdict, edited?: string) => {
    for (const b of bar.querySelectorAll("button")) b.disabled = true;
    review(id, verdict, edited).catch((e) => {
      // A call decided already (by another reviewer, a timeout or a
      // cancel) takes no second decision: the bar stays closed and its
      // outcome follows on the stream.
      const reason = e instanceof APIError ? e.reason : undefined;
      if (decidedAlready(reason)) {
        bar.dataset.reason = reason ?? "";
        fail(`${id} was decided already (by someone else, a timeout or a cancel); your decision was not recorded`);
        return;
      }
      for (const b of bar.querySelectorAll("button")) b.disabled = false;
      fail(`could not record the review of ${id}: ${e instanceof Error ? e.message : String(e)}`);
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
    if (bar.parentElement?.querySelector(".editor")) return;
    const box = el("div", "editor");
    const area = el("textarea", "edit-script");
    area.value = code();
    area.spellcheck = false;
    area.rows = Math.min(30, Math.max(8, code().split("\n").length + 1));
    area.setAttribute("aria-label", `edit the script of ${id}`);
    box.append(area, el("div", "hint", previewed() ? "Your edit runs as a preview first; you decide again on what it would change." : "Your edit is what runs."));
    send.onclick = () => {
      const edited = area.value;
      if (!edited.trim()) {
        fail(`the edited script of ${id} is blank: approve the script as shown, or decline it`);
        return;
      }
      decide("REVIEW_VERDICT_APPROVE", edited === code() ? undefined : edited);
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
  return bar;
}
