// The per-user rate limit as a person meets it (run by the gateway's
// TestBrowserRateLimit, whose gateway lets one user a burst of 30 requests,
// refilled one per 1000 s): two pages, at 1280 and at 390 px, start up; the
// person's requests then empty the bucket (as another tab or script of
// theirs would); the prompt each page sends next is refused with the limit
// in words under the input, keeps its text, and shows no bubble and no
// spinner. The gateway test checks no session was made.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, openApp, onScreen } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const BURST = 30;
const browser = fileBrowser();

async function ready(context) {
  const { page, errors } = await openApp(context);
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor({ state: "attached", ...WAIT });
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  return { page, errors };
}

/** Spends the person's requests until the gateway refuses one, and returns that refusal. */
async function emptyBucket() {
  for (let i = 0; i <= BURST; i++) {
    const resp = await fetch(env("NEXUS_GATEWAY_URL") + "/v1/models");
    if (resp.status === 429) return { retryAfter: resp.headers.get("Retry-After"), body: await resp.json() };
    assert.equal(resp.status, 200, `GET /v1/models: ${resp.status} ${await resp.text()}`);
  }
  throw new Error(`the gateway let ${BURST + 1} requests through a burst of ${BURST}`);
}

test("a prompt over the rate limit is refused in words at 1280 and 390 px", async () => {
  const viewports = [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ];
  const pages = [];
  for (const viewport of viewports) {
    const context = await browser.newContext({ viewport });
    pages.push({ viewport, context, ...(await ready(context)) });
  }
  const refused = await emptyBucket();
  assert.equal(refused.body.limit.name, "requests_per_second");
  assert.equal(refused.body.reason, "REFUSAL_REASON_RATE_LIMITED");
  assert.ok(Number(refused.retryAfter) > 0, `Retry-After: ${refused.retryAfter}`);

  for (const { viewport, context, page, errors } of pages) {
    await page.fill("#prompt", "add a box");
    await page.press("#prompt", "Enter");
    const refusal = page.locator("#refusal");
    await refusal.waitFor({ state: "visible", ...WAIT });
    assert.equal(await refusal.innerText(), `Too many requests at once: the limit is ${BURST} in a burst. Wait a moment and run again.`);
    assert.equal(await refusal.getAttribute("data-reason"), "REFUSAL_REASON_RATE_LIMITED", "the page has the refusal's reason");
    assert.equal(await page.locator("#prompt").inputValue(), "add a box", "the prompt stays in the input");
    await page.locator("#send:not([disabled])").waitFor(WAIT);
    assert.equal(await page.locator(".run").count(), 0, "no bubble of a run that never started");
    assert.doesNotMatch(await page.locator("#status").innerText(), /Starting the run/, "nothing spins");
    const g = await onScreen(page, refusal, `the refusal at ${viewport.width} px`);
    assert.ok(g.box.y + g.box.height <= viewport.height, `the refusal is in view: ${JSON.stringify(g.box)}`);
    await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), `rate-limit-${viewport.width}.png`) });
    assert.deepEqual(errors, []);
    await context.close();
  }
});
