// The first screen and the refusals a person meets, in a real browser at a
// desktop and a phone width, against `make run`'s stack (nexus dev, the demo
// model, its linked FreeCAD): the empty state says what Nexus does, which host
// and document, which model and what it can do; its example prompt runs the
// demo, the document downloads, and a new session on a new document runs it
// again; a refused prompt stays in the input with its reason in words and
// leaves no session; with two linked FreeCADs the page asks which one. Run by
// cmd/nexus/systemtest's TestBrowserDemo after demo.e2e.mjs.
import assert from "node:assert/strict";
import { copyFile, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { emptyDocument, env, fileBrowser, openApp, onScreen, sessionIds } from "./browser.mjs";
import { assertJumpOffTranscript, assertOneLinkStyle, headerRows, listedWhen, placeholderFits } from "./layout.mjs";

const WAIT = { timeout: 180_000 };
const EXAMPLE = "Build a small room: four walls on a level, with a door and a window.";
const VIEWPORTS = [
  { viewport: { width: 1280, height: 900 } },
  { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true },
];

const browser = fileBrowser();

async function artifacts() {
  const dir = join(env("NEXUS_ARTIFACTS"), "first");
  await mkdir(dir, { recursive: true });
  return dir;
}

async function gateway(method, path, body) {
  const resp = await fetch(env("NEXUS_GATEWAY_URL") + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${method} ${path}: ${resp.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

/** A page of the app at a width, paired as nexus dev's URL pairs it, once it knows its model and host. */
async function open({ viewport, isMobile, hasTouch }, host = "online") {
  const context = await browser.newContext({ viewport, isMobile, hasTouch });
  const { page, errors } = await openApp(context);
  await page.locator("#model option[value='replay/demo']").waitFor({ state: "attached", ...WAIT });
  await page.locator("#welcome .host-line", { hasText: host }).waitFor(WAIT);
  return { context, page, errors };
}

for (const size of VIEWPORTS) {
  const w = size.viewport.width;
  test(`the first screen leads at ${w} px, and its example prompt runs the demo`, async () => {
    const dir = await artifacts();
    await emptyDocument();
    const { context, page, errors } = await open(size);
    const welcome = page.locator("#welcome");
    assert.match(await welcome.locator("h2").innerText(), /Nexus does the work in your design application/);
    assert.match(await welcome.locator(".what").innerText(), /inspects the document, writes a script.*waits for your review/s);
    // The host and its document, as the gateway's linked hosts say.
    const { linkedHosts } = await gateway("GET", "/v1/hosts");
    const dev = linkedHosts.find((h) => h.online);
    assert.ok(dev, `nexus dev's FreeCAD is linked and online: ${JSON.stringify(linkedHosts)}`);
    // The document is said to be one: its name alone reads like the host's.
    assert.equal(await welcome.locator(".host-line").innerText(), `FreeCAD ${dev.hostVersion} · document ${dev.document} · online`);
    // The form for a runtime that is not linked says so in plain words.
    const summary = await page.locator("#pair summary").textContent();
    assert.doesNotMatch(summary, /runtime|not linked/i, `plain words: ${summary}`);
    assert.equal(await page.locator("#session").innerText(), "new session");
    // The header takes one row on a desktop, two on a phone; the placeholder shows whole.
    assert.ok((await headerRows(page)) <= (w < 760 ? 2 : 1), `the header takes ${await headerRows(page)} rows at ${w} px`);
    const ph = await placeholderFits(page);
    assert.ok(ph.fits, `the placeholder "${ph.placeholder}" shows whole at ${w} px`);
    assert.match(await welcome.locator(".model-line").innerText(), /^Demo \(recorded turns\): .*builds a small room.*Any other request/s);
    // One example, the one prompt the demo model knows, also the placeholder.
    const examples = welcome.locator("button.example");
    assert.deepEqual(await examples.allInnerTexts(), [EXAMPLE]);
    if (w >= 760) assert.match(await page.locator("#prompt").getAttribute("placeholder"), new RegExp(`e\\.g\\. ${EXAMPLE.replace(/[.]/g, "\\.")}`));
    await onScreen(page, examples.first(), `the example prompt at ${w} px`);
    await onScreen(page, page.locator("#send"), `Run at ${w} px`);
    await page.screenshot({ path: join(dir, `first-screen-${w}.png`) });

    // One click runs it (this session unattended, so it runs to its end).
    await page.selectOption("#policy", "REVIEW_POLICY_NONE");
    await examples.first().click();
    await page.locator(".run.done").waitFor(WAIT);
    assert.equal(await welcome.isHidden(), true, "the first screen gives way to the run");
    assert.equal(await page.locator(".run .prompt").innerText(), EXAMPLE);
    assert.match(await page.locator(".run .message").last().innerText(), /room is built/);
    const done = page.locator(".tool[data-status='committed']").last();
    const kinds = await done.locator("table.report tbody tr td:nth-child(2)").allInnerTexts();
    for (const kind of ["Wall", "Door", "Window"]) assert.ok(kinds.includes(kind), `the report lists a ${kind}: ${kinds}`);
    // The header names the session by its prompt, its id on hover; the list
    // no longer calls it running once the run completed.
    const session = new URL(page.url()).searchParams.get("session");
    assert.equal(await page.locator("#session").innerText(), EXAMPLE);
    assert.equal(await page.locator("#session").getAttribute("title"), session);
    assert.equal(await page.locator("#status").innerText(), "Run completed");
    await page.locator(`#sessions a[data-session='${session}']`).waitFor({ state: "attached", ...WAIT });
    await page
      .waitForFunction((id) => !/running/.test(document.querySelector(`#sessions a[data-session='${id}'] .when`)?.textContent ?? "running"), session, { timeout: 30_000 })
      .catch(async () => assert.fail(`the list says "${await listedWhen(page, session)}" after "Run completed"`));
    assert.ok((await headerRows(page)) <= (w < 760 ? 2 : 1), `the header takes ${await headerRows(page)} rows at ${w} px with a title`);
    // The view's three links look alike; "Jump to latest" covers nothing.
    await assertOneLinkStyle(done);
    await assertJumpOffTranscript(page);
    if (w === 1280 && process.env.NEXUS_README_IMAGE) {
      // The README's picture is this run's, taken when asked for, as the run ended.
      await page.screenshot({ path: join(dir, "readme.png") });
      await copyFile(join(dir, "readme.png"), process.env.NEXUS_README_IMAGE);
    }
    // Nothing of the report table or the scripts runs off a phone's screen.
    await onScreen(page, done.locator("table.report"), `the change report at ${w} px`);
    await page.locator(".tool details").evaluateAll((ds) => ds.forEach((d) => (d.open = true)));
    const pres = await page.evaluate(() =>
      [...document.querySelectorAll(".run pre")]
        .map((p) => ({ r: p.getBoundingClientRect(), sw: p.scrollWidth, cw: p.clientWidth, cls: p.className }))
        .filter((p) => p.r.width > 0)
        .map((p) => ({ right: Math.round(p.r.right), clipped: p.sw > p.cw + 1, cls: p.cls })),
    );
    assert.ok(pres.length >= 3, `the run shows its scripts and output: ${JSON.stringify(pres)}`);
    for (const p of pres) {
      assert.ok(p.right <= w, `a code block (${p.cls}) ends at ${p.right} px in a ${w} px viewport`);
      if (w < 760) assert.equal(p.clipped, false, `a code block (${p.cls}) is clipped at ${w} px`);
    }
    await page.screenshot({ path: join(dir, `demo-done-${w}.png`) });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test(`at ${w} px the committed document downloads beside its view, and a new session on a new document builds the room again`, async () => {
    const dir = await artifacts();
    const { context, page, errors } = await open(size);
    const welcome = page.locator("#welcome");
    const examples = welcome.locator("button.example");
    // The document holds the room of the test before: on it the demo says so.
    await page.check("#new-document");
    await page.selectOption("#policy", "REVIEW_POLICY_NONE");
    await examples.first().click();
    await page.locator(".run.done").waitFor(WAIT);
    const session = new URL(page.url()).searchParams.get("session");
    assert.equal((await gateway("GET", `/v1/sessions/${session}`)).newDocument, true, "the session started on a new document");
    assert.match(await page.locator(".run .message").last().innerText(), /room is built/, "the room was built again on the new document");
    const done = page.locator(".tool[data-status='committed']").last();
    // The document as the commit saved it, next to the rendered view.
    const saving = page.waitForEvent("download", { timeout: 60_000 });
    await done.locator(".view button.download-document").click();
    const file = await saving;
    assert.match(file.suggestedFilename(), /\.FCStd$/, "the download is the FreeCAD document");
    assert.ok((await stat(await file.path())).size > 1000, "the document downloaded whole");
    await page.screenshot({ path: join(dir, `new-document-${w}.png`) });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test(`a refused prompt stays in the input, says the limit in words and leaves no session, at ${w} px`, async () => {
    const dir = await artifacts();
    const { context, page, errors } = await open(size);
    const before = await sessionIds();
    const prompt = "x".repeat(100 * 1024);
    await page.fill("#prompt", prompt);
    await page.press("#prompt", "Enter");
    const refusal = page.locator("#refusal");
    await refusal.waitFor({ state: "visible", ...WAIT });
    assert.equal(await refusal.innerText(), "The prompt is 100 KB; the limit is 64 KB. Shorten it and run again.");
    assert.equal(await page.locator("#prompt").inputValue(), prompt, "the prompt stays in the input");
    await page.locator("#send:not([disabled])").waitFor(WAIT);
    assert.equal(await page.locator(".run").count(), 0, "no bubble of a run that never started");
    assert.doesNotMatch(await page.locator("#status").innerText(), /Starting the run/, "nothing spins");
    const g = await onScreen(page, refusal, `the refusal at ${w} px`);
    assert.ok(g.box.y >= 0 && g.box.y + g.box.height <= size.viewport.height, `the refusal is in view: ${JSON.stringify(g.box)}`);
    assert.equal(new URL(page.url()).searchParams.get("session"), null, "the page shows no session");
    assert.deepEqual(await sessionIds(), before, "no session was left behind");
    await page.screenshot({ path: join(dir, `refused-${w}.png`) });

    // A word longer than the screen wraps in its bubble.
    const long = "Add" + "a".repeat(400);
    await page.selectOption("#policy", "REVIEW_POLICY_NONE");
    await page.fill("#prompt", long);
    await page.press("#prompt", "Enter");
    await page.locator(".run.done").waitFor(WAIT);
    await onScreen(page, page.locator(".run .prompt"), `the long word's bubble at ${w} px`);
    assert.equal(await refusal.isHidden(), true, "the refusal went with the next run");
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test("with two linked FreeCADs the page asks which host a new session works on, at 1280 and 390 px", async () => {
  const dir = await artifacts();
  // A second FreeCAD, paired and approved but not connected.
  const start = await gateway("POST", "/v1/host-pairings", { hostApp: "freecad", document: "Other.FCStd", hostVersion: "0.20.2", runtimeVersion: "0.1.0" });
  const second = await gateway("POST", "/v1/host-pairings:approve", { userCode: start.userCode });
  try {
    for (const size of VIEWPORTS) {
      const w = size.viewport.width;
      const { context, page, errors } = await open(size, "several linked FreeCAD hosts");
      const before = await sessionIds();
      await page.selectOption("#policy", "REVIEW_POLICY_NONE");
      await page.fill("#prompt", EXAMPLE);
      await page.press("#prompt", "Enter");
      const choice = page.locator("#host-choice");
      await choice.waitFor({ state: "visible", ...WAIT });
      assert.match(await choice.locator("p").innerText(), /You have 2 linked FreeCAD hosts\. Which one should this session work on\?/);
      const picks = choice.locator("button.pick-host");
      assert.equal(await picks.count(), 2);
      const other = choice.locator(`button[data-host-id='${second.hostId}']`);
      assert.match(await other.innerText(), /Other\.FCStd · not connected yet/);
      assert.equal(await page.locator("#prompt").inputValue(), EXAMPLE, "the prompt stays in the input");
      assert.equal(await page.locator(".run").count(), 0, "no bubble before a host is picked");
      assert.deepEqual(await sessionIds(), before, "no session before a host is picked");
      const online = choice.locator("button.pick-host", { hasText: "online" });
      await onScreen(page, online, `the online host's button at ${w} px`);
      await page.screenshot({ path: join(dir, `which-host-${w}.png`) });
      await online.click();
      await page.locator(".run.done").waitFor(WAIT);
      const session = new URL(page.url()).searchParams.get("session");
      const s = await gateway("GET", `/v1/sessions/${session}`);
      assert.notEqual(s.hostId, second.hostId, "the session works on the host picked");
      assert.ok(s.hostId, "the session is bound to a host");
      // The session's host is shown in place of the pairing form.
      await page.locator("#bound-host", { hasText: /FreeCAD 0\.20.* · online/ }).waitFor({ state: "attached", ...WAIT });
      assert.deepEqual(errors, []);
      await context.close();
    }
  } finally {
    await gateway("DELETE", `/v1/hosts/${second.hostId}`);
  }
});

test("a run started in one tab shows in another without a reload: in its session list, and live in the session it has open, at 1280 px", async () => {
  const dir = await artifacts();
  const [size] = VIEWPORTS;
  const a = await open(size);
  const b = await open(size);
  await a.page.check("#new-document");
  await a.page.selectOption("#policy", "REVIEW_POLICY_NONE");
  await a.page.locator("button.example").first().click();
  await a.page.locator(".run.done").waitFor(WAIT);
  const session = new URL(a.page.url()).searchParams.get("session");
  // The other tab lists the new session, and opens it with its run.
  const link = b.page.locator(`#sessions a[data-session='${session}']`);
  await link.waitFor(WAIT);
  await link.click();
  await b.page.locator(".run.done").waitFor(WAIT);
  assert.equal(await b.page.locator(".run").count(), 1);
  // A second run started in the first tab appears in the second, which
  // follows it to its end.
  await a.page.fill("#prompt", EXAMPLE);
  await a.page.press("#prompt", "Enter");
  await a.page.locator(".run:is(.done, .failed)").nth(1).waitFor(WAIT);
  await b.page.locator(".run:is(.done, .failed)").nth(1).waitFor(WAIT);
  assert.equal(await b.page.locator(".run").count(), 2, "the second tab shows both runs, once each");
  assert.equal(await b.page.locator("#status").innerText(), await a.page.locator("#status").innerText());
  await b.page.screenshot({ path: join(dir, "other-tab-1280.png") });
  assert.deepEqual([...a.errors, ...b.errors], []);
  await a.context.close();
  await b.context.close();
});
