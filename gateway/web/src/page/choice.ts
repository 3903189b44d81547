import { appName, describeLinked, hostsOf, loadLinkedHosts, pageHostApp } from "./linked";
import type { Page } from "./page";

// Which host: a person with several linked hosts of the application picks
// the one a new session works on, when the gateway asks (409 on creating
// it); the prompt, still in the input, then runs on that host.

/** Asks the person which of their linked hosts the new session binds to. */
export function askHost(p: Page, refusal: string): void {
  const box = p.el.hostChoice;
  const app = pageHostApp(p);
  void loadLinkedHosts(p).then(() => {
    const hosts = hostsOf(p, app);
    const q = document.createElement("p");
    q.textContent = hosts.length
      ? `You have ${hosts.length} linked ${appName(app)} hosts. Which one should this session work on?`
      : `The gateway asks which host to use (${refusal}), and lists none of yours.`;
    const buttons = hosts.map((h) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "pick-host";
      b.dataset.hostId = h.hostId;
      b.textContent = describeLinked(h);
      b.addEventListener("click", () => {
        p.chosenHostId = h.hostId;
        box.hidden = true;
        p.el.form.requestSubmit();
      });
      return b;
    });
    box.replaceChildren(q, ...buttons);
    box.hidden = false;
    box.scrollIntoView({ block: "nearest" });
  });
}
