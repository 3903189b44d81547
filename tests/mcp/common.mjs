// Helpers shared by the MCP end-to-end tests.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// PNG_SIGNATURE opens every PNG file.
export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// env returns a required environment variable or fails the test naming it.
export function env(name) {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run this through the Go test that starts the server`);
  return v;
}

// texts joins a tool result's text content.
export function texts(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// pngs decodes a tool result's image content, checking each is a real PNG.
export function pngs(result) {
  const images = result.content.filter((c) => c.type === 'image');
  return images.map((img) => {
    assert.equal(img.mimeType, 'image/png');
    const data = Buffer.from(img.data, 'base64');
    assert.ok(data.subarray(0, 8).equals(PNG_SIGNATURE), 'image content is not a PNG');
    // IHDR: width and height, big-endian, right after the signature and chunk header.
    return { data, width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
  });
}

// save writes a test artifact when NEXUS_ARTIFACTS names a folder.
export function save(name, data) {
  const dir = process.env.NEXUS_ARTIFACTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, name), data);
}
