import type { Page } from "./page";

// Following the stream: the transcript keeps to its end while the person is
// there; once they scroll up, a button brings them back.

function nearEnd(t: HTMLElement): boolean {
  return t.scrollTop + t.clientHeight >= t.scrollHeight - 48;
}

/** Scrolls to the end and keeps there. */
export function toEnd(p: Page): void {
  const { transcript, jumpButton } = p.el;
  transcript.scrollTop = transcript.scrollHeight;
  p.pinned = true;
  jumpButton.hidden = true;
}

/** Keeps the transcript at its end as it grows, while it is pinned. */
export function followEnd(p: Page): void {
  const { transcript, jumpButton } = p.el;
  transcript.addEventListener("scroll", () => {
    p.pinned = nearEnd(transcript);
    if (p.pinned) jumpButton.hidden = true;
  });
  const onGrow = () => {
    if (p.pinned) transcript.scrollTop = transcript.scrollHeight;
    else if (!nearEnd(transcript)) jumpButton.hidden = false;
  };
  new MutationObserver(onGrow).observe(transcript, { childList: true, subtree: true, characterData: true });
  transcript.addEventListener("load", onGrow, true);
  jumpButton.addEventListener("click", () => toEnd(p));
}
