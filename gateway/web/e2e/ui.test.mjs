// The web UI end to end: a prompt runs, the script appears as it is typed,
// the tool call is carried to the paired host runtime, and the change report,
// the rendered view, the answer and the usage are shown.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { env, launch } from "./browser.mjs";

const WAIT = { timeout: 120_000 };

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("the UI runs a prompt and relays its tool call to the host runtime", async () => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(env("NEXUS_GATEWAY_URL") + "/#pair=" + env("NEXUS_PAIRING_SECRET"));

  // Pairing comes from the gateway (nexus dev), and the host answers /v1/info.
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  const model = env("NEXUS_DEFAULT_MODEL");
  await page.locator(`#model option[value='${model}']`).waitFor({ state: "attached", ...WAIT });
  assert.equal(await page.locator("#model").inputValue(), model);

  await page.fill("#prompt", "add a 20 mm box");
  await page.click("#send");

  const card = page.locator(".tool");
  await card.locator(".status", { hasText: "committed" }).waitFor(WAIT);
  await page.locator(".usage", { hasText: "out tokens" }).waitFor(WAIT);

  assert.match(await page.locator(".prompt").innerText(), /add a 20 mm box/);
  assert.equal(await page.locator("details.thinking").count(), 1);
  assert.match(await card.locator("pre.script").innerText(), /doc\.addObject\("Part::Box", "Box"\)/);
  assert.equal(await card.locator("pre.script .tok-keyword", { hasText: "import" }).count(), 1);
  assert.match(await card.locator(".changes").innerText(), /\+ #Box {2}Part {2}Part::Box/);
  const img = card.locator(".view img");
  await img.waitFor(WAIT);
  assert.ok((await img.evaluate((i) => i.naturalWidth)) > 200, "the runtime rendered a real view");
  assert.equal(await page.locator(".message strong").last().innerText(), "one box");
  assert.match(await page.locator(".usage").innerText(), /2 turns · \d+ in \/ \d+ out tokens/);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-run.png"), fullPage: true });
  await page.close();
});

test("in review mode a declined script never reaches the host", async () => {
  const page = await browser.context.newPage();
  await page.goto(env("NEXUS_GATEWAY_URL") + "/#pair=" + env("NEXUS_PAIRING_SECRET"));
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  await page.check("#review");
  await page.fill("#prompt", "add another box");
  await page.click("#send");

  const card = page.locator(".run").last().locator(".tool");
  await card.locator(".status", { hasText: "awaiting review" }).waitFor(WAIT);
  assert.match(await card.locator("pre.script").innerText(), /Part::Box/);
  await card.locator("button.decline").click();
  await card.locator(".status", { hasText: "declined" }).waitFor(WAIT);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-review-declined.png"), fullPage: true });
  await page.close();
});

test("cancel stops a run that waits for review", async () => {
  const page = await browser.context.newPage();
  await page.goto(env("NEXUS_GATEWAY_URL") + "/#pair=" + env("NEXUS_PAIRING_SECRET"));
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  await page.check("#review");
  await page.fill("#prompt", "add a third box");
  await page.click("#send");

  const run = page.locator(".run").last();
  await run.locator(".tool .status", { hasText: "awaiting review" }).waitFor(WAIT);
  await page.click("#cancel");
  await run.locator(".error").waitFor(WAIT);
  assert.match(await run.locator(".error").innerText(), /cancel/i);
  // The ended run offers nothing more to run.
  assert.equal(await run.locator(".review").count(), 0);
  assert.equal(await run.locator(".tool").getAttribute("data-status"), "no result");
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-cancelled.png"), fullPage: true });
  await page.close();
});
