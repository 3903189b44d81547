import type { HostResult } from "./types";

// Whether a host result's rollback was exact comes from the host's own field,
// never from the wording of its error: the page says what the host said.

/** True when the host said its rollback left the document not exactly as before. */
export function rollbackInexact(r: HostResult): boolean {
  return r.rollback === "ROLLBACK_EXACTNESS_NOT_EXACT";
}

/** The note a result shows when its rollback was not exact; undefined otherwise. */
export function rollbackNote(r: HostResult): string | undefined {
  if (!rollbackInexact(r)) return undefined;
  const what = r.committed
    ? "The change report's rollback was not exact: the document may hold what the report script did."
    : "Rolled back, but not exactly: the document may still hold part of what the script did. Inspect it before going on.";
  const differs = r.rollbackDifferences ?? [];
  return differs.length > 0 ? `${what} Still differs: ${differs.join("; ")}.` : what;
}
