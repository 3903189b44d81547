import { describe, expect, it } from "vitest";
import { modelGuide } from "./examples";
import { describeLinked, onlineWords } from "./linked";

describe("describeLinked", () => {
  const now = Date.parse("2026-12-02T07:30:00Z");
  it("names the application, version, document and that it is online", () => {
    expect(describeLinked({ hostId: "h_1", hostApp: "freecad", hostVersion: "0.20.2", document: "house.FCStd", online: true }, now)).toBe(
      "FreeCAD 0.20.2 · document house.FCStd · online",
    );
  });
  it("says since when a host is offline, and when one never connected", () => {
    expect(onlineWords({ hostId: "h_1", online: false, offlineSince: "2026-12-02T07:25:00Z" }, now)).toMatch(/^offline since \d{1,2}[:.]\d{2}/);
    expect(describeLinked({ hostId: "h_2", hostApp: "revit", online: false }, now)).toBe("Revit · no document open · not connected yet");
  });
});

describe("modelGuide", () => {
  it("offers the demo model only the prompt it has recorded", () => {
    const g = modelGuide({ id: "replay/demo" }, "freecad");
    expect(g.examples).toEqual(["Build a small room: four walls on a level, with a door and a window."]);
    expect(g.can).toMatch(/builds a small room/);
  });
  it("offers a real model prompts for the session's application", () => {
    const g = modelGuide({ id: "anthropic/claude", displayName: "Claude" }, "revit");
    expect(g.examples[0]).toMatch(/Level 1/);
    expect(g.can).toMatch(/^writes and runs scripts/);
  });
});
