import { describe, expect, it } from "vitest";
import { decidedAlready, limitWords, needsSignIn } from "./refusal";

describe("limitWords", () => {
  it.each([
    [{ name: "prompt_bytes", max: 65536, actual: 102419 }, "The prompt is 100 KB; the limit is 64 KB. Shorten it and run again."],
    [{ name: "prompt_bytes", max: "65536", actual: "70000" }, "The prompt is 68.4 KB; the limit is 64 KB. Shorten it and run again."],
    [{ name: "prompt_bytes", max: 1000, actual: 1001 }, "The prompt is 1001 bytes; the limit is 1000 bytes. Shorten it and run again."],
    [{ name: "body_bytes", max: 4 * 1024 * 1024, actual: 5 * 1024 * 1024 }, "The request is 5.0 MB; the limit is 4.0 MB."],
    [{ name: "json_depth", max: 64, actual: 65 }, "The request nests 65 levels deep; the limit is 64."],
    [{ name: "requests_per_second", max: 20 }, "Too many requests at once: the limit is 20 in a burst. Wait a moment and run again."],
    [{ name: "images", max: 4, actual: 5 }, ""],
    [{ name: "open_streams", max: 1, actual: 2 }, "You follow a run already, the most you may at once; close another tab's run first, then run again."],
    [{ name: "open_streams", max: "16", actual: "17" }, "You follow 16 runs already, the most you may at once; close another tab's run first, then run again."],
    [undefined, ""],
  ])("%j", (limit, want) => {
    expect(limitWords(limit)).toBe(want);
  });
});

describe("decisions by the refusal's reason", () => {
  it("asks to sign in for an unauthenticated refusal only", () => {
    expect(needsSignIn("REFUSAL_REASON_UNAUTHENTICATED")).toBe(true);
    expect(needsSignIn("REFUSAL_REASON_HOST_TOKEN_UNKNOWN")).toBe(false);
    expect(needsSignIn(undefined)).toBe(false);
  });
  it("closes a review a decision already took", () => {
    for (const r of ["REFUSAL_REASON_ALREADY_DECIDED", "REFUSAL_REASON_NOT_AWAITING_REVIEW", "REFUSAL_REASON_NO_PENDING_CALL"] as const) {
      expect(decidedAlready(r)).toBe(true);
    }
    expect(decidedAlready("REFUSAL_REASON_UNAVAILABLE")).toBe(false);
    expect(decidedAlready(undefined)).toBe(false);
  });
});
