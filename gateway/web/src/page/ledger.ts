import type { ToolCall } from "../types";

// Which calls this page carried, saw answered, or sent to the host, so a
// script never runs twice.

/** A call's key: (session, call id, result token). */
export function callKey(session: string, tc: ToolCall): string {
  return `${session}|${tc.toolCallId}|${tc.resultToken ?? ""}`;
}

// A set of strings this tab keeps in sessionStorage, so it outlives a
// reload; only the newest `keep` are kept. Without storage it is empty.
function storedSet(name: string, keep: number) {
  const read = (): string[] => {
    try {
      return JSON.parse(sessionStorage.getItem(name) ?? "[]") as string[];
    } catch {
      return [];
    }
  };
  return {
    has: (v: string): boolean => read().includes(v),
    add(v: string): void {
      const list = read();
      if (list.includes(v)) return;
      list.push(v);
      try {
        sessionStorage.setItem(name, JSON.stringify(list.slice(-keep)));
      } catch {
        // Without storage a reload forgets it, as before.
      }
    },
  };
}

export class CallLedger {
  // Calls carried by this page, by (session, call id, result token): a call
  // id may come again with a new token (approved after review, or after a
  // preview), and models reuse call ids across sessions (the demo model
  // does), so neither the id alone nor one set across sessions will do.
  readonly carried = new Set<string>();
  // The latest token seen per (session, call id), and the (session, id,
  // token) whose result is in the run's log: those are never carried again.
  private readonly latestToken = new Map<string, string>();
  readonly answered = new Set<string>();

  // Calls this tab sent to the host, kept across reloads: a page reloaded
  // while the host ran a script lost that script's result, and sending it
  // again could run it twice. Without storage a reload may offer the call
  // again.
  readonly sentToHost = storedSet("nexus.sentToHost", 200);

  // Runs this tab started, kept across reloads: only the tab that started a
  // run carries its calls. Another tab or browser following the run (a
  // reviewer) is a viewer, so a script never runs twice and a viewer without
  // a host never fails the run. Without storage a reloaded tab follows its
  // run as a viewer.
  readonly startedRuns = storedSet("nexus.startedRuns", 100);

  /** Records that the run's log holds the result of the call's latest token. */
  resultSeen(session: string, toolCallId: string): void {
    const token = this.latestToken.get(`${session}|${toolCallId}`) ?? "";
    this.answered.add(`${session}|${toolCallId}|${token}`);
  }

  /** Records the call's newest result token. */
  tokenSeen(session: string, tc: ToolCall): void {
    this.latestToken.set(`${session}|${tc.toolCallId}`, tc.resultToken ?? "");
  }
}
