// The model picker and the sign-in prompt (issue 16): unavailable models are
// shown greyed with the reason and never chosen; a gateway that requires a
// key makes the page ask for one before anything fails, and the key entered
// there lists the models. /v1/models is served to the page as the gateway
// writes it; the page and everything else are the real gateway's.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 60_000 };

const browser = fileBrowser();

const catalog = {
  defaultModel: "openai/gpt-5",
  models: [
    { id: "openai/gpt-5", displayName: "GPT-5", vendor: "openai", available: false, note: "set OPENAI_API_KEY" },
    { id: "replay/demo", displayName: "Demo", vendor: "replay", available: true, note: "replays recorded turns" },
  ],
};

test("unavailable models are greyed with the reason, and a key is asked for when the gateway needs one", async () => {
  const context = await browser.newContext();
  let keyed = "";
  await context.route("**/v1/models", (r) => {
    const auth = r.request().headers().authorization ?? "";
    if (auth !== "Bearer k-123") {
      return r.fulfill({
        status: 401,
        contentType: "application/problem+json",
        body: JSON.stringify({
          type: "about:blank",
          title: "Unauthorized",
          status: 401,
          detail: "unauthenticated: send Authorization: Bearer <api key>",
          reason: "REFUSAL_REASON_UNAUTHENTICATED",
          code: "UNAUTHENTICATED",
        }),
      });
    }
    keyed = auth;
    return r.fulfill({ contentType: "application/json", body: JSON.stringify(catalog) });
  });
  const { page, errors } = await openApp(context);

  // Before any run: the prompt for a key, and Run off saying why.
  await page.locator("#auth:not([hidden])").waitFor(WAIT);
  assert.equal(await page.locator("#model option").count(), 0);
  assert.equal(await page.locator("#send").isDisabled(), true);
  assert.match(await page.locator("#run-reason").innerText(), /Sign in/);
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-sign-in.png") });

  await page.fill("#auth-key", "k-123");
  await page.click("#auth button[type='submit']");
  await page.locator("#auth").waitFor({ state: "hidden", ...WAIT });
  assert.equal(keyed, "Bearer k-123");

  // The default is unavailable: it is greyed with its reason, and the
  // first available model is chosen instead.
  const gpt = page.locator("#model option[value='openai/gpt-5']");
  assert.equal(await gpt.isDisabled(), true);
  assert.match(await gpt.innerText(), /unavailable: set OPENAI_API_KEY/);
  assert.equal(await page.locator("#model").inputValue(), "replay/demo");
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  assert.deepEqual(errors, []);
  await context.close();
});
