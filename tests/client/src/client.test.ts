// A client author's view of Nexus: types generated from the gateway's
// /openapi.json by openapi-typescript, calls made with openapi-fetch, event
// streams read with eventsource-parser. It streams the demo run (carrying
// its scripts to the FreeCAD runtime nexus dev paired, as the web UI does),
// reads a 404 and a 409 error body, and resumes the stream after an event id.
// cmd/nexus/systemtest/client_test.go generates the types, type-checks and runs this.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { createParser, type EventSourceMessage } from "eventsource-parser";
import createClient from "openapi-fetch";

import type { components, paths } from "../generated/nexus.js";

type Schemas = components["schemas"];

// The data schema of each SSE event type the document lists. A type the
// document did not have would not compile.
type EventData = {
  metadata: Schemas["MetadataEvent"];
  thinking: Schemas["ThinkingEvent"];
  message: Schemas["MessageEvent"];
  tool_input_delta: Schemas["ToolInputDeltaEvent"];
  tool_call: Schemas["ToolCallEvent"];
  complete: Schemas["CompleteEvent"];
  error: Schemas["ErrorEvent"];
  usage: Schemas["UsageEvent"];
};
type EventName = keyof EventData;
const eventNames: EventName[] = ["metadata", "thinking", "message", "tool_input_delta", "tool_call", "complete", "error", "usage"];

type Frame = { [K in EventName]: { event: K; id: number | undefined; data: EventData[K] } }[EventName];

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run this through go test -run TestGeneratedClient ./cmd/nexus/systemtest/`);
  return v;
}

const base = env("NEXUS_GATEWAY_URL");
const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${env("NEXUS_API_KEY")}` } });

// frames reads a text/event-stream body to its end with eventsource-parser,
// handing each frame to onFrame, which may wait (to carry a script).
async function frames(body: ReadableStream<Uint8Array>, onFrame: (f: Frame) => Promise<void>): Promise<void> {
  const queue: Frame[] = [];
  const parser = createParser({
    onEvent(ev: EventSourceMessage) {
      assert.ok(eventNames.includes(ev.event as EventName), `event type ${ev.event} is not in the document`);
      const data = JSON.parse(ev.data) as EventData[EventName];
      queue.push({ event: ev.event, id: ev.id === undefined ? undefined : Number(ev.id), data } as Frame);
    },
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
    while (queue.length > 0) await onFrame(queue.shift()!);
  }
}

type HostResult = Schemas["HostResult"];

// carry runs a tool call on the paired FreeCAD runtime, as a courier does.
async function carry(host: { hostUrl: string; hostToken: string }, call: Schemas["ToolCall"]): Promise<HostResult> {
  const [path, body] = call.execute ? ["/v1/execute", call.execute] : ["/v1/export-view", call.exportView];
  assert.ok(body, `tool call ${call.toolCallId} carries no host request`);
  const resp = await fetch(host.hostUrl + path, {
    method: "POST",
    headers: { Authorization: `Bearer ${host.hostToken}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(resp.status, 200, `the host runtime answered ${resp.status} to ${path}`);
  return (await resp.json()) as HostResult;
}

function save(name: string, data: string): void {
  const dir = process.env.NEXUS_ARTIFACTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), data);
}

test("the generated client streams the demo run, reads 404 and 409, and resumes after an event id", async () => {
  // The host runtime nexus dev paired, as the web UI finds it.
  const pairing = await fetch(base + "/v1/dev/host-pairing", {
    headers: { Authorization: `Bearer ${env("NEXUS_API_KEY")}`, "X-Nexus-Pairing-Secret": env("NEXUS_PAIRING_SECRET") },
  });
  assert.equal(pairing.status, 200);
  const host = (await pairing.json()) as { hostUrl: string; hostToken: string };

  // 404: the error body is the document's Problem, with its reason.
  const missing = await client.GET("/v1/sessions/{sessionId}", { params: { path: { sessionId: "no-such-session" } } });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.response.headers.get("content-type"), "application/problem+json");
  const notFound: Schemas["Problem"] | undefined = missing.error;
  assert.equal(notFound?.code, "NOT_FOUND");
  assert.equal(notFound?.status, 404);
  assert.equal(notFound?.reason, "REFUSAL_REASON_SESSION_NOT_FOUND");
  console.log(`404 ${notFound?.reason}: ${notFound?.detail}`);

  // Unattended: this test carries every script, nothing waits for review.
  const created = await client.POST("/v1/sessions", { body: { hostApp: "freecad", reviewPolicy: "REVIEW_POLICY_NONE" } });
  assert.equal(created.response.status, 200, JSON.stringify(created.error));
  const sessionId = created.data!.sessionId!;

  const started = await client.POST("/v1/sessions/{sessionId}/runs", {
    params: { path: { sessionId } },
    body: { prompt: env("NEXUS_DEMO_PROMPT") },
    parseAs: "stream",
  });
  assert.equal(started.response.status, 200);
  assert.equal(started.response.headers.get("content-type"), "text/event-stream");

  const counts: Record<string, number> = {};
  const seen: Frame[] = [];
  const carried = new Set<string>();
  let conflict: Schemas["Problem"] | undefined;
  let runId = "";
  await frames(started.response.body!, async (f) => {
    counts[f.event] = (counts[f.event] ?? 0) + 1;
    seen.push(f);
    if (f.event !== "error") runId ||= f.data.runId;
    if (f.event !== "tool_call") return;
    const call = f.data.toolCall;
    if (conflict === undefined) {
      // 409: the session is busy with this run.
      const again = await client.POST("/v1/sessions/{sessionId}/runs:start", { params: { path: { sessionId } }, body: { prompt: "again" } });
      assert.equal(again.response.status, 409);
      conflict = again.error;
      assert.equal(conflict?.code, "ABORTED");
      assert.equal(conflict?.reason, "REFUSAL_REASON_RUN_ACTIVE");
      console.log(`409 ${conflict?.reason}: ${conflict?.detail}`);
    }
    const key = `${call.toolCallId} ${call.resultToken}`;
    if (!call.resultToken || carried.has(key)) return;
    carried.add(key);
    const result = await carry(host, call);
    const posted = await client.POST("/v1/sessions/{sessionId}/tool-results", {
      params: { path: { sessionId } },
      body: { toolCallId: call.toolCallId, resultToken: call.resultToken, result },
    });
    assert.equal(posted.response.status, 200, JSON.stringify(posted.error));
  });

  const lastId = Math.max(...seen.map((f) => f.id ?? 0));
  const last = seen.filter((f) => f.event !== "usage").at(-1);
  console.log(`run ${runId}: ${seen.length} events, last id ${lastId}, counts ${JSON.stringify(counts)}, ${carried.size} scripts carried`);
  assert.equal(last?.event, "complete", `the run ended with ${last?.event}: ${JSON.stringify(last?.data)}`);
  assert.ok(conflict, "no tool call came, so no 409 was read");
  seen.forEach((f, i) => assert.equal(f.id, i + 1, `frame ${i + 1} has id ${f.id}`));

  // Resume after the first tool call: the rest follows, ending with complete.
  const after = seen.find((f) => f.event === "tool_call")!.id!;
  const resumed = await client.GET("/v1/runs/{runId}/events", {
    params: { path: { runId }, header: { "Last-Event-ID": after } },
    parseAs: "stream",
  });
  assert.equal(resumed.response.status, 200);
  const rest: Frame[] = [];
  await frames(resumed.response.body!, async (f) => {
    rest.push(f);
  });
  const restCounts: Record<string, number> = {};
  for (const f of rest) restCounts[f.event] = (restCounts[f.event] ?? 0) + 1;
  console.log(`resumed after ${after}: ${rest.length} events, ids ${rest[0]?.id}..${rest.at(-1)?.id}, counts ${JSON.stringify(restCounts)}`);
  assert.equal(rest.length, lastId - after);
  assert.equal(rest[0]?.id, after + 1);
  assert.equal(rest.filter((f) => f.event !== "usage").at(-1)?.event, "complete");
  assert.deepEqual(rest.map((f) => f.event), seen.slice(after).map((f) => f.event));

  // The same through the query parameter, for clients that cannot set headers.
  const byQuery = await client.GET("/v1/runs/{runId}/events", { params: { path: { runId }, query: { lastEventId: lastId - 1 } }, parseAs: "stream" });
  const tail: Frame[] = [];
  await frames(byQuery.response.body!, async (f) => {
    tail.push(f);
  });
  assert.deepEqual(tail.map((f) => f.id), [lastId]);

  save("client-run.json", JSON.stringify({ runId, events: seen.length, lastId, counts, resumedAfter: after, resumed: rest.length, restCounts, notFound, conflict }, null, 2));
});
