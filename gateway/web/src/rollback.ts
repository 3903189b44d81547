import type { HostResult } from "./types";

// Whether a host result's rollback was exact comes from the host's own field,
// never from the wording of its error: the page says what the host said, and
// a rollback the host said nothing of reads as not verified, never as exact.

/** Error types of a call refused before anything ran (host.proto; Declined by the person): nothing to roll back. */
const notRun = new Set(["RevisionChanged", "CallIdReused", "Declined"]);

/** True when the host said its rollback left the document not exactly as before. */
export function rollbackInexact(r: HostResult): boolean {
  return r.rollback === "ROLLBACK_EXACTNESS_NOT_EXACT";
}

/** True when a run that rolled back (it failed or was a preview) carries no word on whether exactly. */
export function rollbackUnverified(r: HostResult): boolean {
  if (r.committed || (r.rollback ?? "ROLLBACK_EXACTNESS_UNSPECIFIED") !== "ROLLBACK_EXACTNESS_UNSPECIFIED") return false;
  // A restarted runtime reopened the document as of its last commit: the
  // card says so in its own words (parts.ts), not as an unverified rollback.
  if (r.error?.condition === "EXEC_CONDITION_RUNTIME_RESTARTED") return false;
  if (!r.error) return r.previewed === true;
  return !notRun.has(r.error.type ?? "");
}

/** How a card reads once its run failed. */
export type RolledBackStatus = "rolled back" | "rolled back, not exactly" | "rolled back, not verified" | "not run";

/** The card's status for a result with an error. */
export function rolledBackStatus(r: HostResult): RolledBackStatus {
  if (rollbackInexact(r)) return "rolled back, not exactly";
  if (rollbackUnverified(r)) return "rolled back, not verified";
  if (notRun.has(r.error?.type ?? "")) return "not run";
  return "rolled back";
}

/** The note a result shows when its rollback was not exact or not verified; undefined otherwise. */
export function rollbackNote(r: HostResult): string | undefined {
  if (rollbackUnverified(r)) {
    return "Rolled back, not verified: the host did not say whether the rollback was exact. Inspect the document before relying on it.";
  }
  if (!rollbackInexact(r)) return undefined;
  const what = r.committed
    ? "The change report's rollback was not exact: the document may hold what the report script did."
    : "Rolled back, but not exactly: the document may still hold part of what the script did. Inspect it before going on.";
  const differs = r.rollbackDifferences ?? [];
  return differs.length > 0 ? `${what} Still differs: ${differs.join("; ")}.` : what;
}

/**
 * What the host's verification of a rollback covered, when it compared less
 * than the whole document (a host that mirrors a large model reads again
 * only what the transaction touched); undefined when it compared it all.
 */
export function rollbackScope(r: HostResult): string | undefined {
  const scope = r.rollbackVerified?.trim();
  return scope ? `Rollback check: ${scope}.` : undefined;
}
