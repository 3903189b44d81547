// The demo survives a reload: the page is reloaded while the demo run's
// automation awaits review; the reloaded page replays the session from the
// run's event log (the prompt, the thinking, the prose, the read-only call and
// its result), shows the pending review again, and approving it finishes the
// run on the real FreeCAD runtime. Run by gateway's TestBrowserReloadDemo,
// which starts nexus dev and checks the document afterwards; the file name
// keeps it out of `node --test e2e/`.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { awaitingReview, env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 180_000 };
const PROMPT = "Build a small room: four walls on a level, with a door and a window.";

const browser = fileBrowser();

/** What the page shows of the run, to compare before and after a reload. */
async function snapshot(page) {
  return {
    prompts: await page.locator(".prompt").allInnerTexts(),
    thinking: await page.locator("details.thinking .thinking-text").allTextContents(),
    messages: await page.locator(".message").allInnerTexts(),
    cards: await page.locator(".tool").evaluateAll((cards) =>
      cards.map((c) => ({
        id: c.dataset.toolCallId,
        status: c.dataset.status,
        script: c.querySelector("pre.script")?.textContent ?? "",
        stdout: c.querySelector("pre.stdout")?.textContent ?? "",
      })),
    ),
  };
}

test("a reload while the demo awaits review keeps the session and the run", async () => {
  const artifacts = env("NEXUS_ARTIFACTS");
  await mkdir(artifacts, { recursive: true });
  // The URL nexus dev prints carries the host pairing secret in its fragment.
  const { page, errors } = await openApp(browser.context);
  await page.locator("#bound-host", { hasText: "FreeCAD 0.20" }).waitFor(WAIT);
  await page.locator("#model option[value='replay/demo']").waitFor({ state: "attached", ...WAIT });
  assert.equal(await page.locator("#model").inputValue(), "replay/demo");

  // New sessions preview the scripts that change the document; this one
  // asks before each runs, so the failing script waits too.
  assert.equal(await page.locator("#policy").inputValue(), "REVIEW_POLICY_PREVIEW");
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  await page.fill("#prompt", PROMPT);
  await page.click("#send");

  // The first call only reads the document: it runs without review.
  const first = page.locator(".tool[data-status='read-only']").first();
  await first.waitFor(WAIT);

  // The second call builds the room; reload while it awaits review.
  const second = await awaitingReview(page);
  assert.notEqual(second.id, await first.getAttribute("data-tool-call-id"));
  const sessionParam = new URL(page.url()).searchParams.get("session");
  assert.ok(sessionParam, `the page's URL names the session: ${page.url()}`);
  const before = await snapshot(page);
  assert.deepEqual(before.prompts, [PROMPT]);
  assert.ok(before.thinking.length >= 2 && before.messages.length >= 2, "thinking and prose of two turns were shown");
  assert.match(before.cards[0].stdout, /Document .*: \d+ objects/);
  assert.match(before.cards[1].script, /Arch\.makeWall/);
  await page.screenshot({ path: join(artifacts, "reload-before.png"), fullPage: true });

  await page.reload();

  // The reloaded page replays the session from the run's log and rejoins it.
  await page.locator(`.tool[data-tool-call-id='${second.id}'][data-status='awaiting review'] button.approve`).waitFor(WAIT);
  assert.equal(new URL(page.url()).searchParams.get("session"), sessionParam);
  const after = await snapshot(page);
  assert.deepEqual(after.prompts, [PROMPT], "the prompt, once");
  assert.deepEqual(after.thinking, before.thinking, "the thinking shown before the reload");
  assert.deepEqual(after.messages, before.messages, "the prose shown before the reload");
  assert.deepEqual(after.cards, before.cards, "the same calls, scripts, statuses and results");
  // The decided call is not offered again, and nothing has run yet.
  assert.equal(await page.locator(".review").count(), 1, "one review: the pending call's");
  assert.equal(await page.locator(".tool[data-status='committed']").count(), 0);
  assert.equal(await page.locator("#send").isDisabled(), true, "the rejoined run is active");
  await page.screenshot({ path: join(artifacts, "reload-after.png"), fullPage: true });

  // Approving carries the pending call to FreeCAD; the run goes on as before.
  await page.locator(`.tool[data-tool-call-id='${second.id}'] button.approve`).click();
  await page.locator(`.tool[data-tool-call-id='${second.id}'][data-status='rolled back']`).waitFor(WAIT);
  assert.match(await page.locator(`.tool[data-tool-call-id='${second.id}'] .exec-error`).innerText(), /NameError/);
  const third = await awaitingReview(page);
  await third.card.locator("button.approve").click();
  await page.locator(".run.done").waitFor(WAIT);
  const done = page.locator(`.tool[data-tool-call-id='${third.id}'][data-status='committed']`);
  await done.waitFor(WAIT);
  const report = await done.locator(".changes table.report").innerText();
  for (const kind of ["Wall", "Door", "Window"]) assert.match(report, new RegExp(kind));
  assert.match(await page.locator(".message").last().innerText(), /room is built/);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.screenshot({ path: join(artifacts, "reload-done.png"), fullPage: true });

  // A second run in the same session (the demo model answers anything else
  // with a note), then reopening the session replays both runs in order,
  // whole, and carries nothing.
  await page.fill("#prompt", "What did you build?");
  await page.click("#send");
  await page.locator(".run.done").nth(1).waitFor(WAIT);
  const messages = await page.locator(".message").allInnerTexts();
  await page.reload();
  await page.locator(".run.done").nth(1).waitFor(WAIT);
  assert.deepEqual(await page.locator(".prompt").allInnerTexts(), [PROMPT, "What did you build?"]);
  assert.deepEqual(await page.locator(".message").allInnerTexts(), messages);
  assert.deepEqual(
    await page.locator(".tool").evaluateAll((cards) => cards.map((c) => c.dataset.status)),
    ["read-only", "rolled back", "committed"],
  );
  assert.equal(await page.locator(".review").count(), 0);
  assert.match(await page.locator(".run").first().locator(".message").last().innerText(), /room is built/);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(artifacts, "reload-reopened.png"), fullPage: true });
  await page.close();
});
