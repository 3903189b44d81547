// Clickjacking (run by the gateway's TestBrowserFraming): a page of another
// origin that frames the web UI shows nothing of it, so no click there can
// reach Approve; and the UI's own Content-Security-Policy costs its own use
// nothing (no console violation while it loads, starts a session and runs a
// prompt whose answer is Markdown), and the credentials a person enters are
// kept for the tab, never in localStorage.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { devHost, env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 60_000 };
const browser = fileBrowser();

test("a page of another origin that frames the UI gets a refused frame, nothing clickable", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const console_ = [];
  page.on("console", (m) => console_.push(m.text()));
  const target = env("NEXUS_GATEWAY_URL") + "/?session=s-framed";
  await page.goto(env("NEXUS_FRAMER_URL") + "/?target=" + encodeURIComponent(target));
  const frameEl = page.locator("iframe#victim");
  await frameEl.waitFor({ state: "attached", ...WAIT });
  // The frame has finished with whatever it was going to show.
  await page.waitForFunction(() => window.frameLoaded === true, null, WAIT);
  const frame = page.frames().find((f) => f !== page.mainFrame());
  assert.ok(frame, "the framing page has its frame");
  assert.notEqual(new URL(frame.url()).origin, new URL(env("NEXUS_GATEWAY_URL")).origin, `the frame shows ${frame.url()}, not the UI`);
  for (const selector of ["#send", "#new-session", "#prompt", "button"]) {
    assert.equal(await frame.locator(selector).count(), 0, `the refused frame holds no ${selector}`);
  }
  assert.ok(
    console_.some((t) => /frame-ancestors 'none'|X-Frame-Options/.test(t)),
    `the browser says why it refused the frame: ${JSON.stringify(console_)}`,
  );
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "framed.png") });
  await context.close();
});

test("the UI's own use meets no Content-Security-Policy violation", async () => {
  const context = await browser.newContext();
  const { page, errors } = await openApp(context);
  await page.locator("#host-status", { hasText: "freecad" }).waitFor({ state: "attached", ...WAIT });
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.click("#new-session");
  await page.fill("#prompt", "say hello");
  await page.press("#prompt", "Enter");
  await page.locator(".run strong", { hasText: "hello" }).first().waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "csp-own-use.png") });

  // The credentials a person enters are kept for the tab, never in localStorage.
  const { hostToken } = await devHost();
  await page.fill("#host-token", hostToken);
  await page.click("#host-form button[type='submit']");
  await page.locator("#host-status", { hasText: "freecad" }).waitFor({ state: "attached", ...WAIT });
  await page.fill("#api-key", "k-kept-for-the-tab");
  await page.dispatchEvent("#api-key", "change");
  const stored = await page.evaluate(() => ({
    local: Object.entries(localStorage),
    session: Object.fromEntries(Object.entries(sessionStorage)),
  }));
  for (const [k, v] of stored.local) {
    assert.ok(![hostToken, "k-kept-for-the-tab"].includes(v), `localStorage holds a credential under ${k}`);
  }
  assert.equal(stored.session["nexus.hostToken"], hostToken, "the pairing token is kept for the tab");
  assert.equal(stored.session["nexus.apiKey"], "k-kept-for-the-tab", "the API key is kept for the tab");
  assert.deepEqual(errors, []);
  await context.close();
});
