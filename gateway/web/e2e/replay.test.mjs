// Reopening a session in the web UI, from the event logs the contract
// defines: every run replays in order with its prompt; a turn restarted on
// another replica (a turnRestarted metadata) loses its partial output; a
// call whose result is in the log is never offered again, and the pending one
// awaits review on the server. The server here cannot lose a replica mid-turn, so the
// session and its two run logs are served to the page as the orchestrator
// writes them; the page, its assets and everything else are the real gateway's.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser } from "./browser.mjs";

const WAIT = { timeout: 60_000 };

const browser = fileBrowser();

const meta = (kind, fields = {}) => ({ metadata: { [kind]: fields } });
const call = (id, code, extra = { resultToken: "tok-" + id }) => ({
  toolCall: { toolCallId: id, toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", execute: { code, mode: "MODE_TRANSACTION" }, ...extra },
});

// The first run finished: one call, decided. Its id comes again in the
// second run, as models reuse ids across runs (the demo model always does).
const run1 = [
  meta("runStarted", { model: "replay/demo", hostApp: "freecad", prompt: "first prompt", reviewPolicy: "REVIEW_POLICY_AUTOMATIONS" }),
  meta("turnStarted", { phase: "PHASE_INITIAL" }),
  { message: { text: "Adding a box." } },
  call("toolu_b", "box = 1\n", { review: "REVIEW_STATE_AWAITING" }),
  meta("reviewDecided", { toolCallId: "toolu_b", verdict: "REVIEW_VERDICT_APPROVE", reviewer: "dev" }),
  call("toolu_b", "box = 1\n", { review: "REVIEW_STATE_APPROVED", resultToken: "tok-1", reviewer: "dev" }),
  meta("toolResult", {
    toolCallId: "toolu_b",
    toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION",
    result: { committed: true, stdout: "made box", epilogue: { stdout: "=== CHANGE REPORT ===\n+ #Box", report: { elements: [{ change: "CHANGE_KIND_ADDED", category: "Part", name: "Box", label: "Box", properties: ["Length"] }] } } },
  }),
  meta("turnStarted", { phase: "PHASE_SUMMARY" }),
  { message: { text: "The box is there." } },
  { complete: { text: "The box is there." } },
  { usage: { model: "replay/demo", turns: 2, total: { inputTokens: "10", outputTokens: "5", costUsd: 0.001 }, final: true } },
];

// The second run is active: its first turn was cut off when its replica
// stopped and redone elsewhere; the redone turn's call awaits review.
const run2 = [
  meta("runStarted", { model: "replay/demo", hostApp: "freecad", prompt: "second prompt" }),
  meta("turnStarted", { phase: "PHASE_INITIAL" }),
  { thinking: { text: "partial thought" } },
  { message: { text: "partial prose" } },
  { toolInputDelta: { toolCallId: "toolu_cut", toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", partialJson: '{"code":"half = ' } },
  meta("turnRestarted", { text: "the turn was restarted on another replica" }),
  meta("turnStarted", { phase: "PHASE_INITIAL" }),
  { thinking: { text: "redone thought" } },
  { message: { text: "redone prose" } },
  { toolInputDelta: { toolCallId: "toolu_b", toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", partialJson: '{"code":"whole = 2\\n"}' } },
  call("toolu_b", "whole = 2\n", { review: "REVIEW_STATE_AWAITING" }),
];

function sse(runId, chunks) {
  // A long retry keeps the page from re-reading the open log while the test runs.
  let body = "retry: 600000\n\n";
  chunks.forEach((c, i) => {
    const type = Object.keys(c)[0].replace(/[A-Z]/g, (m) => "_" + m.toLowerCase());
    body += `event: ${type}\nid: ${i + 1}\ndata: ${JSON.stringify({ seq: String(i + 1), runId, sessionId: "s_logs", ...c })}\n\n`;
  });
  return body;
}

test("a reopened session replays each run, drops a restarted turn and reviews only the pending call", async () => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.route("**/v1/sessions/s_logs", (r) =>
    r.fulfill({
      contentType: "application/json",
      body: JSON.stringify({
        sessionId: "s_logs", hostApp: "freecad", runIds: ["r_1", "r_2"], activeRunId: "r_2", lastRunId: "r_2",
        pendingToolCall: { toolCallId: "toolu_b", toolName: "execute_task_automation", review: "REVIEW_STATE_AWAITING" },
      }),
    }),
  );
  await page.route("**/v1/runs/r_1/events*", (r) => r.fulfill({ contentType: "text/event-stream", body: sse("r_1", run1) }));
  await page.route("**/v1/runs/r_2/events*", (r) => r.fulfill({ contentType: "text/event-stream", body: sse("r_2", run2) }));
  const posted = [];
  await page.route("**/v1/sessions/s_logs/tool-results", (r) => {
    posted.push(r.request().postDataJSON());
    return r.fulfill({ contentType: "application/json", body: '{"accepted":true}' });
  });
  await page.route("**/v1/sessions/s_logs/tool-calls/*", (r) =>
    r.fulfill({ contentType: "application/json", body: '{"verdict":"REVIEW_VERDICT_DECLINE","reviewer":"dev"}' }),
  );

  await page.goto(env("NEXUS_GATEWAY_URL") + "/?session=s_logs#pair=" + env("NEXUS_PAIRING_SECRET"));
  const [first, second] = [page.locator(".run").nth(0), page.locator(".run").nth(1)];
  const pending = second.locator(".tool[data-tool-call-id='toolu_b'][data-status='awaiting review']");
  await pending.locator("button.decline").waitFor(WAIT);

  assert.deepEqual(await page.locator(".prompt").allInnerTexts(), ["first prompt", "second prompt"]);
  assert.ok(await first.evaluate((r) => r.classList.contains("done")));
  const done = first.locator(".tool[data-tool-call-id='toolu_b']");
  assert.equal(await done.getAttribute("data-status"), "committed");
  assert.match(await done.locator(".decided").innerText(), /Approved by dev/);
  assert.match(await done.locator("table.report tbody tr").innerText(), /added\s+Part\s+Box/);
  assert.deepEqual(await second.locator(".message").allInnerTexts(), ["redone prose"]);
  assert.deepEqual(await second.locator(".thinking-text").allTextContents(), ["redone thought"]);
  assert.equal(await second.locator(".tool[data-tool-call-id='toolu_cut']").count(), 0, "the cut-off script is gone");
  assert.match(await second.locator(".marker.restarted").innerText(), /restarted/);
  assert.match(await pending.locator("pre.script").innerText(), /whole = 2/);
  assert.equal(await page.locator(".review").count(), 1, "only the pending call awaits review");
  assert.equal(await page.locator("#send").isDisabled(), true, "the active run was rejoined");
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "ui-reopened-session.png"), fullPage: true });

  // Declining asks the server to decline the call; the page posts no result
  // (a call awaiting review has no token) and nothing reaches the host.
  const post = page.waitForRequest((r) => r.method() === "POST" && r.url().includes("/tool-calls/"), WAIT);
  await pending.locator("button.decline").click();
  const req = await post;
  assert.match(req.url(), /\/v1\/sessions\/s_logs\/tool-calls\/toolu_b:review$/);
  assert.equal(req.postDataJSON().verdict, "REVIEW_VERDICT_DECLINE");
  assert.deepEqual(posted, [], "no result was posted for a call without a token");
  assert.deepEqual(errors, []);
  await page.close();
});
