// The official TypeScript MCP SDK client drives `nexus host freecad --mcp` over
// stdio, as Claude Desktop or Cursor would: a read-only inspection, a
// transaction that commits with its change report, one that raises and leaves
// the document exactly as before (a full dump compared), and a captured view.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { env, pngs, save, texts } from './common.mjs';

const bin = env('NEXUS_BIN');

// dumpScript prints every object with its label, type and every property,
// shapes reduced to type, volume and bounding box, so two dumps compare whole.
const dumpScript = `import json, Part
def val(v):
    if isinstance(v, Part.Shape):
        if v.isNull():
            return "shape:null"
        b = v.BoundBox
        return "shape:%s:%.3f:%.3f,%.3f,%.3f,%.3f,%.3f,%.3f" % (v.ShapeType, v.Volume, b.XMin, b.YMin, b.ZMin, b.XMax, b.YMax, b.ZMax)
    if isinstance(v, App.DocumentObject):
        return "obj:" + v.Name
    if isinstance(v, (list, tuple)):
        return [val(x) for x in v]
    r = repr(v)
    return r if " at 0x" not in r else type(v).__name__
out = {}
for o in doc.Objects:
    props = {}
    for p in o.PropertiesList:
        if p == "Proxy":
            continue
        try:
            props[p] = val(getattr(o, p))
        except Exception as e:
            props[p] = "error:" + type(e).__name__
    out[o.Name] = {"label": o.Label, "type": o.TypeId, "props": props}
print(json.dumps(out, sort_keys=True))
`;

// roomScript builds what the guidance teaches: a level, four walls, a door and a window.
const roomScript = `import Arch, Draft
level = Arch.makeFloor()
level.Label = "Ground level"
corners = [App.Vector(0, 0, 0), App.Vector(4000, 0, 0), App.Vector(4000, 3000, 0), App.Vector(0, 3000, 0)]
walls = []
for i in range(4):
    line = Draft.makeLine(corners[i], corners[(i + 1) % 4])
    walls.append(Arch.makeWall(line, width=200, height=2700, align="Center"))
door = Arch.makeWindowPreset("Simple door", width=900, height=2100, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100,
    placement=App.Placement(App.Vector(600, -100, 0), App.Rotation(App.Vector(1, 0, 0), 90)))
door.Hosts = [walls[0]]
window = Arch.makeWindowPreset("Fixed", width=1200, height=1200, h1=100, h2=100, h3=100, w1=200, w2=100, o1=0, o2=100,
    placement=App.Placement(App.Vector(1400, 2900, 900), App.Rotation(App.Vector(1, 0, 0), 90)))
window.Hosts = [walls[2]]
level.addObjects(walls + [door, window])
print("built", len(walls), "walls")
`;

// brokenScript changes the document in every way it can, then raises on line 9.
const brokenScript = `import Arch
level = doc.getObjectsByLabel("Ground level")[0]
level.Label = "Renamed level"
extra = Arch.makeWall(None, length=1000, width=300, height=1000)
level.addObject(extra)
doc.getObject("Wall").Height = 5000
doc.removeObject("Window")
doc.recompute()
raise RuntimeError("deliberate failure after changing the document")
`;

let client;
let stderr = '';
const figures = {};

before(async () => {
  const transport = new StdioClientTransport({
    command: bin,
    args: ['host', 'freecad', '--mcp'],
    env: { ...process.env, NEXUS_LOG_LEVEL: 'warn' },
    stderr: 'pipe',
  });
  transport.stderr.on('data', (b) => { stderr += b; });
  client = new Client({ name: 'nexus-mcp-e2e', version: '1.0.0' });
  const started = Date.now();
  await client.connect(transport, { timeout: 180_000 });
  figures.startSeconds = (Date.now() - started) / 1000;
});

after(async () => {
  await client?.close();
  save('host-mcp.json', JSON.stringify(figures, null, 2));
});

async function call(name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 180_000 });
}

async function dump() {
  const r = await call('inspect', { code: dumpScript });
  assert.ok(!r.isError, texts(r));
  return r.structuredContent.stdout;
}

test('the tools teach what the capability service teaches Nexus\'s model', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['capture_view', 'inspect', 'run_transaction']);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const name of ['inspect', 'run_transaction']) {
    const d = byName[name].description;
    for (const want of [/millimetres/, /Building Storey/, /Walls: `getattr\(o, "IfcType", ""\) == "Wall"`/, /Doors and windows/]) {
      assert.match(d, want, `${name} description`);
    }
  }
  assert.equal(byName.inspect.annotations.readOnlyHint, true);
  assert.deepEqual(byName.run_transaction.inputSchema.required.sort(), ['code', 'description']);
});

test('a read-only inspection reads the document and cannot change it', async () => {
  const r = await call('inspect', { code: 'print("objects:", len(doc.Objects))\n' });
  assert.ok(!r.isError, texts(r));
  assert.equal(texts(r).trim(), 'objects: 0');

  const before = await dump();
  const w = await call('inspect', { code: 'import Arch\nArch.makeWall(None, length=1000, width=200, height=1000)\n' });
  assert.equal(w.isError, true);
  assert.equal(w.structuredContent.error.type, 'ReadOnlyViolation');
  assert.equal(await dump(), before);

  const empty = await call('inspect', { code: '  ' });
  assert.equal(empty.isError, true);
  assert.match(texts(empty), /code is empty/);
});

test('a transaction commits with its change report and view', async () => {
  const r = await call('run_transaction', { code: roomScript, description: 'Build a 4 x 3 m room', view: 'isometric' });
  const text = texts(r);
  assert.ok(!r.isError, text);
  const out = r.structuredContent;
  assert.equal(out.committed, true);
  assert.match(out.stdout, /built 4 walls/);
  for (const want of ['=== CHANGE REPORT ===', 'Wall', 'Door', 'Window', 'Ground level']) {
    assert.ok(out.changeReport.includes(want), `change report lacks ${want}:\n${out.changeReport}`);
  }
  assert.ok(text.includes('=== CHANGE REPORT ==='));
  for (const name of ['Wall', 'Wall001', 'Wall002', 'Wall003', 'Window', 'Window001']) {
    assert.ok(out.added.includes(name), `added lacks ${name}: ${out.added}`);
  }
  assert.match(out.epilogueSha256, /^[0-9a-f]{64}$/);
  const images = pngs(r);
  assert.equal(images.length, 1);
  save('host-mcp-transaction.png', images[0].data);
  figures.committed = { added: out.added.length, durationMs: out.durationMs, report: out.changeReport };
});

test('a transaction that raises leaves the document exactly as before', async () => {
  const before = await dump();
  assert.match(before, /Renamed level|Ground level/);
  const r = await call('run_transaction', { code: brokenScript, description: 'Change everything, then fail' });
  assert.equal(r.isError, true);
  const out = r.structuredContent;
  assert.equal(out.committed, false);
  assert.equal(out.error.type, 'RuntimeError');
  assert.equal(out.error.line, 9);
  assert.match(texts(r), /rolled back: the document is exactly as before/);
  assert.match(texts(r), /line 9 of your script/);
  const afterDump = await dump();
  assert.equal(afterDump, before, 'the document changed although the transaction raised');
  figures.rollback = { dumpBytes: before.length, objects: Object.keys(JSON.parse(before)).length, identical: afterDump === before };
});

test('a captured view comes back as PNG image content', async () => {
  const r = await call('capture_view', { view: 'plan', maxPx: 800 });
  assert.ok(!r.isError, texts(r));
  const [img] = pngs(r);
  assert.ok(img.width <= 800 && img.height <= 800 && Math.max(img.width, img.height) >= 400, `${img.width}x${img.height}`);
  assert.equal(r.structuredContent.view, 'plan');
  save('host-mcp-plan.png', img.data);
  figures.view = { width: img.width, height: img.height, bytes: img.data.length };

  const bad = await call('capture_view', { view: 'plan', maxPx: 100000 });
  assert.equal(bad.isError, true);
  assert.match(texts(bad), /maxPx/);
});
