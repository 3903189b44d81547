// Starts the system Chromium headless. Browsers are never downloaded:
// CHROMIUM_PATH (default /usr/bin/chromium) must exist. Each context is a
// fresh profile (its own storage), so a second context is a second person.
import { after, before } from "node:test";
import { chromium } from "playwright-core";

export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function launch({ viewport = { width: 1280, height: 860 } } = {}) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
  });
  const context = await browser.newContext({ viewport });
  return {
    browser,
    context,
    /** Another person's browser: a context with its own storage. */
    newContext: (opts = {}) => browser.newContext({ viewport, ...opts }),
    async close() {
      await browser.close();
    },
  };
}

/**
 * One browser for the tests of a file: launched before them, closed after
 * them. Its fields (context, newContext, browser) are there once they run.
 */
export function fileBrowser(opts) {
  const shared = {};
  before(async () => {
    Object.assign(shared, await launch(opts));
  });
  after(async () => {
    await shared.close?.();
  });
  return shared;
}

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through go test in gateway/`);
  return v;
}

/**
 * Opens the web UI in a new page of context (paired with the host through
 * the URL nexus dev prints, unless pair is false) and collects page errors
 * and Content-Security-Policy violations.
 */
export async function openApp(context, { path = "/", pair = true } = {}) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // A Content-Security-Policy violation is an error of the page's own use.
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) errors.push(m.text());
  });
  const secret = process.env.NEXUS_PAIRING_SECRET;
  await page.goto(env("NEXUS_GATEWAY_URL") + path + (pair && secret ? "#pair=" + secret : ""));
  return { page, errors };
}

/** Waits for the next call awaiting review and returns its id and card. */
export async function awaitingReview(page, wait = { timeout: 180_000 }) {
  const waiting = page.locator(".tool[data-status='awaiting review']").last();
  await waiting.locator("button.approve").waitFor(wait);
  const id = await waiting.getAttribute("data-tool-call-id");
  return { id, card: page.locator(`.tool[data-tool-call-id='${id}']`).last() };
}

/**
 * Where an element is on the page, and whether all of it is inside the
 * viewport's width (never needing a sideways scroll to reach it).
 */
export async function geometry(page, locator) {
  const box = await locator.boundingBox();
  const vp = page.viewportSize();
  const docWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  if (!box) return { box, vp, docWidth, inside: false };
  const inside = box.x >= 0 && box.x + box.width <= vp.width && box.width > 0 && box.height > 0;
  return { box, vp, docWidth, inside };
}

/** The host runtime nexus dev paired, as its gateway tells the pairing secret. */
export async function devHost() {
  const resp = await fetch(env("NEXUS_GATEWAY_URL") + "/v1/dev/host-pairing", {
    headers: { "X-Nexus-Pairing-Secret": env("NEXUS_PAIRING_SECRET") },
  });
  if (!resp.ok) throw new Error(`host pairing: ${resp.status} ${await resp.text()}`);
  return resp.json();
}

/** Runs a script on the paired host runtime directly (not through a run). */
export async function hostExecute(code, mode = "MODE_READ_ONLY") {
  const { hostUrl, hostToken } = await devHost();
  const resp = await fetch(hostUrl.replace(/\/+$/, "") + "/v1/execute", {
    method: "POST",
    headers: { Authorization: "Bearer " + hostToken, "Content-Type": "application/json" },
    body: JSON.stringify({ toolCallId: "e2e-" + Date.now(), mode, code }),
  });
  const body = await resp.json();
  if (!resp.ok || body.error) throw new Error(`host execute: ${resp.status} ${JSON.stringify(body.error ?? body)}`);
  return body;
}

/** Empties the host's document, so each demo starts from an empty one. */
export async function emptyDocument() {
  await hostExecute(
    "for name in [o.Name for o in doc.Objects]:\n    if doc.getObject(name) is not None:\n        doc.removeObject(name)\ndoc.recompute()\n",
    "MODE_TRANSACTION",
  );
  const left = await hostExecute("print(len(doc.Objects))");
  if (left.stdout.trim() !== "0") throw new Error(`the document still holds ${left.stdout.trim()} objects`);
}

/** Asserts an element lies on screen, inside the viewport's width, and the page never scrolls sideways. */
export async function onScreen(page, locator, what) {
  const g = await geometry(page, locator);
  if (!g.inside) throw new Error(`${what} lies outside the ${g.vp.width} px wide viewport: ${JSON.stringify(g.box)}`);
  if (g.docWidth > g.vp.width) throw new Error(`the page is ${g.docWidth} px wide in a ${g.vp.width} px viewport: it scrolls sideways`);
  return g;
}

/** The person's sessions, as the gateway lists them. */
export async function sessionIds() {
  const resp = await fetch(env("NEXUS_GATEWAY_URL") + "/v1/sessions?pageSize=100");
  if (!resp.ok) throw new Error(`list sessions: ${resp.status} ${await resp.text()}`);
  return ((await resp.json()).sessions ?? []).map((s) => s.sessionId);
}
