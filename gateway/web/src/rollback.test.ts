import { describe, expect, it } from "vitest";
import { rollbackInexact, rollbackNote } from "./rollback";

describe("rollback exactness", () => {
  it("reads the host's field, not the error text", () => {
    const r = {
      rollback: "ROLLBACK_EXACTNESS_NOT_EXACT" as const,
      rollbackDifferences: ["could not restore ['Wall001']"],
      error: { type: "NameError", message: "name 'wals' is not defined" },
    };
    expect(rollbackInexact(r)).toBe(true);
    expect(rollbackNote(r)).toBe(
      "Rolled back, but not exactly: the document may still hold part of what the script did. Inspect it before going on. " +
        "Still differs: could not restore ['Wall001'].",
    );
  });
  it("says nothing of an exact rollback, whatever the message says", () => {
    const r = { rollback: "ROLLBACK_EXACTNESS_EXACT" as const, error: { type: "RuntimeError", message: "rollback was not exact in my own words" } };
    expect(rollbackInexact(r)).toBe(false);
    expect(rollbackNote(r)).toBeUndefined();
  });
  it("names a commit whose report script left a change", () => {
    const r = { committed: true, rollback: "ROLLBACK_EXACTNESS_NOT_EXACT" as const };
    expect(rollbackNote(r)).toBe("The change report's rollback was not exact: the document may hold what the report script did.");
  });
});
