// Pairing asks first (run by the gateway's TestBrowserPairingAsksFirst): a
// runtime asks for a code as the add-on does; a link ending in #approve=CODE
// opens a dialog that shows what would be linked (application and version,
// document, machine, when it asked) and links nothing until Approve is
// clicked; a code typed into the host panel does the same, at 1280 and 390 px.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, openApp, onScreen } from "./browser.mjs";

const WAIT = { timeout: 60_000 };
const browser = fileBrowser();
const base = () => env("NEXUS_GATEWAY_URL");

/** Asks for a code as a host runtime does, with no credential. */
async function startPairing(document) {
  const resp = await fetch(base() + "/v1/host-pairings", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ hostApp: "freecad", document, hostVersion: "0.20.2", runtimeVersion: "0.4.0", machine: "ada-laptop" }),
  });
  if (!resp.ok) throw new Error(`start pairing: ${resp.status} ${await resp.text()}`);
  return resp.json();
}

async function linkedDocuments() {
  const resp = await fetch(base() + "/v1/hosts");
  if (!resp.ok) throw new Error(`list hosts: ${resp.status} ${await resp.text()}`);
  return ((await resp.json()).linkedHosts ?? []).map((h) => h.document);
}

async function shows(page, facts) {
  const dialog = page.locator("#link-dialog");
  await dialog.locator("#link-approve:not([hidden])").waitFor(WAIT);
  const text = await dialog.innerText();
  for (const f of facts) assert.match(text, new RegExp(f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")), `the dialog says ${f}`);
  assert.match(text, /Asked\s+\d\d:\d\d( [AP]M)? \(just now\)/, "the dialog says when it asked");
  return dialog;
}

test("a crafted #approve= link alone links nothing; Approve links the host it showed", async () => {
  const { userCode } = await startPairing("Ada's house.FCStd");
  const context = await browser.newContext();
  const { page, errors } = await openApp(context, { path: "/#approve=" + userCode, pair: false });
  const dialog = await shows(page, ["FreeCAD 0.20.2", "Ada's house.FCStd", "ada-laptop", "0.4.0", userCode]);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "pairing-asks-1280.png") });
  assert.deepEqual(await linkedDocuments(), [], "the link alone linked a host");
  assert.doesNotMatch(page.url(), /approve=/, "the code is taken out of the address bar");

  await page.click("#link-cancel");
  await dialog.waitFor({ state: "hidden", ...WAIT });
  assert.deepEqual(await linkedDocuments(), [], "Cancel linked a host");

  // The person changes their mind: the code is still in the field.
  assert.equal(await page.locator("#link-code").inputValue(), userCode);
  await page.click("#link-form button[type=submit]");
  await shows(page, ["Ada's house.FCStd"]);
  await page.click("#link-approve");
  await page.locator("#link-status[data-ok='true']", { hasText: "Linked FreeCAD (Ada's house.FCStd)" }).waitFor(WAIT);
  assert.deepEqual(await linkedDocuments(), ["Ada's house.FCStd"]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a typed code is looked up and linked after Approve, at 390 px", async () => {
  const { userCode } = await startPairing("Shed.FCStd");
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const { page, errors } = await openApp(context, { pair: false });
  await page.click("#menu");
  const field = page.locator("#link-code");
  await onScreen(page, field, "the code field at 390 px");
  // As a person reads it off the add-on: lower case, without the dash.
  await field.fill(userCode.toLowerCase().replace("-", ""));
  await field.press("Enter");
  const dialog = await shows(page, ["FreeCAD 0.20.2", "Shed.FCStd", "ada-laptop", userCode]);
  await onScreen(page, page.locator("#link-approve"), "Approve at 390 px");
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "pairing-asks-390.png") });
  assert.ok(!(await linkedDocuments()).includes("Shed.FCStd"), "looking the code up linked the host");
  await page.click("#link-approve");
  await dialog.locator("#link-status[data-ok='true']").waitFor(WAIT);
  assert.ok((await linkedDocuments()).includes("Shed.FCStd"));

  // An unknown code says so, and offers nothing to approve.
  await page.click("#link-cancel");
  await field.fill("BCDF-XXXX");
  await field.press("Enter");
  await page.locator("#link-status[data-ok='false']", { hasText: "No host waits for code BCDF-XXXX" }).waitFor(WAIT);
  assert.ok(await page.locator("#link-approve").isHidden());
  assert.deepEqual(errors, []);
  await context.close();
});
