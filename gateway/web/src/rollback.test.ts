import { describe, expect, it } from "vitest";
import { rollbackInexact, rollbackNote, rollbackScope, rollbackUnverified, rolledBackStatus } from "./rollback";

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
  it("reads a runtime restarted on its last commit as rolled back, said in its own words elsewhere", () => {
    const r = { error: { type: "RuntimeRestarted", condition: "EXEC_CONDITION_RUNTIME_RESTARTED" as const, message: "FreeCAD exited" } };
    expect(rollbackUnverified(r)).toBe(false);
    expect(rolledBackStatus(r)).toBe("rolled back");
    expect(rollbackNote(r)).toBeUndefined();
  });
  it("names a commit whose report script left a change", () => {
    const r = { committed: true, rollback: "ROLLBACK_EXACTNESS_NOT_EXACT" as const };
    expect(rollbackNote(r)).toBe("The change report's rollback was not exact: the document may hold what the report script did.");
  });
  it("reads a rollback the host said nothing of as not verified, never as exact", () => {
    const r = { error: { type: "NameError", message: "name 'wals' is not defined" } };
    expect(rollbackUnverified(r)).toBe(true);
    expect(rolledBackStatus(r)).toBe("rolled back, not verified");
    expect(rollbackNote(r)).toBe(
      "Rolled back, not verified: the host did not say whether the rollback was exact. Inspect the document before relying on it.",
    );
    const preview = { previewed: true };
    expect(rollbackUnverified(preview)).toBe(true);
  });
  it("says an exact rollback is one, and a refused call did not run", () => {
    const exact = { rollback: "ROLLBACK_EXACTNESS_EXACT" as const, error: { type: "NameError" } };
    expect(rolledBackStatus(exact)).toBe("rolled back");
    expect(rollbackUnverified({ rollback: "ROLLBACK_EXACTNESS_EXACT" as const, previewed: true })).toBe(false);
    const refused = { error: { type: "RevisionChanged", message: "the document changed since the preview" } };
    expect(rollbackUnverified(refused)).toBe(false);
    expect(rolledBackStatus(refused)).toBe("not run");
    expect(rollbackNote(refused)).toBeUndefined();
    expect(rollbackUnverified({ committed: true })).toBe(false);
  });
  it("says what a partial verification covered, and nothing when the whole document was compared", () => {
    const r = { previewed: true, rollback: "ROLLBACK_EXACTNESS_EXACT" as const, rollbackVerified: "verified for the 3 elements the transaction touched" };
    expect(rollbackScope(r)).toBe("Rollback check: verified for the 3 elements the transaction touched.");
    expect(rollbackNote(r)).toBeUndefined();
    expect(rollbackScope({ previewed: true, rollback: "ROLLBACK_EXACTNESS_EXACT" as const })).toBeUndefined();
  });
});
