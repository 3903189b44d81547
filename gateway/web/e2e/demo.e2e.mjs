// The demo, end to end, in a real browser against the stack `make run` starts:
// nexus dev with the demo model (recorded turns) and the real FreeCAD runtime.
// Run by cmd/nexus's TestBrowserDemo, which starts nexus dev and sets
// NEXUS_GATEWAY_URL; the file name keeps it out of `node --test e2e/`.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { env, launch } from "./browser.mjs";

const WAIT = { timeout: 180_000 };
const PROMPT = "Build a small room: four walls on a level, with a door and a window.";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("the demo prompt builds a room on the real FreeCAD runtime", async () => {
  const artifacts = env("NEXUS_ARTIFACTS");
  await mkdir(artifacts, { recursive: true });
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // The URL nexus dev prints carries the host pairing secret in its fragment.
  await page.goto(env("NEXUS_GATEWAY_URL") + "/" + (process.env.NEXUS_PAIRING_SECRET ? "#pair=" + process.env.NEXUS_PAIRING_SECRET : ""));

  // nexus dev paired the page with its FreeCAD runtime, and the demo model is the default.
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  await page.locator("#model option[value='replay/demo']").waitFor({ state: "attached", ...WAIT });
  assert.equal(await page.locator("#model").inputValue(), "replay/demo");

  // Review mode holds each tool call until approved, so the test sees the
  // script on the page while the host has not run it yet.
  await page.check("#review");
  await page.fill("#prompt", PROMPT);
  await page.click("#send");

  for (let call = 1; call <= 3; call++) {
    const waiting = page.locator(".tool[data-status='awaiting review']");
    await waiting.waitFor(WAIT);
    const id = await waiting.getAttribute("data-tool-call-id");
    const card = page.locator(`.tool[data-tool-call-id='${id}']`);
    const script = await card.locator("pre.script").first().innerText();
    assert.ok(script.trim().length > 0, `call ${call}: the script is on the page before it runs`);
    assert.equal(await page.locator(".tool[data-status='committed']").count(), 0,
      `call ${call}: nothing committed before the person approved`);
    if (call === 2) {
      await page.screenshot({ path: join(artifacts, "demo-review.png"), fullPage: true });
    }
    await card.locator("button.approve").click();
    await page.locator(`.tool[data-tool-call-id='${id}']:not([data-status='awaiting review'])`).waitFor(WAIT);
  }

  // The mistake rolled back, the line edit committed with its change report
  // and a rendered view, and the model said what it did.
  await page.locator(".tool[data-status='committed']").waitFor(WAIT);
  await page.locator(".usage", { hasText: "out tokens" }).waitFor(WAIT);
  assert.equal(await page.locator(".tool[data-status='rolled back']").count(), 1);
  const done = page.locator(".tool[data-status='committed']");
  assert.match(await page.locator(".tool[data-status='rolled back'] .exec-error").innerText(), /NameError/);
  const report = await done.locator(".changes pre").innerText();
  assert.match(report, /=== CHANGE REPORT ===/);
  for (const kind of ["Wall", "Door", "Window"]) assert.match(report, new RegExp(kind));
  const img = done.locator(".view img");
  await img.waitFor(WAIT);
  assert.ok((await img.evaluate((i) => i.naturalWidth)) > 200, "the rendered view is a real image");
  assert.match(await page.locator(".message").last().innerText(), /room is built/);
  assert.match(await page.locator(".notice").first().innerText(), /demo/i);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(artifacts, "demo-done.png"), fullPage: true });
  await page.close();
});
