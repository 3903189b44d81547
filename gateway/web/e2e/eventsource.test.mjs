// SSE conformance in a real browser: an EventSource on the rejoin endpoint
// receives every event once and in order across a forced disconnect, and the
// stream carries keepalive comments while the run waits for its host.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { env, fileBrowser } from "./browser.mjs";

const WAIT = { timeout: 120_000, polling: 50 };

const browser = fileBrowser();

test("EventSource rejoin: every event once, in order, across a disconnect; keepalives during the tool wait", async () => {
  const gateway = env("NEXUS_GATEWAY_URL");
  const proxy = env("NEXUS_PROXY_URL");
  const runId = env("NEXUS_RUN_ID");
  const sessionId = env("NEXUS_SESSION_ID");
  const page = await browser.context.newPage();
  await page.goto(gateway + "/#pair=" + env("NEXUS_PAIRING_SECRET"));

  // The EventSource goes through the proxy that cuts its first connection;
  // a raw fetch of the same stream shows the comment frames EventSource hides.
  await page.evaluate(
    ({ proxy, runId }) => {
      const log = { events: [], errors: 0, opens: 0, raw: "", ended: false, closed: false };
      window.__sse = log;
      const es = new EventSource(`${proxy}/v1/runs/${runId}/events`);
      window.__es = es;
      es.onopen = () => log.opens++;
      for (const type of ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"]) {
        es.addEventListener(type, (ev) => {
          if (!(ev instanceof MessageEvent)) return;
          const chunk = JSON.parse(ev.data);
          log.events.push({ type, id: ev.lastEventId, seq: Number(chunk.seq), chunk });
          if (type === "complete" || type === "error") log.ended = true;
        });
      }
      // The server ends a finished run's stream; before that, an error is a
      // dropped connection that EventSource retries with Last-Event-ID.
      es.onerror = () => {
        if (log.ended) {
          es.close();
          log.closed = true;
          return;
        }
        log.errors++;
      };
      fetch(`/v1/runs/${runId}/events`).then(async (resp) => {
        const reader = resp.body.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          log.raw += dec.decode(value, { stream: true });
        }
      });
    },
    { proxy, runId },
  );

  // The run is now waiting for its host: the tool call arrived, and the raw
  // stream shows keepalive comments after it, with no event in between but
  // the notice that the call waits for a host (none is linked here).
  await page.waitForFunction(() => {
    const log = window.__sse;
    const i = log.raw.indexOf("event: tool_call");
    if (i < 0 || !log.events.some((e) => e.type === "tool_call")) return false;
    return log.raw.slice(i).split(": keepalive").length - 1 >= 2;
  }, null, WAIT);
  const waiting = await page.evaluate(() => window.__sse.raw);
  const after = waiting.slice(waiting.indexOf("event: tool_call")).split("\n\n").slice(1);
  assert.doesNotMatch(after.filter((f) => !(f.startsWith("event: metadata") && f.includes('"hostWaiting"'))).join("\n\n"), /^event: /m,
    "nothing but the host_waiting notice and keepalives while the run waits");
  await page.screenshot({ path: join(env("NEXUS_ARTIFACTS"), "eventsource-waiting.png") });

  // The host answers; the run finishes.
  const status = await page.evaluate(async (sessionId) => {
    const call = window.__sse.events.find((e) => e.type === "tool_call").chunk.toolCall;
    const resp = await fetch(`/v1/sessions/${sessionId}/tool-results`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        toolCallId: call.toolCallId,
        resultToken: call.resultToken,
        result: { committed: true, changes: { added: ["Box"] }, epilogue: { stdout: "added 1: Box (Part::Box)" } },
      }),
    });
    return resp.status;
  }, sessionId);
  assert.equal(status, 200);
  await page.waitForFunction(() => window.__sse.closed, null, WAIT);

  const log = await page.evaluate(() => window.__sse);
  await writeFile(
    join(env("NEXUS_ARTIFACTS"), "eventsource-events.json"),
    JSON.stringify(log.events.map((e) => `${e.id} ${e.type}`)),
  );
  const seqs = log.events.map((e) => e.seq);
  assert.deepEqual(seqs, seqs.map((_, i) => i + 1), `events once and in order: ${JSON.stringify(log.events)}`);
  assert.deepEqual(log.events.map((e) => e.id), seqs.map(String), "the SSE id is the seq");
  const types = log.events.map((e) => e.type);
  for (const t of ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "usage"]) {
    assert.ok(types.includes(t), `a ${t} event in ${types}`);
  }
  assert.ok(log.events.some((e) => e.type === "usage" && e.chunk.usage.final), "the final usage");
  assert.ok(log.errors >= 1, "the forced disconnect was seen");
  assert.ok(log.opens >= 2, "the EventSource reconnected");
  await page.close();
});
