// Checks of the page's layout and words shared by the e2e files: the header's
// rows, a placeholder shown whole, one style for the view's links, the
// "Jump to latest" button kept off the transcript, and the session list's
// words for a session.
import assert from "node:assert/strict";

/** How many rows the header's visible parts take. */
export async function headerRows(page) {
  return page.evaluate(() => {
    const tops = [...document.querySelectorAll("header > *")]
      .map((e) => e.getBoundingClientRect())
      .filter((r) => r.width > 0 && r.height > 0)
      .map((r) => Math.round(r.top + r.height / 2));
    // Parts whose middles lie within 12 px share a row.
    const rows = [];
    for (const t of tops.sort((a, b) => a - b)) if (!rows.length || t - rows[rows.length - 1] > 12) rows.push(t);
    return rows.length;
  });
}

/** Whether the prompt's placeholder fits its box whole (measured as if typed). */
export async function placeholderFits(page) {
  return page.evaluate(() => {
    const t = document.getElementById("prompt");
    const kept = t.value;
    t.value = t.placeholder;
    const fits = t.scrollHeight <= t.clientHeight + 1 && t.scrollWidth <= t.clientWidth + 1;
    t.value = kept;
    return { fits, placeholder: t.placeholder };
  });
}

/** Asserts the view's Full size, its Download and the document's download look alike. */
export async function assertOneLinkStyle(card) {
  const styles = await card.evaluate((c) => {
    const pick = (sel) => {
      const e = c.querySelector(sel);
      if (!e) return null;
      const s = getComputedStyle(e);
      return {
        font: `${s.fontSize} ${s.fontWeight}`,
        color: s.color,
        background: s.backgroundColor,
        border: `${s.borderTopWidth} ${s.borderTopStyle} ${s.borderTopColor}`,
        radius: s.borderTopLeftRadius,
        padding: `${s.paddingTop} ${s.paddingLeft}`,
        decoration: s.textDecorationLine,
      };
    };
    return { full: pick(".view .open-large"), view: pick(".view a.download"), doc: pick(".view .download-document") };
  });
  for (const [k, v] of Object.entries(styles)) assert.ok(v, `the view's ${k} link is shown: ${JSON.stringify(styles)}`);
  assert.deepEqual(styles.view, styles.full, "the view's Download looks like Full size");
  assert.deepEqual(styles.doc, styles.full, "the document's download looks like Full size");
}

/** Asserts "Jump to latest", once shown, lies outside the transcript (so over no review button) and above the composer. */
export async function assertJumpOffTranscript(page) {
  const boxes = await page.evaluate(() => {
    const jump = document.getElementById("jump");
    jump.hidden = false;
    const r = (id) => {
      const b = document.getElementById(id).getBoundingClientRect();
      return { top: Math.round(b.top), bottom: Math.round(b.bottom), height: Math.round(b.height) };
    };
    const out = { jump: r("jump"), transcript: r("transcript"), composer: r("composer") };
    jump.hidden = true;
    return out;
  });
  assert.ok(boxes.jump.height > 0, `the button shows: ${JSON.stringify(boxes)}`);
  assert.ok(boxes.jump.top >= boxes.transcript.bottom, `the button lies below the transcript, over none of it: ${JSON.stringify(boxes)}`);
  assert.ok(boxes.jump.bottom <= boxes.composer.top, `the button lies above the composer: ${JSON.stringify(boxes)}`);
}

/** The words the session list shows under a session's title ("" when it is not listed). */
export async function listedWhen(page, session) {
  const a = page.locator(`#sessions a[data-session='${session}'] .when`);
  return (await a.count()) ? a.innerText() : "";
}
