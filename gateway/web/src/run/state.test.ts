import { describe, expect, it } from "vitest";
import type { Phase, ReviewState, StreamChunk } from "../types";
import { initialState, isReplay, reduce, type RunState } from "./state";

const T0 = 1_000;

/** Applies chunks in order, numbering those without a seq after the last. */
function run(chunks: StreamChunk[], from: RunState = initialState("", T0)): RunState {
  return chunks.reduce((s, c, i) => reduce(s, { type: "chunk", chunk: { seq: c.seq ?? String(from.lastSeq + i + 1), runId: "run-1", ...c } }, T0 + i), from);
}

const started: StreamChunk = { metadata: { runStarted: { model: "replay/demo", hostApp: "freecad", prompt: "build a room" } } };
const turn = (phase: Phase = "PHASE_INITIAL"): StreamChunk => ({ metadata: { turnStarted: { phase } } });
const inspect: StreamChunk = {
  toolCall: { toolCallId: "call-1", toolName: "TOOL_NAME_EXECUTE_DATA_COLLECTION", resultToken: "t1", execute: { code: "print(len(doc.Objects))" } },
};
const change = (review: ReviewState, code = "Arch.makeWall()", extra = {}): StreamChunk => ({
  toolCall: { toolCallId: "call-2", toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", resultToken: "t2", review, execute: { code }, ...extra },
});
const result = (id: string, r: object, preview = false): StreamChunk => ({ metadata: { toolResult: { toolCallId: id, result: r, preview } } });

function texts(s: RunState, kind: string): string[] {
  return s.items.filter((i) => i.kind === kind).map((i) => ("text" in i ? i.text : ""));
}

describe("reduce", () => {
  it("gathers streamed text into one block per kind and turn", () => {
    const s = run([started, turn(), { thinking: { text: "look " } }, { thinking: { text: "first" } }, { message: { text: "I will " } }, { message: { text: "inspect." } }]);
    expect(texts(s, "thinking")).toEqual(["look first"]);
    expect(texts(s, "message")).toEqual(["I will inspect."]);
    expect(s.prompt).toBe("build a room");
    expect(s.activity).toMatchObject({ kind: "model", label: "Model turn 1 (first turn): writing" });
  });

  it("says a linked host runs its call, and that it waits while the host is offline", () => {
    const linked = run([started, turn(), change("REVIEW_STATE_UNSPECIFIED", "Arch.makeWall()", { hostId: "h_1" })]);
    expect(linked.cards["call-2"].status).toBe("running");
    expect(linked.activity).toMatchObject({ kind: "host", label: "Host running the script" });
    const offline = run([{ metadata: { hostWaiting: { toolCallId: "call-2", hostId: "h_1", hostApp: "freecad" } } }], linked);
    expect(offline.activity.label).toBe("Waiting for the host to connect");
    expect(texts(offline, "notice").at(-1)).toMatch(/Waiting for freecad host h_1/);
    const first = run([{ metadata: { hostWaiting: { toolCallId: "call-2", hostApp: "freecad", text: "Waiting for a FreeCAD to connect: the call is delivered when it links." } } }], linked);
    expect(first.activity.label).toBe("Waiting for a host to connect");
    expect(texts(first, "notice").at(-1)).toBe("Waiting for a FreeCAD to connect: the call is delivered when it links.");
    const unlinked = run([started, turn(), change("REVIEW_STATE_UNSPECIFIED")]);
    expect(unlinked.cards["call-2"].status).toBe("waiting for the host");
  });

  it("never changes the state it is given", () => {
    const before = run([started, turn(), { message: { text: "a" } }]);
    const frozen = JSON.stringify(before);
    run([{ message: { text: "b" } }, inspect, { complete: {} }], before);
    expect(JSON.stringify(before)).toBe(frozen);
  });

  it("skips a chunk whose seq was applied: a duplicate changes nothing", () => {
    const s = run([started, turn(), { message: { text: "once" } }]);
    const dup: StreamChunk = { seq: "3", runId: "run-1", message: { text: "once" } };
    expect(isReplay(s, dup)).toBe(true);
    expect(reduce(s, { type: "chunk", chunk: dup }, T0)).toBe(s);
    expect(texts(s, "message")).toEqual(["once"]);
  });

  it("a rejoin replays the log from the start and shows each chunk once", () => {
    const log: StreamChunk[] = [started, turn(), { message: { text: "hello" } }, inspect, result("call-1", { stdout: "3" })].map((c, i) => ({ ...c, seq: String(i + 1), runId: "run-1" }));
    const live = log.slice(0, 3).reduce((s, c) => reduce(s, { type: "chunk", chunk: c }, T0), initialState("build a room", T0));
    // The page lost its stream after seq 3 and rejoins from the start of
    // the log (a reload), or after seq 3 (Last-Event-ID): the same page.
    const replayed = log.reduce((s, c) => reduce(s, { type: "chunk", chunk: c }, T0), live);
    const resumed = log.slice(3).reduce((s, c) => reduce(s, { type: "chunk", chunk: c }, T0), live);
    expect(replayed).toEqual(resumed);
    expect(texts(replayed, "message")).toEqual(["hello"]);
    expect(replayed.cards["call-1"].status).toBe("read-only");
    expect(replayed.lastSeq).toBe(5);
  });

  it("a restarted turn drops what it streamed and keeps the calls it sent", () => {
    const typed: StreamChunk = { toolInputDelta: { toolCallId: "call-9", toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", partialJson: '{"code":"imp' } };
    const s = run([
      started, turn(), { message: { text: "kept" } }, inspect,
      turn("PHASE_POST_DATA_COLLECTION"), { thinking: { text: "half" } }, { message: { text: "half a sentence" } }, typed,
      { metadata: { turnRestarted: { text: "the turn is redone on another replica" } } },
    ]);
    expect(texts(s, "message")).toEqual(["kept"]);
    expect(texts(s, "thinking")).toEqual([]);
    expect(s.cards["call-9"]).toBeUndefined();
    expect(s.cards["call-1"]).toBeDefined();
    expect(s.items.filter((i) => i.kind === "marker")).toMatchObject([{ text: "the turn is redone on another replica", restarted: true }]);
    // The redone turn streams after the mark; its text is new, not appended.
    const redone = run([{ message: { text: "again" } }], s);
    expect(texts(redone, "message")).toEqual(["kept", "again"]);
  });

  it("a typed script becomes the call's script, and the merged one replaces it", () => {
    const s = run([turn(), { toolInputDelta: { toolCallId: "call-2", toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", partialJson: '{"code":"Arch.make' } }]);
    expect(s.cards["call-2"]).toMatchObject({ code: "Arch.make", typing: true, status: "" });
    const merged = run([change("REVIEW_STATE_UNSPECIFIED", "Arch.makeWall(length=4000)")], s);
    expect(merged.cards["call-2"]).toMatchObject({ code: "Arch.makeWall(length=4000)", typing: false, status: "waiting for the host" });
  });

  describe("review states", () => {
    it("awaiting, approved, then the result commits", () => {
      const waiting = run([turn(), change("REVIEW_STATE_AWAITING")]);
      expect(waiting.cards["call-2"]).toMatchObject({ status: "awaiting review", reviewOpen: true });
      expect(waiting.activity).toMatchObject({ kind: "review", label: "Awaiting your review: Change the document" });
      const approved = run([{ metadata: { reviewDecided: { toolCallId: "call-2", verdict: "REVIEW_VERDICT_APPROVE", reviewer: "you" } } }], waiting);
      expect(approved.cards["call-2"]).toMatchObject({ status: "approved", reviewOpen: false, decided: "Approved by you" });
      // The signed-in person's own approval never shows their internal user name.
      const own = run([{ metadata: { reviewDecided: { toolCallId: "call-2", verdict: "REVIEW_VERDICT_APPROVE", reviewer: "local" } } }], { ...waiting, self: "local" });
      expect(own.cards["call-2"].decided).toBe("Approved by you");
      const other = run([{ metadata: { reviewDecided: { toolCallId: "call-2", verdict: "REVIEW_VERDICT_APPROVE", reviewer: "ana" } } }], { ...waiting, self: "local" });
      expect(other.cards["call-2"].decided).toBe("Approved by ana");
      const sent = run([change("REVIEW_STATE_APPROVED")], approved);
      expect(sent.cards["call-2"].status).toBe("waiting for the host");
      const done = run([result("call-2", { committed: true })], sent);
      expect(done.cards["call-2"]).toMatchObject({ status: "committed", result: { committed: true } });
    });

    it("declined stays declined when the result says so", () => {
      const s = run([turn(), change("REVIEW_STATE_AWAITING"), { metadata: { reviewDecided: { toolCallId: "call-2", verdict: "REVIEW_VERDICT_DECLINE" } } }, result("call-2", { error: { type: "Declined", message: "declined" } })]);
      expect(s.cards["call-2"]).toMatchObject({ status: "declined", decided: "Declined", reviewOpen: false });
      expect(s.cards["call-2"].result).toBeUndefined();
    });

    it("a preview is shown beside the script and waits for a decision; an edit is previewed again", () => {
      const preview = { committed: true, previewed: true, stdout: "would add 4 walls" };
      let s = run([turn(), change("REVIEW_STATE_PREVIEW"), result("call-2.preview1", preview, true)]);
      expect(s.cards["call-2"]).toMatchObject({ status: "previewed", preview });
      s = run([change("REVIEW_STATE_AWAITING")], s);
      expect(s.cards["call-2"]).toMatchObject({ status: "awaiting review", reviewOpen: true, preview });
      s = run([{ metadata: { reviewDecided: { toolCallId: "call-2", verdict: "REVIEW_VERDICT_APPROVE", edited: true } } }], s);
      expect(s.cards["call-2"]).toMatchObject({ status: "approved", reviewOpen: false, decided: "" });
      expect(s.cards["call-2"].editedNotes).toHaveLength(1);
    });

    it("a failed automation's fix is shown against the failed script", () => {
      const s = run([
        turn(), change("REVIEW_STATE_UNSPECIFIED", "bad()"), result("call-2", { error: { type: "NameError", message: "bad" }, rollback: "ROLLBACK_EXACTNESS_EXACT" }),
        turn("PHASE_EDIT"),
        { toolCall: { toolCallId: "call-3", toolName: "TOOL_NAME_EXECUTE_TASK_AUTOMATION", resultToken: "t3", execute: { code: "good()" } } },
      ]);
      expect(s.cards["call-2"].status).toBe("rolled back");
      expect(s.cards["call-3"]).toMatchObject({ code: "good()", fixOf: "bad()" });
    });

    it("when the run ends, a call still open gets no result and no review", () => {
      const s = run([turn(), change("REVIEW_STATE_AWAITING"), { error: { code: "ERROR_CODE_REVIEW_TIMEOUT", message: "nobody reviewed" } }]);
      expect(s.cards["call-2"]).toMatchObject({ status: "no result", reviewOpen: false });
      expect(s.outcome).toBe("failed");
      expect(s.items.at(-1)).toMatchObject({ kind: "run-error", title: "Nobody reviewed the script in time" });
    });

    it("a full store is said as such, apart from a store that is away", () => {
      const full = run([turn(), { error: { code: "ERROR_CODE_STORE_FULL", message: "save transcript: the state store is full" } }]);
      expect(full.items.at(-1)).toMatchObject({ kind: "run-error", title: "The server's disk is full" });
      const away = run([turn(), { error: { code: "ERROR_CODE_STATE_UNAVAILABLE", message: "save transcript: connection refused" } }]);
      expect(away.items.at(-1)).toMatchObject({ kind: "run-error", title: "The server's store was unavailable" });
    });
  });

  it("what the page did itself: carrying a call, a note", () => {
    let s = run([turn(), inspect]);
    s = reduce(s, { type: "status", id: "call-1", status: "running" }, T0);
    s = reduce(s, { type: "note-error", text: "could not post" }, T0);
    s = reduce(s, { type: "viewer", id: "call-1" }, T0);
    expect(s.cards["call-1"]).toMatchObject({ status: "running", viewer: true });
    expect(texts(s, "note-error")).toEqual(["could not post"]);
    const same = reduce(s, { type: "status", id: "nope", status: "running" }, T0);
    expect(same).toBe(s);
  });
});
