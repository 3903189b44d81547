import type { HostState } from "../api";
import type { RunView } from "../run/render";
import type { LinkedHost, ModelInfo } from "../types";
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
  // What the header calls it: its first prompt ("" before it has one).
  sessionTitle: string;
  sessionHostApp: string;
  // The linked host the session is bound to ("" for none yet), and who owns
  // it: the signed-in person, whose own approvals the page calls theirs.
  sessionHostId: string;
  sessionOwner: string;
  // Whether the session shown has a run: until then the first screen shows.
  hasRuns: boolean;
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
  // The person's linked hosts as GET /v1/hosts last said (null before it
  // answered), and the one they picked for the next new session.
  linkedHosts: LinkedHost[] | null;
  chosenHostId: string;
  // The runs this page saw end: the session list, read a moment before a
  // run's end reached the server's list, does not call them running.
  readonly endedRuns: Set<string>;
  // Whether the next new session starts on a new, empty document.
  newDocument: boolean;
  checking: Promise<void> | null;
  models: ModelInfo[];
  needsKey: boolean;
  // Whether the transcript keeps to its end as it grows.
  pinned: boolean;
  // Since when Nexus answers nothing (null while it does), the probe that
  // waits for it to be back, and the decision waiting to be sent then.
  unreachableSince: number | null;
  reach: Promise<void> | null;
  decisionWaiting: string;
}

/** The page as it opens: no session, no run, the host not yet checked. */
export function newPage(): Page {
  return {
    el: pageElements(),
    calls: new CallLedger(),
    sessionId: "",
    sessionTitle: "",
    sessionHostApp: "",
    sessionHostId: "",
    sessionOwner: "",
    hasRuns: false,
    active: null,
    lastView: null,
    running: false,
    generation: 0,
    followers: new Set(),
    runAbort: null,
    host: { url: "", token: "" },
    hostState: null,
    linkedHosts: null,
    chosenHostId: "",
    endedRuns: new Set(),
    newDocument: false,
    checking: null,
    models: [],
    needsKey: false,
    pinned: true,
    unreachableSince: null,
    reach: null,
    decisionWaiting: "",
  };
}
