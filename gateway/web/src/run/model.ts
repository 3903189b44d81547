import type { HostResult } from "../types";
import { el } from "./parts";

/** Fetches a call's 3D model: the state after its script, or before it. */
export type ModelFetch = (toolCallId: string, state: "before" | "after") => Promise<ArrayBuffer>;

/**
 * The 3D review of a call's result: a button that loads the viewer (and
 * three.js) only when pressed, orbits the model of what the script left or
 * would leave with the changed elements highlighted, and for a preview
 * toggles to the document before it. Without WebGL it says so, and the
 * rendered view beside it remains the review.
 */
export function modelPart(r: HostResult, id: string, fetchModel: ModelFetch): HTMLElement {
  const box = el("div", "model-review");
  const open = el("button", "model-open", "View in 3D");
  const kb = Math.max(1, Math.round(Number(r.model?.sizeBytes ?? 0) / 1024));
  open.title = `Orbit the model of this change (${kb} KB)`;
  const stage = el("div", "viewer");
  const bar = el("div", "viewer-bar");
  box.append(open);
  open.addEventListener("click", async () => {
    open.disabled = true;
    open.textContent = "Loading the 3D view…";
    try {
      const [{ mountViewer, NoWebGL }, after, before] = await Promise.all([
        import("../viewer/viewer"),
        fetchModel(id, "after"),
        r.modelBefore ? fetchModel(id, "before") : Promise.resolve(undefined),
      ]);
      try {
        box.replaceChildren(bar, stage);
        const v = await mountViewer(stage, { after, before }, r.changes ?? {});
        const fit = el("button", "viewer-fit", "Fit to changes");
        fit.addEventListener("click", () => v.fit());
        bar.append(fit);
        if (before) {
          const states = el("div", "viewer-states");
          states.setAttribute("role", "group");
          states.setAttribute("aria-label", "Which state to show");
          const pick = (s: "before" | "after", label: string) => {
            const b = el("button", `viewer-state ${s}`, label);
            b.setAttribute("aria-pressed", String(s === "after"));
            b.addEventListener("click", () => {
              v.show(s);
              for (const o of states.querySelectorAll("button")) o.setAttribute("aria-pressed", String(o === b));
            });
            return b;
          };
          states.append(pick("before", "Before"), pick("after", "After"));
          bar.append(states);
        }
      } catch (e) {
        if (!(e instanceof NoWebGL)) throw e;
        box.replaceChildren(el("div", "note model-unavailable", "The 3D view needs WebGL, which this browser does not offer; the rendered view shows the change."));
      }
    } catch (e) {
      open.disabled = false;
      open.textContent = "View in 3D";
      box.append(el("div", "note", `The 3D model could not be loaded: ${e instanceof Error ? e.message : String(e)}`));
    }
  });
  return box;
}
