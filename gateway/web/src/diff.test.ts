import { describe, expect, it } from "vitest";
import { diffLines, hunks } from "./diff";

describe("diffLines", () => {
  it("marks the one changed line of a fix", () => {
    const d = diffLines("a\nb = undefined_name\nc\n", "a\nb = 1\nc\n");
    expect(d).toEqual([
      { op: " ", text: "a" },
      { op: "-", text: "b = undefined_name" },
      { op: "+", text: "b = 1" },
      { op: " ", text: "c" },
    ]);
  });
  it("keeps context around changes and folds the rest", () => {
    const before = ["1", "2", "3", "4", "5", "6", "7", "8"].join("\n");
    const after = ["1", "2", "3", "4", "5", "6", "7", "X"].join("\n");
    const h = hunks(diffLines(before, after), 1);
    expect(h).toEqual([null, { op: " ", text: "7" }, { op: "-", text: "8" }, { op: "+", text: "X" }]);
  });
});
