import type { ModelInfo } from "../types";

// What the model picked can do, and prompts that work on it, for the first
// screen. The recorded models know only their recordings: the demo one
// prompt, the expert the eval tasks that start from an empty document.

export interface ModelGuide {
  /** What the model does, said to a person meeting it. */
  can: string;
  /** Prompts that work on it, the first one the input's placeholder. */
  examples: string[];
}

const room = "Build a small room: four walls on a level, with a door and a window.";

const recorded: Record<string, ModelGuide> = {
  "replay/demo": {
    can:
      "The demo model replays one recorded session: it inspects the document, builds a small room of four walls, a door and a window, " +
      "fixes its own first mistake, and checks the result. Any other request gets an answer saying how to set up a real model.",
    examples: [room],
  },
  "replay/expert": {
    can: "The expert model plays the reference solutions of the nexus eval tasks: it solves those tasks' prompts and no others.",
    examples: [
      "Build a 4 m by 3 m room with its south-west corner at the origin: four 200 mm walls, 2.7 m high, centred on the rectangle's edges, on a new level named Level 1.",
      "Add a 200 mm thick floor slab, 6 m along X by 4 m along Y, with its south-west corner at the origin and its top face at z = 0.",
      "Create two levels: Level 1 at elevation 0 and Level 2 at 3000 mm.",
    ],
  },
};

const byHost: Record<string, string[]> = {
  freecad: [room, "Add a 200 mm thick floor slab, 6 m by 4 m, with its top face at z = 0.", "List the walls in the document with their lengths and heights."],
  revit: ["Build a small room on Level 1 with a door.", "List the walls on Level 1 with their lengths.", "Create two levels: Level 1 at elevation 0 and Level 2 at 3000 mm."],
};

/** What model can do on hostApp's documents (said after its name), and prompts to start from. */
export function modelGuide(model: ModelInfo | undefined, hostApp: string): ModelGuide {
  const known = model && recorded[model.id];
  if (known) return known;
  return {
    can: "writes and runs scripts for what you describe, reading the document first and checking what changed.",
    examples: byHost[hostApp] ?? byHost.freecad,
  };
}
