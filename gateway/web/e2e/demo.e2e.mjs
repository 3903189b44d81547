// The demo, end to end, in a real browser against the stack `make run` starts:
// nexus dev with the demo model (recorded turns) and the real FreeCAD runtime,
// as a person meets it (issues 16, 19 and 23): server review, the linked host
// carrying its calls, a fix shown as a diff, the change report as
// a table, two sessions in one tab, a cancel and a decline, a second browser
// approving, a phone-sized screen and the preview policy. Run by cmd/nexus's
// TestBrowserDemo, which starts nexus dev and sets NEXUS_GATEWAY_URL; the file
// name keeps it out of `node --test e2e/`. Each test starts from an empty
// document where it needs one; screenshots go to a folder per case. The last
// case closes the tab that started a run and finds it complete in a new one.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { awaitingReview, emptyDocument, env, fileBrowser, geometry, hostExecute, openApp } from "./browser.mjs";

const WAIT = { timeout: 180_000 };
const PROMPT = "Build a small room: four walls on a level, with a door and a window.";
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

const browser = fileBrowser({ viewport: DESKTOP });

async function artifacts(name) {
  const dir = join(env("NEXUS_ARTIFACTS"), name);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Opens a paired page and waits until it knows its host and the demo model. */
async function ready(context) {
  const { page, errors } = await openApp(context);
  await page.locator("#bound-host", { hasText: "FreeCAD 0.20" }).waitFor(WAIT);
  await page.locator("#model option[value='replay/demo']").waitFor({ state: "attached", ...WAIT });
  assert.equal(await page.locator("#model").inputValue(), "replay/demo");
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  assert.equal(await page.locator("#auth").isHidden(), true, "no sign-in prompt on loopback in dev");
  return { page, errors };
}

/** Asserts an element is on screen without scrolling sideways. */
async function onScreen(page, selector, what) {
  const g = await geometry(page, page.locator(selector).first());
  assert.ok(g.inside, `${what} lies inside the ${g.vp.width} px wide viewport: ${JSON.stringify(g.box)}`);
  assert.ok(g.docWidth <= g.vp.width, `the page is ${g.docWidth} px wide in a ${g.vp.width} px viewport: it scrolls sideways`);
  return g;
}

/** A loopback port nothing listens on. */
async function closedPort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

test("the demo builds the room with server review, shows the fix as a diff, and runs again in a new session", async () => {
  const dir = await artifacts("demo");
  await emptyDocument();
  const { page, errors } = await ready(browser.context);
  // This session asks before each script that changes the document runs,
  // the failing one included.
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  // Every text the status line shows, to check what it said along the way.
  await page.evaluate(() => {
    window.__status = [];
    const line = document.getElementById("status");
    new MutationObserver(() => window.__status.push(line.textContent)).observe(line, { childList: true, characterData: true, subtree: true });
  });
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");

  // The inspection only reads: it runs without review.
  await page.locator(".tool[data-status='read-only']").waitFor(WAIT);

  // The automation waits on the server for a person, script on screen.
  const first = await awaitingReview(page, WAIT);
  assert.match(await first.card.locator("pre.script").innerText(), /Arch\.makeWall/);
  assert.equal(await page.locator(".tool[data-status='committed']").count(), 0, "nothing committed before approval");
  await page.locator("#status", { hasText: "Awaiting your review" }).waitFor(WAIT);
  const run = await onScreen(page, "#send", "the Run button");
  const approve = await onScreen(page, `.tool[data-tool-call-id='${first.id}'] button.approve`, "Approve");
  const decline = await onScreen(page, `.tool[data-tool-call-id='${first.id}'] button.decline`, "Decline");
  console.log(`1280x900: Run ${JSON.stringify(run.box)} Approve ${JSON.stringify(approve.box)} Decline ${JSON.stringify(decline.box)}`);
  await page.screenshot({ path: join(dir, "review.png") });
  await first.card.locator("button.approve").click();

  // The first script fails in FreeCAD and rolls back; the fix is shown as
  // what it changes in the failed script.
  await page.locator(`.tool[data-tool-call-id='${first.id}'][data-status='rolled back']`).waitFor(WAIT);
  assert.match(await first.card.locator(".exec-error").innerText(), /NameError/);
  const fix = await awaitingReview(page, WAIT);
  assert.notEqual(fix.id, first.id);
  const diff = fix.card.locator(".fix pre.diff");
  await diff.waitFor(WAIT);
  const added = await diff.locator(".ins").count();
  const removed = await diff.locator(".del").count();
  const lines = (await fix.card.locator("details.whole pre.script").textContent()).split("\n").length;
  assert.ok(added >= 1 && removed >= 1, `the diff marks changed lines: +${added} -${removed}`);
  assert.ok(added + removed < lines, `the diff (${added + removed} lines) is not the whole script (${lines} lines)`);
  console.log(`fix diff: +${added} -${removed} of a ${lines}-line script`);
  await page.screenshot({ path: join(dir, "fix-diff.png") });
  await fix.card.locator("button.approve").click();

  // The fix commits: the change report as a table, a large rendered view
  // that can be downloaded, and the model says what it did.
  const done = page.locator(`.tool[data-tool-call-id='${fix.id}'][data-status='committed']`);
  await done.waitFor(WAIT);
  await page.locator(".run.done").waitFor(WAIT);
  const categories = await done.locator("table.report tbody tr td:nth-child(2)").allInnerTexts();
  for (const kind of ["Wall", "Door", "Window"]) assert.ok(categories.includes(kind), `the report table lists a ${kind}: ${categories}`);
  // Each row reads as the terminal's does: the door by its type, not by
  // FreeCAD's internal name ("Window" for every Arch door), and the walls
  // by the level they are on.
  const rows = await done.locator("table.report tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const door = rows.find((r) => r[1] === "Door");
  assert.ok(door && /door/i.test(door[2]) && !rows.some((r) => r.includes("Window") && r[1] === "Door"), `the door's row names its type: ${JSON.stringify(rows)}`);
  assert.ok(rows.filter((r) => r[1] === "Wall").every((r) => r[4] !== ""), `every wall's row names its level: ${JSON.stringify(rows)}`);
  const img = done.locator(".view img").first();
  await img.waitFor(WAIT);
  assert.ok((await img.evaluate((i) => i.naturalWidth)) > 200, "the rendered view is a real image");
  const shown = await img.boundingBox();
  assert.ok(shown.width >= 600, `the view is shown large: ${shown.width} px wide`);
  assert.match(await done.locator(".view a.download").getAttribute("download"), /\.png$/);
  assert.match(await page.locator(".run .message").last().innerText(), /room is built/);
  assert.match(await page.locator(".notice").first().innerText(), /demo/i);
  await page.locator("#status", { hasText: "Run completed" }).waitFor(WAIT);
  // While it ran, the status line said what the model and the host were doing.
  const said = await page.evaluate(() => window.__status);
  for (const want of [/Model turn \d+ \(first turn\): thinking · \d+ s/, /Host running the script · \d+ s/, /Awaiting your review/, /Model turn \d+ \(fixing the script\)/]) {
    assert.ok(said.some((t) => want.test(t)), `the status line said ${want}: ${[...new Set(said)].join(" | ")}`);
  }
  await page.screenshot({ path: join(dir, "done.png"), fullPage: true });

  // A new session in the same tab: the demo's call ids repeat, and the
  // second run still completes (the document holds the room already, and the
  // demo says so).
  const firstSession = new URL(page.url()).searchParams.get("session");
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.click("#new-session");
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");
  await page.locator(".run.done").waitFor(WAIT);
  const secondSession = new URL(page.url()).searchParams.get("session");
  assert.ok(secondSession && secondSession !== firstSession, `a second session: ${firstSession} then ${secondSession}`);
  assert.equal(await page.locator(".tool[data-status='read-only']").count(), 1, "the second session's inspection ran");
  assert.match(await page.locator(".run .message").last().innerText(), /already holds/);
  // Both sessions are listed, each with its own URL.
  for (const s of [firstSession, secondSession]) {
    assert.equal(await page.locator(`#sessions a[href$='session=${s}']`).count(), 1, `session ${s} is listed`);
  }
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(dir, "second-session.png"), fullPage: true });
  await page.close();
});

test("under the default policy a failing script goes back to the model unasked, the fix's preview waits, and an edit is previewed before it commits", async () => {
  const dir = await artifacts("default-preview");
  await emptyDocument();
  const { page, errors } = await ready(browser.context);
  assert.equal(await page.locator("#policy").inputValue(), "REVIEW_POLICY_PREVIEW", "a new session previews by default");
  // Said once, before anything waits: what will wait for the person.
  assert.equal(await page.locator(".review-notice").count(), 1);
  assert.match(await page.locator(".review-notice").innerText(), /first runs as a preview.*waits for your decision.*fails goes back to the model without asking/s);
  // What the person was asked about, and what the page sent the host.
  const reviews = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && r.url().endsWith(":review")) reviews.push(r.postDataJSON());
  });
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");

  // The first script raises in its preview: it goes back to the model
  // without a review card.
  const failed = page.locator(".tool[data-status='failed in preview']").first();
  await failed.waitFor(WAIT);
  const failedId = await failed.getAttribute("data-tool-call-id");
  assert.match(await failed.locator(".exec-error").innerText(), /NameError/);
  assert.equal(await failed.locator("button.approve").count(), 0, "no review card for the failed script");

  // The fix's preview (report and view) waits for the person.
  const fix = await awaitingReview(page, WAIT);
  assert.notEqual(fix.id, failedId);
  assert.equal(reviews.length, 0, "nobody was asked about the failed script");
  const preview = fix.card.locator(".preview-part");
  await preview.locator("table.report").waitFor(WAIT);
  await preview.locator(".view img").waitFor(WAIT);
  const rows = await preview.locator("table.report tbody tr td:nth-child(2)").allInnerTexts();
  for (const kind of ["Wall", "Door", "Window"]) assert.ok(rows.includes(kind), `the preview's table lists a ${kind}: ${rows}`);
  assert.equal(await page.locator(".tool[data-status='committed']").count(), 0, "nothing committed before approval");
  await page.screenshot({ path: join(dir, "preview.png") });

  // Edit: the script in an editor, approved as edited.
  await fix.card.locator("button.edit").click();
  const area = fix.card.locator(".editor textarea");
  await area.waitFor(WAIT);
  const shown = await area.inputValue();
  assert.match(shown, /Arch\.makeWall/);
  const edited = shown.replace(/\n*$/, "\n") + 'App.ActiveDocument.addObject("Part::Box", "EditedInBrowser")\n';
  await area.fill(edited);
  await page.screenshot({ path: join(dir, "editor.png") });
  await fix.card.locator("button.approve-edited").click();
  await fix.card.locator(".edited-note").waitFor(WAIT);

  // The edit gets a preview of its own and waits again; nothing committed.
  await page.locator(`.tool[data-tool-call-id='${fix.id}'][data-status='awaiting review'] button.approve`).waitFor(WAIT);
  assert.match(await fix.card.locator("pre.script").textContent(), /EditedInBrowser/);
  assert.match(await fix.card.locator(".preview").textContent(), /added 1 × box/, "the new preview shows the edit's box");
  assert.equal(await page.locator(".tool[data-status='committed']").count(), 0, "nothing committed before the edit's own preview was decided");
  const before = await hostExecute("print(doc.getObject('EditedInBrowser') is not None)");
  assert.equal(before.stdout.trim(), "False", "the edit's preview was rolled back");
  await page.screenshot({ path: join(dir, "edit-preview.png") });
  await fix.card.locator("button.approve").click();

  const done = page.locator(`.tool[data-tool-call-id='${fix.id}'][data-status='committed']`);
  await done.waitFor(WAIT);
  await page.locator(".run.done").waitFor(WAIT);
  const after = await hostExecute("print(doc.getObject('EditedInBrowser') is not None)");
  assert.equal(after.stdout.trim(), "True", "the approved edit committed");
  assert.deepEqual(
    reviews.map((r) => [r.verdict, r.code ?? ""]),
    [["REVIEW_VERDICT_APPROVE", edited], ["REVIEW_VERDICT_APPROVE", ""]],
  );

  // The audit log: the committed bytes are exactly those of the preview
  // approved last (the edit's), marked edited, with who approved them.
  const session = new URL(page.url()).searchParams.get("session");
  const audit = await page.evaluate(async (s) => (await fetch(`/v1/sessions/${s}/dispatches?includeCode=true`)).json(), session);
  const scripts = new Map(audit.dispatches.filter((d) => d.kind === "SCRIPT_KIND_TASK_AUTOMATION").map((d) => [d.toolCallId, d]));
  const commit = scripts.get(fix.id);
  assert.ok(commit, `the audit log has the commit of ${fix.id}: ${[...scripts.keys()]}`);
  assert.equal(commit.stamp.code, edited, "the committed bytes are the edit");
  assert.equal(scripts.get(`${fix.id}.preview2`)?.stamp.code, commit.stamp.code, "the committed bytes are those of the edit's own preview");
  assert.notEqual(scripts.get(`${fix.id}.preview1`)?.stamp.code, commit.stamp.code);
  assert.equal(commit.edited, true);
  assert.ok(commit.reviewer, "the audit names who approved the edit");
  assert.equal(scripts.has(failedId), false, "the failed script never left as a commit");
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(dir, "done.png"), fullPage: true });
  await page.close();
});

// nexus dev links its own runtime, so the page only watches that host's
// calls: what its pairing form names (here a port nothing listens on) does
// not stop the run. The courier's own failures are those of a runtime that
// is not linked (cmd/nexus's review tests, through nexus run).
test("a call for the linked host is carried by that host whatever the page's pairing form names", async () => {
  const dir = await artifacts("linked-host");
  await emptyDocument();
  const context = await browser.newContext();
  const { page, errors } = await ready(context);
  await page.selectOption("#policy", "REVIEW_POLICY_EVERY_SCRIPT");
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");
  const { id, card } = await awaitingReview(page, WAIT);
  // The pairing form is folded away while the session's linked host is shown.
  assert.equal(await page.locator("#pair").getAttribute("open"), null, "the pairing form is folded");
  await page.click("#pair summary");
  await page.fill("#host-url", `http://127.0.0.1:${await closedPort()}`);
  await page.locator("#host-form button[type='submit']").click();
  await page.locator("#host-status[data-ok='false']").waitFor(WAIT);
  await card.locator("button.approve").click();
  // The inspection waited for review too; the linked host ran it.
  await page.locator(`.tool[data-tool-call-id='${id}'][data-status='read-only']`).waitFor(WAIT);
  assert.equal(await page.locator(".run-error").count(), 0, "no courier failure ends the run");
  assert.equal(await page.locator(".tool[data-status='not delivered']").count(), 0);
  await page.screenshot({ path: join(dir, "carried.png"), fullPage: true });
  await page.click("#cancel");
  await page.locator(".run-error[data-code='ERROR_CODE_CANCELLED']").waitFor(WAIT);
  assert.deepEqual(errors, []);
  await context.close();
});

test("after a cancel the demo runs again from the start, and after a decline it says nothing ran", async () => {
  const dir = await artifacts("cancel-decline");
  await emptyDocument();
  const { page, errors } = await ready(browser.context);
  await page.selectOption("#policy", "REVIEW_POLICY_AUTOMATIONS");
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");
  await awaitingReview(page, WAIT);
  await page.click("#cancel");
  const cancelled = page.locator(".run-error[data-code='ERROR_CODE_CANCELLED']");
  await cancelled.waitFor(WAIT);
  assert.match(await cancelled.innerText(), /cancel/i);
  await page.locator("#send:not([disabled])").waitFor(WAIT);
  await page.screenshot({ path: join(dir, "cancelled.png"), fullPage: true });

  // The same prompt again in the same session: the demo inspects and
  // writes the automation again (it follows the transcript, not a count).
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");
  const second = page.locator(".run").nth(1);
  await second.locator(".tool[data-status='read-only']").waitFor(WAIT);
  const again = await awaitingReview(page, WAIT);
  assert.match(await again.card.locator("pre.script").innerText(), /Arch\.makeWall/);
  await again.card.locator("button.decline").click();
  await second.locator(".tool[data-status='declined']").waitFor(WAIT);
  await page.locator(".run.done").waitFor(WAIT);
  assert.match(await second.locator(".message").last().innerText(), /declined the script/);
  assert.match(await second.locator(".decided").innerText(), /Declined/);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: join(dir, "declined.png"), fullPage: true });
  await page.close();
});

test("under the preview policy a second browser on a phone sees the preview, approves, and the first one's run commits", async () => {
  const dir = await artifacts("preview");
  await emptyDocument();
  const { page, errors } = await ready(browser.context);
  await page.selectOption("#policy", "REVIEW_POLICY_PREVIEW");
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");
  // The automation runs first as a preview, carried like any call.
  await page.locator(".tool[data-status='previewing'], .tool[data-status='previewed'], .tool[data-status='failed in preview']").first().waitFor(WAIT);
  const pending = await awaitingReview(page, WAIT);
  const preview = pending.card.locator(".preview-part");
  await preview.locator("table.report").waitFor(WAIT);
  await preview.locator(".view img").waitFor(WAIT);
  const rows = await preview.locator("table.report tbody tr td:nth-child(2)").allInnerTexts();
  for (const kind of ["Wall", "Door", "Window"]) assert.ok(rows.includes(kind), `the preview's table lists a ${kind}: ${rows}`);
  assert.ok((await preview.locator(".view img").evaluate((i) => i.naturalWidth)) > 200, "the preview's view is a real image");
  assert.equal(await page.locator(".tool[data-status='committed']").count(), 0, "nothing committed before approval");
  await page.screenshot({ path: join(dir, "desktop-preview.png") });
  const session = new URL(page.url()).searchParams.get("session");

  // Another person, on a phone, opens the session's URL without a host.
  const phone = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
  const { page: other, errors: otherErrors } = await openApp(phone, { path: `/?session=${session}`, pair: false });
  const theirs = other.locator(`.tool[data-tool-call-id='${pending.id}'][data-status='awaiting review']`);
  await theirs.locator(".preview table.report").waitFor(WAIT);
  await theirs.locator(".preview-part .view img").waitFor(WAIT);
  const send = await onScreen(other, "#send", "the Run button at 390 px");
  await theirs.locator("button.approve").scrollIntoViewIfNeeded();
  const ok = await onScreen(other, `.tool[data-tool-call-id='${pending.id}'] button.approve`, "Approve at 390 px");
  const no = await onScreen(other, `.tool[data-tool-call-id='${pending.id}'] button.decline`, "Decline at 390 px");
  console.log(`390x844: Run ${JSON.stringify(send.box)} Approve ${JSON.stringify(ok.box)} Decline ${JSON.stringify(no.box)}`);
  await other.screenshot({ path: join(dir, "phone-preview.png") });
  await theirs.locator("button.approve").click();

  // The first page carries the approved script; both see the run end.
  const done = page.locator(`.tool[data-tool-call-id='${pending.id}'][data-status='committed']`);
  await done.waitFor(WAIT);
  await page.locator(".run.done").waitFor(WAIT);
  assert.match(await done.locator(".decided").innerText(), /Approved/);
  assert.match(await page.locator(".run .message").last().innerText(), /room is built/);
  await other.locator(".run.done").waitFor(WAIT);
  assert.equal(await other.locator(`.tool[data-tool-call-id='${pending.id}']`).getAttribute("data-status"), "committed");
  await page.screenshot({ path: join(dir, "desktop-done.png"), fullPage: true });
  await other.screenshot({ path: join(dir, "phone-done.png"), fullPage: true });
  assert.deepEqual(errors, []);
  assert.deepEqual(otherErrors, []);
  await phone.close();
  await page.close();
});


test("the tab that started the demo is closed while the first script runs; the run completes; a new tab on the session's URL shows it complete", async () => {
  const dir = await artifacts("tab-closed");
  await emptyDocument();
  const context = await browser.newContext();
  const { page, errors } = await ready(context);
  await page.selectOption("#policy", "REVIEW_POLICY_NONE");
  await page.fill("#prompt", PROMPT);
  await page.press("#prompt", "Enter");
  await page.locator(".tool").first().waitFor(WAIT);
  await page.waitForURL(/[?&]session=/, WAIT);
  const session = new URL(page.url()).searchParams.get("session");
  assert.equal(await page.locator(".run.done").count(), 0, "the run had not completed when its tab closed");
  assert.deepEqual(errors, []);
  await context.close();

  // Nobody follows the run now; the linked FreeCAD carries its calls.
  const later = await browser.newContext();
  const { page: again, errors: againErrors } = await openApp(later, { path: `/?session=${session}`, pair: false });
  await again.locator(".run.done").waitFor(WAIT);
  const committed = again.locator(".tool[data-status='committed']").last();
  await committed.waitFor(WAIT);
  const kinds = await committed.locator("table.report tbody tr td:nth-child(2)").allInnerTexts();
  for (const kind of ["Wall", "Door", "Window"]) assert.ok(kinds.includes(kind), `the report table lists a ${kind}: ${kinds}`);
  assert.match(await again.locator(".run .message").last().innerText(), /room is built/);
  const doc = await hostExecute("import Draft\nkinds = [Draft.getType(o) for o in doc.Objects]\nprint(kinds.count('Wall'), kinds.count('Window') + kinds.count('Door'))");
  assert.equal(doc.stdout.trim(), "4 2", "the room's walls, door and window are in the document once");
  await again.screenshot({ path: join(dir, "complete.png"), fullPage: true });
  assert.deepEqual(againErrors, []);
  await later.close();
});
