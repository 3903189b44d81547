// Starts the system Chromium headless with a fresh profile. Browsers are
// never downloaded: CHROMIUM_PATH (default /usr/bin/chromium) must exist.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function launch() {
  const profile = await mkdtemp(join(tmpdir(), "nexus-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 860 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through go test in gateway/`);
  return v;
}
