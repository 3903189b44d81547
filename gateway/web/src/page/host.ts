import { api, checkHost, settings } from "../api";
import { drawHost } from "./controls";
import { loadLinkedHosts } from "./linked";
import type { Page } from "./page";

// The host runtime on this machine: where it is and whether it answers.

/** Reads the saved host (or the pairing nexus dev handed over), then checks it. */
export async function loadHost(p: Page): Promise<void> {
  const { host } = p;
  host.url = settings.get("hostUrl");
  host.token = settings.get("hostToken");
  if (!host.url) {
    const pairing = await api.hostPairing();
    if (pairing?.hostUrl) {
      host.url = pairing.hostUrl;
      host.token = pairing.hostToken ?? "";
    }
  }
  p.el.hostUrlInput.value = host.url;
  p.el.hostTokenInput.value = host.token;
  await checkHostNow(p);
}

/** Asks the host for its /v1/info, and the gateway for the linked hosts, once at a time. */
export function checkHostNow(p: Page): Promise<void> {
  p.checking ??= Promise.all([checkHost(p.host.url, p.host.token).then((s) => (p.hostState = s)), loadLinkedHosts(p)])
    .then(() => drawHost(p))
    .finally(() => (p.checking = null));
  return p.checking;
}

/** Saves the host the person entered and checks it. */
export function saveHost(p: Page): void {
  const { host } = p;
  host.url = p.el.hostUrlInput.value.trim();
  host.token = p.el.hostTokenInput.value.trim();
  settings.set("hostUrl", host.url);
  settings.set("hostToken", host.token);
  p.hostState = null;
  drawHost(p);
  void checkHostNow(p);
}
