import "./style.css";
import { settings } from "./api";
import { drawHost, drawStatus } from "./page/controls";
import { wireComposer } from "./page/composer";
import { checkHostNow, loadHost, saveHost } from "./page/host";
import { wirePairing } from "./page/pairing";
import { loadModels } from "./page/models";
import { newPage } from "./page/page";
import { defaultPolicy } from "./page/policy";
import { followEnd } from "./page/scroll";
import { loadSessions, openSession, pushSession, sessionFromURL, showSession, watchSessions } from "./page/sessions";

// The page is the courier: it starts runs, draws their streams, carries tool
// calls to the host runtime on this machine, and posts the results back. It
// never decides a review itself: a call awaiting review is approved or
// declined on the server (from this page or any other client), and the page
// carries a call only once it has a result token.
//
// This file wires the parts (under page/) to the page's elements; the state
// they share is one object, made here and handed to each.

const p = newPage();
const { el } = p;

setInterval(() => drawStatus(p), 500);
followEnd(p);
wireComposer(p);

el.apiKeyInput.value = settings.get("apiKey");
const useKey = (key: string) => {
  settings.set("apiKey", key.trim());
  el.apiKeyInput.value = key.trim();
  void loadModels(p);
  void loadSessions(p);
};
el.apiKeyInput.addEventListener("change", () => useKey(el.apiKeyInput.value));
el.authForm.addEventListener("submit", (ev) => {
  ev.preventDefault();
  el.authStatus.textContent = "checking…";
  useKey(el.authKey.value);
});
wirePairing(p);
el.hostForm.addEventListener("submit", (ev) => {
  ev.preventDefault();
  saveHost(p);
});
el.newSessionButton.addEventListener("click", () => {
  pushSession("");
  void openSession(p, "");
});
const menu = (open: boolean) => {
  document.body.classList.toggle("menu-open", open);
  el.menuButton.setAttribute("aria-expanded", String(open));
};
el.menuButton.addEventListener("click", () => menu(!document.body.classList.contains("menu-open")));
// The drawer (on a narrow screen) closes as a person expects: Esc, or a tap
// outside it (the link dialog above it is part of what it opened).
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && document.body.classList.contains("menu-open") && !el.linkDialog.open) menu(false);
});
document.addEventListener("click", (ev) => {
  const t = ev.target as Node;
  if (!document.body.classList.contains("menu-open") || el.side.contains(t) || el.menuButton.contains(t) || el.linkDialog.contains(t)) return;
  menu(false);
});
window.addEventListener("popstate", () => void openSession(p, sessionFromURL()));
// The host may start or stop while the page is open.
window.addEventListener("focus", () => void checkHostNow(p));
setInterval(() => {
  if (!p.running && document.visibilityState === "visible") void checkHostNow(p);
}, 10_000);

el.policySelect.value = defaultPolicy;
showSession(p);
drawHost(p);
void loadModels(p);
void loadSessions(p);
watchSessions(p);
// The host pairing comes first: a rejoined tool call may need carrying.
void loadHost(p).finally(() => openSession(p, sessionFromURL()));
