import type { HostState } from "../api";
import type { RunView } from "../run/render";
import type { ModelInfo } from "../types";
import { pageElements, type Elements } from "./dom";
import { CallLedger } from "./ledger";

// The page's state, one object handed to each part of the page instead of
// bindings each module would keep for itself.

export interface Page {
  readonly el: Elements;
  readonly calls: CallLedger;
  // The session shown comes from the page's URL (?session=ID), so a reload
  // or a shared link reopens it.
  sessionId: string;
  sessionHostApp: string;
  // The run this page is starting or following live, if any, and the last
  // run shown (for the status line once it ended).
  active: RunView | null;
  lastView: RunView | null;
  running: boolean;
  // Bumped whenever another session is opened: work for the old one stops.
  generation: number;
  // Ends the event streams of the session on show (without ending their runs).
  readonly followers: Set<() => void>;
  runAbort: AbortController | null;
  // The host runtime the page carries calls to, as last saved, what its
  // /v1/info last said, and the check under way.
  readonly host: { url: string; token: string };
  hostState: HostState | null;
  checking: Promise<void> | null;
  models: ModelInfo[];
  needsKey: boolean;
  // Whether the transcript keeps to its end as it grows.
  pinned: boolean;
}

/** The page as it opens: no session, no run, the host not yet checked. */
export function newPage(): Page {
  return {
    el: pageElements(),
    calls: new CallLedger(),
    sessionId: "",
    sessionHostApp: "",
    active: null,
    lastView: null,
    running: false,
    generation: 0,
    followers: new Set(),
    runAbort: null,
    host: { url: "", token: "" },
    hostState: null,
    checking: null,
    models: [],
    needsKey: false,
    pinned: true,
  };
}
