// The web UI end to end: a prompt runs, the script appears as it is typed,
// the tool call is carried to the paired host runtime, and the change report,
// the rendered view, the answer and the usage are shown.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { awaitingReview, env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 120_000 };

const browser = fileBrowser();

test("the UI runs a prompt and relays its tool call to the host runtime", async () => {
  const { page, errors } = await openApp(browser.context);

  // Pairing comes from the gateway (nexus dev), and the host answers /v1/info.
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  const model = env("NEXUS_DEFAULT_MODEL");
  await page.locator(`#model option[value='${model}']`).waitFor({ state: "attached", ...WAIT });
  assert.equal(await page.locator("#model").inputValue(), model);

  // Nothing awaits review in this session: the page carries the call itself.
  await page.selectOption("#policy", "REVIEW_POLICY_NONE");
  await page.fill("#prompt", "add a 20 mm box");
  await page.press("#prompt", "Enter");

  const card = page.locator(".tool");
  await card.locator(".status", { hasText: "committed" }).waitFor(WAIT);
  await page.locator(".usage", { hasText: "out tokens" }).waitFor(WAIT);

  assert.match(await page.locator(".prompt").innerText(), /add a 20 mm box/);
  assert.equal(await page.locator("details.thinking").count(), 1);
  assert.match(await card.locator("pre.script").innerText(), /doc\.addObject\("Part::Box", "Box"\)/);
  assert.equal(await card.locator("pre.script .tok-keyword", { hasText: "import" }).count(), 1);
  // The change report from its data (a box is a construction helper, so it
  // is counted, not listed), its text one click away.
  const changes = card.locator(".changes");
  await changes.waitFor(WAIT);
  assert.match(await changes.locator(".report-data .helpers").innerText(), /added 1 × box/, await changes.innerHTML());
  assert.match(await card.locator(".changes details.raw pre").textContent(), /Construction helpers: 1 added \(1 box\)/);
  const img = card.locator(".view img");
  await img.waitFor(WAIT);
  assert.ok((await img.evaluate((i) => i.naturalWidth)) > 200, "the runtime rendered a real view");
  assert.equal(await page.locator(".message strong").last().innerText(), "one box");
  assert.match(await page.locator(".usage").innerText(), /2 turns · \d+ in \/ \d+ out tokens/);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-run.png"), fullPage: true });
  await page.close();
});

test("a script declined on review never reaches the host", async () => {
  const { page } = await openApp(browser.context);
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  // New sessions preview the scripts that change the document; this one
  // asks before they run.
  assert.equal(await page.locator("#policy").inputValue(), "REVIEW_POLICY_PREVIEW");
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  await page.fill("#prompt", "add another box");
  await page.click("#send");

  const { card } = await awaitingReview(page, WAIT);
  assert.match(await card.locator("pre.script").innerText(), /Part::Box/);
  const review = page.waitForRequest((r) => r.method() === "POST" && r.url().includes("/tool-calls/") && r.url().endsWith(":review"), WAIT);
  await card.locator("button.decline").click();
  assert.equal((await review).postDataJSON().verdict, "REVIEW_VERDICT_DECLINE");
  await card.locator(".status", { hasText: "declined" }).waitFor(WAIT);
  await page.locator(".run.done").last().waitFor(WAIT);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-review-declined.png"), fullPage: true });
  await page.close();
});

test("cancel stops a run that waits for review", async () => {
  const { page } = await openApp(browser.context);
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  await page.fill("#prompt", "add a third box");
  await page.click("#send");

  const run = page.locator(".run").last();
  await run.locator(".tool .status", { hasText: "awaiting review" }).waitFor(WAIT);
  await page.click("#cancel");
  await run.locator(".run-error").waitFor(WAIT);
  assert.equal(await run.locator(".run-error").getAttribute("data-code"), "ERROR_CODE_CANCELLED");
  assert.match(await run.locator(".run-error").innerText(), /cancel/i);
  // The ended run offers nothing more to run.
  assert.equal(await run.locator(".review").count(), 0);
  assert.equal(await run.locator(".tool").getAttribute("data-status"), "no result");
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-cancelled.png"), fullPage: true });
  await page.close();
});
