import { api, APIError, settings } from "../api";
import { needsSignIn } from "../refusal";
import type { ModelInfo } from "../types";
import { refreshControls, showPageError } from "./controls";
import type { Page } from "./page";

// The models the gateway offers, and signing in when it needs a key.

/** Asks for a key or token, saying why. */
export function showAuth(p: Page, text: string): void {
  p.needsKey = true;
  p.el.authForm.hidden = false;
  p.el.authStatus.textContent = text;
  refreshControls(p);
}

export async function loadModels(p: Page): Promise<void> {
  const { modelSelect } = p.el;
  try {
    const resp = await api.models();
    p.needsKey = false;
    p.el.authForm.hidden = true;
    const models = resp.models ?? [];
    p.models = models;
    const usable = (m: ModelInfo) => m.available !== false;
    let chosen = settings.get("model") || resp.defaultModel || "";
    if (!models.some((m) => m.id === chosen && usable(m))) chosen = models.find(usable)?.id ?? chosen;
    modelSelect.replaceChildren(
      ...models.map((m) => {
        const o = document.createElement("option");
        o.value = m.id;
        const name = m.displayName ? `${m.displayName} (${m.id})` : m.id;
        // Unavailable models are shown, greyed, with the reason.
        o.textContent = usable(m) ? name : `${name} — unavailable${m.note ? ": " + m.note : ""}`;
        o.disabled = !usable(m);
        o.title = m.note ?? "";
        o.selected = m.id === chosen;
        return o;
      }),
    );
  } catch (e) {
    p.models = [];
    modelSelect.replaceChildren();
    if (e instanceof APIError && needsSignIn(e.reason)) showAuth(p, "");
    else showPageError(p, `cannot list models: ${e instanceof Error ? e.message : String(e)}`);
  }
  refreshControls(p);
}
