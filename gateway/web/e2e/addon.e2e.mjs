// The demo prompt sent from the web UI to a FreeCAD GUI that the Nexus
// add-on linked (run by cmd/nexus/systemtest's TestFreeCADAddonInTheGUI, which then
// reads the room in that GUI's document): the page binds the new session to
// the one linked FreeCAD, the run ends committed, and the page prints the
// session's id for the Go side.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 300_000 };
const browser = fileBrowser();

test("the demo prompt sent from the web UI runs on the FreeCAD the add-on linked", async () => {
  const { page, errors } = await openApp(browser.context);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.selectOption("#policy", "REVIEW_POLICY_NONE");
  await page.fill("#prompt", env("NEXUS_DEMO_PROMPT"));
  await page.press("#prompt", "Enter");
  await page.locator(".run.done").waitFor(WAIT);
  const done = page.locator(".tool[data-status='committed']").last();
  const kinds = await done.locator("table.report tbody tr td:nth-child(2)").allInnerTexts();
  for (const kind of ["Wall", "Door", "Window"]) assert.ok(kinds.includes(kind), `the report lists a ${kind}: ${kinds}`);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "web-ui.png") });
  const session = new URL(page.url()).searchParams.get("session");
  assert.ok(session, `the page's URL names its session: ${page.url()}`);
  console.log("session=" + session);
  assert.deepEqual(errors, []);
});
