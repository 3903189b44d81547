import type { ReviewPolicy } from "../types";
import type { Page } from "./page";

// The session's review policy: what the person picked, and what it means for
// them, said once at the top of the session.

// A new session gets the preview unless the person picks otherwise for it.
export const defaultPolicy: ReviewPolicy = "REVIEW_POLICY_PREVIEW";

export function chosenPolicy(p: Page): ReviewPolicy {
  return (p.el.policySelect.value || defaultPolicy) as ReviewPolicy;
}

/** What will wait for the person under a policy, said plainly. */
function reviewNoticeText(policy: ReviewPolicy): string {
  switch (policy) {
    case "REVIEW_POLICY_NONE":
      return "Nothing waits for you in this session: every script runs unattended and what it changes is kept.";
    case "REVIEW_POLICY_EVERY_SCRIPT":
      return "Every script in this session, inspections included, waits for your decision before it runs.";
    case "REVIEW_POLICY_AUTOMATIONS":
      return "Every script that would change the document waits for your decision before it runs, each fix after a failure too; inspections run without asking.";
    default:
      return (
        "A script that would change the document first runs as a preview (rolled back, nothing kept) and waits for your decision on its change report and view; " +
        "a script that fails goes back to the model without asking; inspections run without asking."
      );
  }
}

/** Says once, at the top of the session, what will wait for the person. */
export function showReviewNotice(p: Page, policy: ReviewPolicy): void {
  const { transcript } = p.el;
  let note = transcript.querySelector<HTMLElement>(".review-notice");
  if (!note) {
    note = document.createElement("div");
    note.className = "review-notice";
    p.el.welcome.after(note);
  }
  note.dataset.policy = policy;
  note.textContent = reviewNoticeText(policy);
}
