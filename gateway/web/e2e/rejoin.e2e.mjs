// A rejoin as the web UI does it (run by the gateway's
// TestBrowserRejoinCredentialInHeader): the page, holding an API key, opens
// a session whose run waits for its host, through a proxy that cuts the
// event stream after three events and asks for a longer retry. The page
// reads on past the cut: the run's tool call shows, with no error.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const browser = fileBrowser();

test("a dropped stream is rejoined from the last id with the key in a header", async () => {
  const key = env("NEXUS_API_KEY");
  const context = await browser.newContext();
  await context.addInitScript((k) => sessionStorage.setItem("nexus.apiKey", k), key);
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(env("NEXUS_GATEWAY_URL") + "/?session=" + encodeURIComponent(env("NEXUS_SESSION_ID")));
  // The tool call comes after the cut: it shows only if the rejoin worked.
  await page.locator(`.tool[data-tool-call-id='${env("NEXUS_TOOL_CALL_ID")}']`).waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "rejoined.png") });
  assert.equal(await page.locator(".run .error").count(), 0, "the page shows no error");
  assert.deepEqual(errors, []);
});
