// A restart of nexus dev while the demo awaits review: the session, its
// history and the suspended run live in the SQLite file, so the page reloaded
// on the session's URL shows what it showed before, and approving the pending
// call completes the run on the new process. Run by cmd/nexus/systemtest's
// TestBrowserRestart, which restarts nexus dev when this file prints
// "restart-now <session>" and answers with the new pairing secret on stdin;
// the file name keeps it out of `node --test e2e/`.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { awaitingReview, env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 180_000 };
const PROMPT = "Build a small room: four walls on a level, with a door and a window.";

const browser = fileBrowser();

/** Reads one line from the test that drives this file. */
function nextLine() {
  const rl = createInterface({ input: process.stdin });
  return new Promise((resolve) => {
    rl.once("line", (line) => {
      rl.close();
      // Nothing more is read: stdin must not keep the process alive.
      process.stdin.unref?.();
      resolve(line.trim());
    });
  });
}

async function history(page) {
  return {
    prompts: await page.locator(".prompt").allInnerTexts(),
    messages: await page.locator(".message").allInnerTexts(),
    cards: await page.locator(".tool").evaluateAll((cards) =>
      cards.map((c) => ({ id: c.dataset.toolCallId, status: c.dataset.status, script: c.querySelector("pre.script")?.textContent ?? "" })),
    ),
  };
}

test("a restart of nexus dev while the demo awaits review keeps the session and the run", async () => {
  const artifacts = env("NEXUS_ARTIFACTS");
  await mkdir(artifacts, { recursive: true });
  const { page, errors } = await openApp(browser.context);
  await page.locator("#bound-host", { hasText: "FreeCAD 0.20" }).waitFor(WAIT);
  await page.locator("#model option[value='replay/demo']").waitFor({ state: "attached", ...WAIT });
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  await page.fill("#prompt", PROMPT);
  await page.click("#send");
  await page.locator(".tool[data-status='read-only']").first().waitFor(WAIT);
  const pending = await awaitingReview(page);
  const session = new URL(page.url()).searchParams.get("session");
  assert.ok(session, `the page's URL names the session: ${page.url()}`);
  const before = await history(page);
  await page.screenshot({ path: join(artifacts, "restart-before.png"), fullPage: true });

  console.log(`restart-now ${session}`);
  const secret = await nextLine();
  assert.ok(secret, "the test answered with the new pairing secret");

  // The session's URL, paired with the new process's host runtime, loaded
  // afresh (only the fragment differs from the page's URL, which alone
  // would not reload it).
  await page.goto("about:blank");
  await page.goto(`${env("NEXUS_GATEWAY_URL")}/?session=${encodeURIComponent(session)}#pair=${secret}`);
  await page.locator(`.tool[data-tool-call-id='${pending.id}'][data-status='awaiting review'] button.approve`).waitFor(WAIT);
  const after = await history(page);
  assert.deepEqual(after.prompts, before.prompts, "the prompt, once");
  assert.deepEqual(after.messages, before.messages, "the prose shown before the restart");
  assert.deepEqual(after.cards, before.cards, "the same calls, scripts and statuses");
  assert.equal(await page.locator(`#sessions a[href$='session=${session}']`).count(), 1, "the session is listed");
  await page.screenshot({ path: join(artifacts, "restart-after.png"), fullPage: true });

  // Approving carries the pending call on the new process; the run ends.
  await page.locator(`.tool[data-tool-call-id='${pending.id}'] button.approve`).click();
  await page.locator(`.tool[data-tool-call-id='${pending.id}'][data-status='rolled back']`).waitFor(WAIT);
  const fix = await awaitingReview(page);
  await fix.card.locator("button.approve").click();
  await page.locator(`.tool[data-tool-call-id='${fix.id}'][data-status='committed']`).waitFor(WAIT);
  await page.locator(".run.done").waitFor(WAIT);
  assert.match(await page.locator(".message").last().innerText(), /room is built/);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(artifacts, "restart-done.png"), fullPage: true });
  await page.close();
});
