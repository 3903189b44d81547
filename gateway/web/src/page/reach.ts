import type { Page } from "./page";

// Whether Nexus answers at all. When a request or a stream fails on the
// network (nexus dev restarting, the machine offline), the page says so in
// place of its counting status line, probes until Nexus answers again, and
// then sends what waited (the person's decision) and lets the streams go on.

/** How often the probe asks again, milliseconds. */
const probeEvery = 1500;

/** Whether an error is the network failing rather than an answer of the server. */
export function isNetworkError(e: unknown): boolean {
  return e instanceof TypeError;
}

async function answers(): Promise<boolean> {
  try {
    return (await fetch("/readyz", { cache: "no-store" })).ok;
  } catch {
    return false;
  }
}

/**
 * Marks Nexus unreachable (once) and answers a promise that resolves when it
 * answers again; redraw is told at both ends.
 */
export function awaitReachable(p: Page, redraw: () => void): Promise<void> {
  if (p.reach) return p.reach;
  p.unreachableSince = Date.now();
  redraw();
  p.reach = (async () => {
    while (!(await answers())) await new Promise((r) => setTimeout(r, probeEvery));
    p.unreachableSince = null;
    p.reach = null;
    redraw();
  })();
  return p.reach;
}

/** Asks once whether Nexus answers, after a stream broke; marks it unreachable when not. */
export async function checkReachable(p: Page, redraw: () => void): Promise<void> {
  if (p.reach || (await answers())) return;
  void awaitReachable(p, redraw);
}

/** The status line while Nexus cannot be reached: no counting, what waits. */
export function unreachableWords(p: Page): string {
  const since = new Date(p.unreachableSince ?? Date.now()).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  const waiting = p.decisionWaiting ? ` Your ${p.decisionWaiting} is sent when it is back.` : " Nothing is lost: the run waits on the server.";
  return `Nexus cannot be reached since ${since}; trying again.${waiting}`;
}
