import { describe, expect, it } from "vitest";
import { afterKinds, beforeKinds, highlighted, legend } from "./kinds";

describe("3D review kinds", () => {
  const changes = { added: ["Wall003", "Door"], modified: ["Wall001"], deleted: ["Column"] };
  it("marks the after model's nodes by the result's changes", () => {
    const k = afterKinds(["Wall001", "Wall002", "Wall003", "Door", "Sketch"], changes);
    expect(k.get("Wall003")).toBe("added");
    expect(k.get("Wall001")).toBe("modified");
    expect(k.get("Wall002")).toBe("context");
    // A changed id with no node (a helper such as a sketch) is not invented.
    expect(highlighted(k)).toEqual(["Door", "Wall001", "Wall003"]);
  });
  it("marks what the script deletes in the model before", () => {
    const k = beforeKinds(["Wall001", "Wall002", "Column"], changes);
    expect(highlighted(k)).toEqual(["Column", "Wall001"]);
    expect(k.get("Column")).toBe("deleted");
  });
  it("says the counts in words", () => {
    const a = afterKinds(["Wall001", "Wall003", "Door"], changes);
    const b = beforeKinds(["Wall001", "Column"], changes);
    expect(legend(a, b)).toBe("2 added · 1 modified · 1 deleted");
    expect(legend(afterKinds(["x"], {}))).toBe("no element changed");
  });
});
