// The model's prose in a real browser (run by the gateway's
// TestBrowserMarkdown): a finished run whose answer holds a table, a nested
// list, an <img onerror> and javascript: links renders the table and the list
// as such, and nothing of the rest can run.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser } from "./browser.mjs";

const WAIT = { timeout: 120_000 };
const browser = fileBrowser();

test("a table and a nested list render; an img onerror and javascript: links are inert", async () => {
  const context = await browser.newContext();
  await context.addInitScript((k) => sessionStorage.setItem("nexus.apiKey", k), env("NEXUS_API_KEY"));
  const page = await context.newPage();
  const errors = [];
  const dialogs = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(env("NEXUS_GATEWAY_URL") + "/?session=" + encodeURIComponent(env("NEXUS_SESSION_ID")));
  const msg = page.locator(".message", { hasText: "Rooms" }).last();
  await msg.locator("table").waitFor(WAIT);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "markdown.png"), fullPage: true });

  const seen = await msg.evaluate((m) => ({
    rows: [...m.querySelectorAll("table tr")].map((tr) => [...tr.children].map((c) => c.tagName + ":" + c.textContent.trim())),
    nested: [...m.querySelectorAll("ul > li > ul > li")].map((li) => li.textContent.trim()),
    imgs: m.querySelectorAll("img").length,
    handlers: [...m.querySelectorAll("*")].flatMap((el) => [...el.attributes].filter((a) => a.name.startsWith("on")).map((a) => a.name)),
    hrefs: [...m.querySelectorAll("a")].map((a) => a.getAttribute("href")),
    text: m.textContent,
  }));
  assert.deepEqual(seen.rows, [
    ["TH:Room", "TH:Area"],
    ["TD:Kitchen", "TD:12.5 m²"],
    ["TD:Hall", "TD:6 m²"],
  ]);
  assert.deepEqual(seen.nested, ["Wall A", "Wall B"]);
  assert.equal(seen.imgs, 0, "no image from the model's prose");
  assert.deepEqual(seen.handlers, []);
  assert.ok(seen.hrefs.every((h) => h === null || h.startsWith("https:")), `hrefs ${seen.hrefs}`);
  // Clicking the would-be script links runs nothing.
  for (const a of await msg.locator("a", { hasText: "click" }).all()) await a.click({ modifiers: ["Shift"] }).catch(() => undefined);
  assert.equal(await page.evaluate(() => window.__pwned ?? 0), 0, "no script of the model's ran");
  assert.deepEqual(dialogs, []);
  assert.deepEqual(errors, []);
});
