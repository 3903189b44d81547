import { describe, expect, it } from "vitest";
import { partialString } from "./partial";

describe("partialString", () => {
  it.each([
    ["", "", false],
    ['{"descr', "", false],
    ['{"code":"imp', "imp", false],
    ['{"code":"a\\nb', "a\nb", false],
    ['{"code":"a\\', "a", false],
    ['{"code":"a\\u00', "a", false],
    ['{"code":"\\u00e9t\\u00e9"', "été", true],
    ['{"code":"\\ud83d\\ude00"}', "😀", true],
    ['{"description":"adds \\"x\\"","mode":{"a":[1,"}"]},"n":3,"code":"box"}', "box", true],
    ['{"code":12}', "", false],
  ])("%s", (raw, want, done) => {
    expect(partialString(raw, "code")).toEqual([want, done]);
  });

  it("grows with every prefix of a real argument object", () => {
    const code = 'import FreeCAD\nbox = doc.addObject("Part::Box")\nprint(f"{box.Shape.Volume} mm\u00b3 \\\\ done") # 😀\n';
    const raw = JSON.stringify({ description: "adds a box", code });
    let prev = "";
    for (let i = 0; i <= raw.length; i++) {
      const [got] = partialString(raw.slice(0, i), "code");
      expect(got.startsWith(prev)).toBe(true);
      expect(code.startsWith(got)).toBe(true);
      prev = got;
    }
    expect(prev).toBe(code);
  });
});
