// The download of a session's document as a person meets it (run by the
// gateway's TestBrowserDocumentHandOver, whose linked FreeCAD saves every
// commit to its file and hands it over, and whose gateway takes documents
// of at most NEXUS_MAX_DOCUMENT_BYTES): two runs, three commits. The last
// commit's file is over the limit, so Nexus did not receive it: its card
// says so in words, with no download. The second commit's card is the
// newest whose file Nexus received and offers the download; the first
// says a later change replaced its file. The same holds on the session's
// URL after a reload. The session's id and the downloaded file go to
// NEXUS_ARTIFACTS for the Go side to compare with the files on disk.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser, openApp } from "./browser.mjs";

const WAIT = { timeout: 180_000 };
const browser = fileBrowser();
const REPLACED = "The document was saved after this change; a later change replaced the file, so its download is on the latest change's card.";
const NOT_RECEIVED = /^Nexus did not receive the saved file: HTTP 413: .*NEXUS_MAX_DOCUMENT_BYTES.*\. The file on your computer holds this change\.$/s;

async function run(page, prompt, n) {
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.fill("#prompt", prompt);
  await page.press("#prompt", "Enter");
  await page.locator(".run.done").nth(n - 1).waitFor(WAIT);
}

/** The three committed cards say what Nexus holds of each one's file. */
async function checkCards(page, when) {
  const cards = page.locator(".tool[data-status='committed']");
  assert.equal(await cards.count(), 3, `${when}: three committed cards`);
  const [first, second, third] = [cards.nth(0), cards.nth(1), cards.nth(2)];
  assert.equal(await first.locator("button.download-document").isVisible(), false, `${when}: the first card offers no download`);
  assert.equal(await first.locator(".document-replaced").innerText(), REPLACED, `${when}: the first card says a later change replaced its file`);
  assert.equal(await second.locator("button.download-document").isVisible(), true, `${when}: the second card offers the download`);
  assert.equal(await second.locator(".document-replaced").isVisible(), false);
  assert.equal(await third.locator("button.download-document").count(), 0, `${when}: the third card has no download button`);
  assert.match(await third.locator(".document-note.not-received").innerText(), NOT_RECEIVED, `${when}: the third card says Nexus did not receive its file`);
  return second;
}

test("each card says what Nexus holds of its commit's file: the newest received one downloads, an older one was replaced, one over the limit was not received", async () => {
  const { page, errors } = await openApp(browser.context);
  await page.locator("#welcome .host-line", { hasText: "online" }).waitFor(WAIT);
  await page.selectOption("#policy", "REVIEW_POLICY_NONE");
  await run(page, "add two boxes", 1);
  await run(page, "add the ballast", 2);
  const session = new URL(page.url()).searchParams.get("session");
  assert.ok(session, `the page's URL names its session: ${page.url()}`);
  await writeFile(join(env("NEXUS_ARTIFACTS"), "session.txt"), session);

  const second = await checkCards(page, "live");
  // What each card says of its file, in place of (or as) the download.
  const cards = page.locator(".tool[data-status='committed']");
  for (let i = 0; i < 3; i++) {
    await cards.nth(i).locator(".document, .document-note").screenshot({ path: join(env("NEXUS_ARTIFACTS"), `card-${i + 1}.png`) });
  }
  const saving = page.waitForEvent("download", WAIT);
  await second.locator("button.download-document").click();
  const file = await saving;
  await file.saveAs(join(env("NEXUS_ARTIFACTS"), "downloaded.FCStd"));
  assert.match(file.suggestedFilename(), /\.FCStd$/);

  await page.reload();
  await page.locator(".run.done").nth(1).waitFor(WAIT);
  await checkCards(page, "after a reload");
  assert.deepEqual(errors, []);
});
