// The stream limit as a person meets it (run by the gateway's
// TestBrowserStreamLimit, whose gateway lets one user follow one run): one
// tab's run waits for review, holding the stream; another tab's prompt, at
// 1280 and at 390 px, is refused with the limit in words under the input,
// keeps its text, shows no bubble and no spinner, and leaves no session.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { awaitingReview, env, fileBrowser, openApp, onScreen, sessionIds } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const browser = fileBrowser();

async function ready(context) {
  const { page, errors } = await openApp(context);
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor({ state: "attached", ...WAIT });
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  return { page, errors };
}

test("a prompt over the stream limit is refused in words at 1280 and 390 px, and leaves no session", async () => {
  const holder = await browser.newContext();
  const { page: first, errors: firstErrors } = await ready(holder);
  await first.selectOption("#policy", "REVIEW_POLICY_EVERY_SCRIPT");
  await first.fill("#prompt", "how many objects are there?");
  await first.press("#prompt", "Enter");
  await awaitingReview(first, WAIT);

  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    const context = await browser.newContext({ viewport });
    const { page, errors } = await ready(context);
    const before = await sessionIds();
    await page.fill("#prompt", "add a box");
    await page.press("#prompt", "Enter");
    const refusal = page.locator("#refusal");
    await refusal.waitFor({ state: "visible", ...WAIT });
    assert.equal(await refusal.innerText(), "You follow a run already, the most you may at once; close another tab's run first, then run again.");
    assert.equal(await refusal.getAttribute("data-reason"), "REFUSAL_REASON_LIMIT_REACHED", "the page has the refusal's reason");
    assert.equal(await page.locator("#prompt").inputValue(), "add a box", "the prompt stays in the input");
    await page.locator("#send:not([disabled])").waitFor(WAIT);
    assert.equal(await page.locator(".run").count(), 0, "no bubble of a run that never started");
    assert.doesNotMatch(await page.locator("#status").innerText(), /Starting the run/, "nothing spins");
    const g = await onScreen(page, refusal, `the refusal at ${viewport.width} px`);
    assert.ok(g.box.y + g.box.height <= viewport.height, `the refusal is in view: ${JSON.stringify(g.box)}`);
    assert.deepEqual(await sessionIds(), before, "no session was left behind for the refused prompt");
    await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), `stream-limit-${viewport.width}.png`) });
    assert.deepEqual(errors, []);
    await context.close();
  }

  await first.click("#cancel");
  await first.locator(".run-error[data-code='ERROR_CODE_CANCELLED']").waitFor(WAIT);
  assert.deepEqual(firstErrors, []);
  await holder.close();
});
