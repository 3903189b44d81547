// The official TypeScript MCP SDK client against the gateway's /mcp endpoint
// (streamable HTTP): refused without credentials; with an API key it lists the
// tools, runs the demo on the real FreeCAD runtime paired with nexus dev, and
// gets the change report and a PNG back, with progress notifications on the way.
// Each script that would change the document is previewed and put to the
// person: through MCP elicitation when the client offers it (accept commits,
// decline tells the model), else the run waits for the review given elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { env, pngs, save, texts } from './common.mjs';

const url = new URL(env('NEXUS_MCP_URL'));
const key = env('NEXUS_API_KEY');
const prompt = env('NEXUS_DEMO_PROMPT');

function client() {
  return new Client({ name: 'nexus-mcp-e2e', version: '1.0.0' });
}

// eliciting is a client that puts every review to its "person", answer, and
// keeps the questions it was asked.
function eliciting(answer) {
  const c = new Client({ name: 'nexus-mcp-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  c.asked = [];
  c.setRequestHandler(ElicitRequestSchema, async (req) => {
    c.asked.push(req.params);
    return answer;
  });
  return c;
}

const base = url.href.replace(/\/mcp$/, '');

// api calls the gateway's HTTP API with the test's key.
async function api(method, path, body) {
  const resp = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  assert.ok(resp.ok, `${method} ${path}: ${resp.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

const runOptions = (progress) => ({
  onprogress: (p) => progress.push(p),
  timeout: 120_000,
  resetTimeoutOnProgress: true,
  maxTotalTimeout: 600_000,
});

function transport(headers) {
  return new StreamableHTTPClientTransport(url, { requestInit: { headers } });
}

const initialize = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

test('without credentials the endpoint refuses before MCP starts', async (t) => {
  for (const [name, headers] of [
    ['no Authorization header', {}],
    ['an unknown API key', { Authorization: 'Bearer not-a-key' }],
  ]) {
    await t.test(name, async () => {
      const resp = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: initialize,
      });
      assert.equal(resp.status, 401);
      assert.match(resp.headers.get('www-authenticate') ?? '', /Bearer/);
      const body = await resp.json();
      assert.equal(body.reason, 'REFUSAL_REASON_UNAUTHENTICATED');

      const c = client();
      await assert.rejects(c.connect(transport(headers)), (err) => {
        assert.match(String(err), /401|Unauthorized|unauthenticated/i);
        return true;
      });
    });
  }
});

test('with elicitation, a declined preview commits nothing and tells the model', async () => {
  const c = eliciting({ action: 'decline', content: { reason: 'not in this room' } });
  await c.connect(transport({ Authorization: `Bearer ${key}` }));
  try {
    const progress = [];
    const result = await c.callTool({ name: 'run', arguments: { prompt } }, undefined, runOptions(progress));
    const out = result.structuredContent;
    assert.equal(c.asked.length, 1, `asked ${c.asked.length} times; the result:\n${texts(result)}`);
    assert.equal(out.committed, false, 'a declined script committed');
    const declined = out.toolCalls.filter((o) => o.outcome === 'declined');
    assert.equal(declined.length, 1, `outcomes ${out.toolCalls.map((o) => o.outcome)}`);
    assert.match(declined[0].review, /^declined by .*: not in this room$/);
    assert.match(texts(result), /declined by [^\n]*not in this room[\s\S]*No transaction committed/);
    // Nexus's model got the call's result as declined (the run's record of
    // what each call's result was), and went on from there.
    const { runs } = await api('GET', `/v1/sessions/${out.sessionId}/runs`);
    assert.equal(runs.at(-1).toolCalls.declined, 1, `run record ${JSON.stringify(runs.at(-1))}`);
    assert.equal(runs.at(-1).toolCalls.committed ?? 0, 0);
    assert.match(progress.map((p) => p.message).join('\n'), /declined the script/);
  } finally {
    await c.close();
  }
});

test('without elicitation, the preview waits for the review given in the web UI or the API, and the progress says so', async () => {
  const c = client();
  await c.connect(transport({ Authorization: `Bearer ${key}` }));
  try {
    const progress = [];
    const reviewed = [];
    let seen = 0;
    let done = false;
    // The person reviews where the progress says: here, the HTTP API the web
    // UI calls, after checking that the run waits on exactly that call.
    const reviewer = (async () => {
      for (;;) {
        await new Promise((r) => setTimeout(r, 100));
        for (; seen < progress.length; seen++) {
          const m = /session (s_\w+), tool call (\S+): the script awaits your review in the Nexus web UI/.exec(progress[seen].message);
          if (!m) continue;
          const session = await api('GET', `/v1/sessions/${m[1]}`);
          assert.equal(session.pendingToolCall?.toolCallId, m[2]);
          assert.equal(session.pendingToolCall?.review, 'REVIEW_STATE_AWAITING');
          // Declined, so the document stays empty for the demo run that follows.
          await api('POST', `/v1/sessions/${m[1]}/tool-calls/${m[2]}:review`, { verdict: 'REVIEW_VERDICT_DECLINE', reason: 'reviewed in the web UI' });
          reviewed.push(m[2]);
        }
        if (done) return;
      }
    })();
    const result = await c.callTool({ name: 'run', arguments: { prompt } }, undefined, runOptions(progress)).finally(() => { done = true; });
    await reviewer;
    const out = result.structuredContent;
    assert.ok(!result.isError, texts(result));
    assert.equal(reviewed.length, 1, `reviewed ${reviewed.length}; the result:\n${texts(result)}\nprogress:\n${progress.map((p) => p.message).join('\n')}`);
    assert.equal(out.committed, false);
    assert.deepEqual(out.toolCalls.map((o) => o.outcome), ['read_only', 'rolled_back', 'declined']);
    assert.match(out.toolCalls[2].review, /^declined by /);
    save('gateway-mcp-awaiting.json', JSON.stringify(progress.map((p) => p.message), null, 2));
  } finally {
    await c.close();
  }
});

test('with an API key and elicitation: tools, the demo run on real FreeCAD with its preview approved, sessions and audit', async () => {
  const c = eliciting({ action: 'accept', content: {} });
  await c.connect(transport({ Authorization: `Bearer ${key}` }));
  try {
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['list_sessions', 'run', 'session_audit']);
    const run = tools.find((t) => t.name === 'run');
    assert.match(run.description, /ONE transaction/);
    assert.deepEqual(run.inputSchema.required, ['prompt']);

    const progress = [];
    const started = Date.now();
    const result = await c.callTool({ name: 'run', arguments: { prompt } }, undefined, runOptions(progress));
    const seconds = (Date.now() - started) / 1000;
    const text = texts(result);
    assert.ok(!result.isError, `the run failed:\n${text}`);

    // The final message, then the change report read back from FreeCAD.
    const out = result.structuredContent;
    assert.ok(out.sessionId && out.runId, 'no session or run id');
    assert.equal(out.committed, true);
    assert.match(out.message, /room is built/);
    for (const want of ['=== CHANGE REPORT ===', 'Wall', 'Door', 'Window']) {
      assert.ok(out.changeReport.includes(want), `change report lacks ${want}:\n${out.changeReport}`);
      assert.ok(text.includes(want), `text content lacks ${want}`);
    }
    // The demo's deliberate mistake was rolled back on the host, then fixed.
    const outcomes = out.toolCalls.map((o) => o.outcome);
    assert.deepEqual(outcomes, ['read_only', 'rolled_back', 'committed']);
    assert.match(out.toolCalls[1].error, /NameError/);

    // The script that raised went back to the model without asking; the one
    // that would commit was previewed and put to the person once: its change
    // report, a description of its view and the script. Accepting committed it.
    assert.equal(c.asked.length, 1, `asked ${c.asked.length} times`);
    const q = c.asked[0].message;
    for (const want of [/rolled back exactly/, /=== CHANGE REPORT ===/, /Wall/, /View: a \d+x\d+ image\/png render/, /The script:/, /Accept to commit/]) {
      assert.match(q, want);
    }
    assert.match(out.toolCalls[2].review, /^approved by /);
    save('gateway-mcp-review-question.txt', q);

    // The rendered view, as image content.
    const images = pngs(result);
    assert.equal(images.length, 1);
    assert.equal(out.views, 1);
    assert.ok(images[0].width >= 64 && images[0].height >= 64);
    save('gateway-mcp-view.png', images[0].data);

    // Progress notifications on the way, increasing, telling each step.
    assert.ok(progress.length >= 5, `only ${progress.length} progress notifications`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
    const said = progress.map((p) => p.message).join('\n');
    for (const want of [/run started/, /model turn/, /execute_task_automation previewed on the host/, /host result: rolled back \(NameError/, /the preview ran and was rolled back exactly \(it would add [1-9]/,
      /asking you to approve or decline/, /approved the script/, /execute_task_automation on the host/, /host result: committed/, /run complete/]) {
      assert.match(said, want);
    }

    const sessions = await c.callTool({ name: 'list_sessions', arguments: {} });
    assert.ok(sessions.structuredContent.sessions.some((s) => s.sessionId === out.sessionId), 'the run\'s session is not listed');

    const audit = await c.callTool({ name: 'session_audit', arguments: { sessionId: out.sessionId } });
    const kinds = audit.structuredContent.dispatches.map((d) => d.kind);
    assert.ok(kinds.includes('SCRIPT_KIND_TASK_AUTOMATION'), `audit kinds ${kinds}`);
    assert.ok(audit.structuredContent.dispatches.every((d) => /^[0-9a-f]{64}$/.test(d.stamp.contentHash)));

    const missing = await c.callTool({ name: 'session_audit', arguments: { sessionId: '' } });
    assert.equal(missing.isError, true);
    assert.match(texts(missing), /sessionId is empty/);

    save('gateway-mcp.json', JSON.stringify({
      seconds, progress: progress.map((p) => p.message), outcomes, changeReport: out.changeReport,
      image: { width: images[0].width, height: images[0].height, bytes: images[0].data.length },
      auditKinds: kinds,
    }, null, 2));
    console.log(`demo run over MCP: ${seconds.toFixed(1)} s, ${progress.length} progress notifications, ` +
      `view ${images[0].width}x${images[0].height} (${images[0].data.length} bytes), audit ${kinds.length} dispatches`);
  } finally {
    await c.close();
  }
});
