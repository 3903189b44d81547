// Nexus unreachable while a script awaits review, as the person sees it (run
// by the gateway's TestBrowserUnreachable, which stops the gateway when this
// file prints stop-now and starts it again on start-now): the status line
// says Nexus cannot be reached and stops counting; an approval given then
// waits and says so; once Nexus answers again the approval is sent, the
// script runs and the run completes.
import assert from "node:assert/strict";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { awaitingReview, env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const browser = fileBrowser();
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function tell(what, answer) {
  console.log(what);
  const { value } = await lines.next();
  assert.equal(value?.trim(), answer);
}

test("the unreachable state stops the counting, keeps the approval and sends it once Nexus is back", async () => {
  const { page, errors } = await openApp(browser.context);
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  await page.fill("#prompt", "add a box");
  await page.press("#prompt", "Enter");
  const { card } = await awaitingReview(page, WAIT);
  const status = page.locator("#status");
  await page.locator("#status", { hasText: "Awaiting your review" }).waitFor(WAIT);

  await tell("stop-now", "stopped");
  await page.locator("#status[data-kind='unreachable']").waitFor(WAIT);
  const first = await status.innerText();
  assert.match(first, /^Nexus cannot be reached since \d\d:\d\d:\d\d( [AP]M)?; trying again\. Nothing is lost: the run waits on the server\.$/);
  await page.waitForTimeout(2500);
  assert.equal(await status.innerText(), first, "the status line keeps counting while Nexus is unreachable");

  await card.locator("button.approve").click();
  await page.locator("#status", { hasText: "Your approval is sent when it is back." }).waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "unreachable-1280.png") });
  assert.equal(await page.locator(".error", { hasText: "Failed to fetch" }).count(), 0, "the approval failed to fetch");

  await tell("start-now", "started");
  await page.locator(".run.done").waitFor(WAIT);
  assert.notEqual(await status.getAttribute("data-kind"), "unreachable");
  assert.equal(await card.getAttribute("data-status"), "committed");
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "reachable-again-1280.png") });
  assert.deepEqual(errors, []);
  lines.return?.();
});
