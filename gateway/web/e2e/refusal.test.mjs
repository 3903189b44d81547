// A prompt the gateway refuses (over NEXUS_MAX_PROMPT_BYTES) at a desktop and
// a phone width: the reason is said in words under the input and on screen,
// the prompt stays in the input, no bubble is left, nothing spins, and no
// session is left behind for it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, geometry, openApp, sessionIds } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const browser = fileBrowser();

for (const viewport of [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
]) {
  test(`a refused prompt stays in the input with its reason at ${viewport.width} px`, async () => {
    const context = await browser.newContext({ viewport });
    const { page, errors } = await openApp(context);
    // On a phone the host status sits in the closed menu: attached, not shown.
    await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor({ state: "attached", ...WAIT });
    await page.locator("#send:not([disabled])").waitFor(WAIT);
    const before = await sessionIds();
    const prompt = "x".repeat(100 * 1024);
    await page.fill("#prompt", prompt);
    await page.press("#prompt", "Enter");
    const refusal = page.locator("#refusal");
    await refusal.waitFor({ state: "visible", ...WAIT });
    assert.equal(await refusal.innerText(), "The prompt is 100 KB; the limit is 64 KB. Shorten it and run again.");
    assert.equal(await page.locator("#prompt").inputValue(), prompt, "the prompt stays in the input");
    assert.equal(await page.locator(".run").count(), 0, "no bubble of a run that never started");
    await page.locator("#send:not([disabled])").waitFor(WAIT);
    assert.doesNotMatch(await page.locator("#status").innerText(), /Starting the run/, "nothing spins");
    const g = await geometry(page, refusal);
    assert.ok(g.inside && g.box.y >= 0 && g.box.y + g.box.height <= viewport.height, `the reason is on screen: ${JSON.stringify(g.box)}`);
    assert.ok(g.docWidth <= viewport.width, `the page is ${g.docWidth} px wide: it scrolls sideways`);
    assert.deepEqual(await sessionIds(), before, "no session was left behind for the refused prompt");
    assert.equal(new URL(page.url()).searchParams.get("session"), null, "the page shows no session");
    await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), `refused-prompt-${viewport.width}.png`) });
    assert.deepEqual(errors, []);
    await context.close();
  });
}
