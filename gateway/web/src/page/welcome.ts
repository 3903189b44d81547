import { describeLinked, documentWords, appName, pageHostApp, shownHost } from "./linked";
import { modelGuide } from "./examples";
import type { Page } from "./page";

// The first screen: until the session shown has a run, what Nexus does, the
// host it works on (and its document), the model and what it can do, and
// example prompts that work on that model, one click each.

function hostLine(p: Page): string {
  const linked = shownHost(p);
  if (linked) return describeLinked(linked);
  const app = pageHostApp(p);
  const several = (p.linkedHosts ?? []).filter((h) => h.hostApp === app).length > 1;
  if (several) return `You have several linked ${appName(app)} hosts: the first run asks which one this session works on.`;
  const s = p.hostState;
  if (s?.ok) return `${appName(s.info.hostApp)} ${s.info.hostVersion ?? ""} · ${documentWords(s.info.document)} · on this machine`;
  if (!s) return "Checking the host…";
  return `No ${appName(app)} is connected yet: open Sessions and host to pair one.`;
}

/** Draws the first screen, or hides it once the session has a run. */
export function drawWelcome(p: Page): void {
  const { welcome, promptInput, modelSelect, form } = p.el;
  welcome.hidden = p.hasRuns || p.running;
  const model = p.models.find((m) => m.id === modelSelect.value);
  const app = pageHostApp(p);
  const guide = modelGuide(model, app);
  // A phone's two rows hold a short placeholder whole; the examples are on the first screen.
  promptInput.placeholder = matchMedia("(max-width: 760px)").matches
    ? "Describe the change (Enter runs)"
    : `Describe the change, e.g. ${guide.examples[0]} (Enter runs, Shift+Enter for a new line)`;
  if (welcome.hidden) return;
  const h = (tag: string, cls: string, text: string) => {
    const e = document.createElement(tag);
    e.className = cls;
    e.textContent = text;
    return e;
  };
  const what = h(
    "p",
    "what",
    `Describe a change to your ${appName(app)} document in plain words. Nexus inspects the document, writes a script against ${appName(app)}'s API, ` +
      "runs it in one undo step, reads back what changed and looks at a rendered view, and fixes its own mistakes. " +
      "A script that would change the document waits for your review first.",
  );
  const facts = document.createElement("dl");
  facts.append(h("dt", "", "Host"), h("dd", "host-line", hostLine(p)));
  facts.append(h("dt", "", "Model"), h("dd", "model-line", `${model?.displayName || modelSelect.value || "none"}: ${guide.can}`));
  const list = document.createElement("div");
  list.className = "examples";
  list.append(h("span", "label", "Try:"));
  for (const ex of guide.examples) {
    const b = h("button", "example", ex) as HTMLButtonElement;
    b.type = "button";
    b.addEventListener("click", () => {
      promptInput.value = ex;
      form.requestSubmit();
    });
    list.append(b);
  }
  // A new session may start on a new, empty document (the one open stays
  // saved where it is), so the demo's room can be built again.
  const fresh = document.createElement("label");
  fresh.className = "new-document";
  const box = document.createElement("input");
  box.type = "checkbox";
  box.id = "new-document";
  box.checked = p.newDocument;
  box.disabled = p.sessionId !== "";
  box.addEventListener("change", () => (p.newDocument = box.checked));
  fresh.append(box, ` Start this session on a new, empty ${appName(app)} document (the open one stays saved where it is)`);
  welcome.replaceChildren(h("h2", "", "Nexus does the work in your design application"), what, list, fresh, facts);
}
