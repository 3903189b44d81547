// A FreeCAD that died while a script ran and was restarted, as the person
// sees it (run by the gateway's TestBrowserRuntimeRestarted, which kills the
// FreeCAD process when this file prints kill-now): the script's card says in
// words that FreeCAD stopped and was restarted on the last commit and that
// nothing of the script was kept, at 1280 px live and at 390 px on the
// session's URL.
import assert from "node:assert/strict";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { env, fileBrowser, openApp, onScreen } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const browser = fileBrowser();
const SAID = "The host application stopped while this script ran and was restarted on the document as of its last commit; nothing this script did was kept.";

function nextLine() {
  const rl = createInterface({ input: process.stdin });
  return new Promise((resolve) => {
    rl.once("line", (line) => {
      rl.close();
      process.stdin.unref?.();
      resolve(line.trim());
    });
  });
}

test("a FreeCAD restarted while its script ran is said on the script's card, at 1280 and 390 px", async () => {
  const { page, errors } = await openApp(browser.context);
  await page.locator("#host-status", { hasText: "freecad 0.20" }).waitFor(WAIT);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.selectOption("#policy", "REVIEW_POLICY_NONE");
  await page.fill("#prompt", "make a slow change");
  await page.press("#prompt", "Enter");
  await page.locator(".tool[data-status='running']").waitFor(WAIT);
  console.log("kill-now");
  assert.equal(await nextLine(), "killed");
  const card = page.locator(".tool[data-tool-call-id='toolu_slow']");
  const note = card.locator(".runtime-restarted");
  await note.waitFor(WAIT);
  assert.equal(await note.innerText(), SAID);
  assert.equal(await card.getAttribute("data-status"), "rolled back");
  await page.locator(".run.done").waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "restarted-1280.png") });
  const session = new URL(page.url()).searchParams.get("session");
  assert.deepEqual(errors, []);

  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const { page: small, errors: smallErrors } = await openApp(phone, { path: `/?session=${session}`, pair: false });
  const again = small.locator(".tool[data-tool-call-id='toolu_slow'] .runtime-restarted");
  await again.waitFor(WAIT);
  await again.scrollIntoViewIfNeeded();
  await onScreen(small, again, "the restart note at 390 px");
  await small.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "restarted-390.png") });
  assert.deepEqual(smallErrors, []);
  await phone.close();
});
