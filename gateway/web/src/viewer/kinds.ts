/**
 * Which elements of a 3D review are highlighted, and how: the result's
 * changed ids against the nodes of the models the host exported. Kept
 * apart from three.js so it is tested without a browser.
 */

export type Kind = "added" | "modified" | "deleted" | "context";

export interface Changes {
  added?: string[];
  modified?: string[];
  deleted?: string[];
}

/** The kind of each node of the model after (added, modified or context). */
export function afterKinds(nodes: string[], changes: Changes): Map<string, Kind> {
  const added = new Set(changes.added ?? []);
  const modified = new Set(changes.modified ?? []);
  const out = new Map<string, Kind>();
  for (const n of nodes) out.set(n, added.has(n) ? "added" : modified.has(n) ? "modified" : "context");
  return out;
}

/**
 * The kind of each node of the model before: what the script deletes is
 * "deleted" (shown as a ghost in the after state and red in the before
 * state), what it modifies "modified", the rest context.
 */
export function beforeKinds(nodes: string[], changes: Changes): Map<string, Kind> {
  const deleted = new Set(changes.deleted ?? []);
  const modified = new Set(changes.modified ?? []);
  const out = new Map<string, Kind>();
  for (const n of nodes) out.set(n, deleted.has(n) ? "deleted" : modified.has(n) ? "modified" : "context");
  return out;
}

/** The highlighted node names of a state, sorted: what the tests compare with the changed ids. */
export function highlighted(kinds: Map<string, Kind>): string[] {
  return [...kinds].filter(([, k]) => k !== "context").map(([n]) => n).sort();
}

/** A legend line: how many of each kind, in words. */
export function legend(after: Map<string, Kind>, before?: Map<string, Kind>): string {
  const count = (m: Map<string, Kind> | undefined, k: Kind) => [...(m?.values() ?? [])].filter((v) => v === k).length;
  const parts = [
    [count(after, "added"), "added"],
    [count(after, "modified"), "modified"],
    [count(before, "deleted"), "deleted"],
  ].filter(([n]) => (n as number) > 0).map(([n, w]) => `${n} ${w}`);
  return parts.length ? parts.join(" · ") : "no element changed";
}
