// The official TypeScript MCP SDK client against the gateway's /mcp endpoint
// (streamable HTTP): refused without credentials; with an API key it lists the
// tools, runs the demo on the real FreeCAD runtime paired with nexus dev, and
// gets the change report and a PNG back, with progress notifications on the way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, pngs, save, texts } from './common.mjs';

const url = new URL(env('NEXUS_MCP_URL'));
const key = env('NEXUS_API_KEY');
const prompt = env('NEXUS_DEMO_PROMPT');

function client() {
  return new Client({ name: 'nexus-mcp-e2e', version: '1.0.0' });
}

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
      assert.match(body.error.message, /unauthenticated/);

      const c = client();
      await assert.rejects(c.connect(transport(headers)), (err) => {
        assert.match(String(err), /401|Unauthorized|unauthenticated/i);
        return true;
      });
    });
  }
});

test('with an API key: tools, the demo run on real FreeCAD, sessions and audit', async () => {
  const c = client();
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
    const result = await c.callTool({ name: 'run', arguments: { prompt } }, undefined, {
      onprogress: (p) => progress.push(p),
      timeout: 120_000,
      resetTimeoutOnProgress: true,
      maxTotalTimeout: 600_000,
    });
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
    for (const want of [/run started/, /model turn/, /execute_task_automation on the host/, /host result: rolled back \(NameError/, /host result: committed/, /run complete/]) {
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
