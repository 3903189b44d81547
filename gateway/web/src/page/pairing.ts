import { api } from "../api";
import type { PendingPairing } from "../types";
import { checkHostNow } from "./host";
import { appName } from "./linked";
import type { Page } from "./page";

// Linking a desktop host by the code it shows (RFC 8628): the page asks the
// gateway what printed the code, shows the person what they would link, and
// links it only when they click Approve. A link ending in #approve=CODE only
// fills in the code, so a link someone sends links nothing by itself.

/** The pairing's facts, as the person reads them. */
export function pairingFacts(pp: PendingPairing, now = Date.now()): [string, string][] {
  const asked = pp.startTime ? new Date(pp.startTime) : null;
  const ago = asked ? Math.max(0, Math.round((now - asked.getTime()) / 60_000)) : 0;
  return [
    ["Application", [appName(pp.hostApp), pp.hostVersion].filter(Boolean).join(" ")],
    ["Document", pp.document || "no document open"],
    ["Machine", pp.machine || "not said"],
    ["Asked", asked ? `${asked.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })} (${ago < 1 ? "just now" : `${ago} min ago`})` : "not said"],
    ["Nexus add-on", pp.runtimeVersion || "not said"],
    ["Code", pp.userCode ?? ""],
  ];
}

/** Looks the code up and asks the person; nothing is linked before Approve. */
async function ask(p: Page, code: string): Promise<void> {
  const { el } = p;
  el.linkDetails.replaceChildren();
  el.linkStatus.textContent = "Looking the code up…";
  el.linkStatus.dataset.ok = "";
  el.linkApprove.hidden = true;
  el.linkCancel.textContent = "Cancel";
  if (!el.linkDialog.open) el.linkDialog.showModal();
  try {
    const pp = await api.pairing(code);
    for (const [k, v] of pairingFacts(pp)) {
      const dt = document.createElement("dt");
      dt.textContent = k;
      const dd = document.createElement("dd");
      dd.textContent = v;
      el.linkDetails.append(dt, dd);
    }
    el.linkStatus.textContent = "";
    el.linkApprove.hidden = false;
    el.linkApprove.disabled = false;
    el.linkApprove.dataset.code = pp.userCode ?? code;
    el.linkApprove.focus();
  } catch (e) {
    el.linkStatus.dataset.ok = "false";
    el.linkStatus.textContent = `No host waits for code ${code}: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** Links the host the person looked at. */
async function approve(p: Page): Promise<void> {
  const { el } = p;
  const code = el.linkApprove.dataset.code ?? "";
  el.linkApprove.disabled = true;
  el.linkStatus.textContent = "Linking…";
  try {
    const h = await api.approvePairing(code);
    el.linkStatus.dataset.ok = "true";
    el.linkStatus.textContent = `Linked ${appName(h.hostApp)} (${h.document || "no document open"}): it runs your sessions' scripts from now on.`;
    el.linkApprove.hidden = true;
    el.linkCancel.textContent = "Close";
    el.linkCode.value = "";
    void checkHostNow(p);
  } catch (e) {
    el.linkApprove.disabled = false;
    el.linkStatus.dataset.ok = "false";
    el.linkStatus.textContent = `Could not link it: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** Wires the code field and the dialog, and takes up a code the page's URL carries. */
export function wirePairing(p: Page): void {
  const { el } = p;
  el.linkForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const code = el.linkCode.value.trim();
    if (code) void ask(p, code);
  });
  el.linkApprove.addEventListener("click", () => void approve(p));
  el.linkCancel.addEventListener("click", () => el.linkDialog.close());
  const fromLink = /[#&]approve=([A-Za-z0-9-]+)/.exec(location.hash)?.[1];
  if (!fromLink) return;
  history.replaceState(null, "", location.pathname + location.search);
  el.linkCode.value = fromLink;
  void ask(p, fromLink);
}
