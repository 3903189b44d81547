// The first screen at 1280 and 390 px, and the drawer of a narrow screen
// (run by the gateway's TestBrowserPairingAsksFirst, whose gateway has no
// host): the drawer opens from its button and closes on Esc and on a tap
// outside it; screenshots of each land in the test's artifacts.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 60_000 };
const browser = fileBrowser();
const shot = (page, name) => page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), name) });

test("the first screen at 1280 px", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const { page, errors } = await openApp(context, { pair: false });
  await page.locator("#welcome:not([hidden])").waitFor(WAIT);
  await shot(page, "first-screen-1280.png");
  assert.deepEqual(errors, []);
  await context.close();
});

test("the drawer at 390 px closes on Esc and on a tap outside it", async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const { page, errors } = await openApp(context, { pair: false });
  await page.locator("#welcome:not([hidden])").waitFor(WAIT);
  await shot(page, "first-screen-390.png");
  const side = page.locator("#side");
  const open = async () => {
    await page.click("#menu");
    await side.waitFor({ state: "visible", ...WAIT });
    assert.equal(await page.getAttribute("#menu", "aria-expanded"), "true");
  };
  await open();
  await shot(page, "drawer-390.png");
  // A tap inside it keeps it open.
  await page.click("#side h2");
  assert.ok(await side.isVisible(), "a tap inside the drawer closed it");
  await page.keyboard.press("Escape");
  await side.waitFor({ state: "hidden", ...WAIT });
  assert.equal(await page.getAttribute("#menu", "aria-expanded"), "false");
  await open();
  const box = await side.boundingBox();
  assert.ok(box && box.x > 20, `the drawer leaves room to tap beside it: ${JSON.stringify(box)}`);
  await page.mouse.click(10, 400);
  await side.waitFor({ state: "hidden", ...WAIT });
  assert.deepEqual(errors, []);
  await context.close();
});
