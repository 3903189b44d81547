// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { resultInto } from "./parts";

describe("a result's card", () => {
  it("says what the host did on its own and what its rollback check covered", () => {
    const box = document.createElement("div");
    resultInto(
      box,
      {
        previewed: true,
        rollback: "ROLLBACK_EXACTNESS_EXACT",
        rollbackVerified: "verified for the 3 elements the transaction touched",
        hostNotes: ['Revit showed a task dialog TaskDialog_Duplicate_Mark while the script ran: "Elements have duplicate Mark values"; the add-in answered Cancel so Revit was not held waiting for a person'],
      },
      "revit",
    );
    const notes = [...box.querySelectorAll(".host-note")].map((n) => n.textContent);
    expect(notes).toEqual(['Revit showed a task dialog TaskDialog_Duplicate_Mark while the script ran: "Elements have duplicate Mark values"; the add-in answered Cancel so Revit was not held waiting for a person']);
    expect(box.querySelector(".rollback-scope")?.textContent).toBe("Rollback check: verified for the 3 elements the transaction touched.");
    expect(box.querySelector(".rollback-inexact")).toBeNull();
  });

  it("adds neither for a host that compared the whole document and saw no dialog", () => {
    const box = document.createElement("div");
    resultInto(box, { previewed: true, rollback: "ROLLBACK_EXACTNESS_EXACT" }, "freecad");
    expect(box.querySelector(".host-note, .rollback-scope")).toBeNull();
  });
});
