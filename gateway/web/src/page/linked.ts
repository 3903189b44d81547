import { api } from "../api";
import type { LinkedHost } from "../types";
import type { Page } from "./page";

// The person's linked desktop hosts (GET /v1/hosts): which one the shown
// session is bound to, whether it is online or since when it is not, and
// which one a new session will bind to.

const appNames: Record<string, string> = { freecad: "FreeCAD", revit: "Revit" };

/** The application's name as its users write it. */
export function appName(hostApp: string | undefined): string {
  return appNames[hostApp ?? ""] ?? (hostApp || "host");
}

function when(iso: string, now: number): string {
  const d = new Date(iso);
  const sameDay = new Date(now).toDateString() === d.toDateString();
  return sameDay ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleString();
}

/** Whether it is online, and if not since when, in words. */
export function onlineWords(h: LinkedHost, now = Date.now()): string {
  if (h.online) return "online";
  return h.offlineSince ? `offline since ${when(h.offlineSince, now)}` : "not connected yet";
}

/** The open document, said to be one (its name alone reads like the host's). */
export function documentWords(name: string | undefined): string {
  return name ? `document ${name}` : "no document open";
}

/** A linked host in one line: application, version, document, online. */
export function describeLinked(h: LinkedHost, now = Date.now()): string {
  const app = [appName(h.hostApp), h.hostVersion].filter(Boolean).join(" ");
  return `${app} · ${documentWords(h.document)} · ${onlineWords(h, now)}`;
}

/** The application the page's sessions are for: its linked hosts', else its paired runtime's, else FreeCAD. */
export function pageHostApp(p: Page): string {
  if (p.sessionId && p.sessionHostApp) return p.sessionHostApp;
  const chosen = p.linkedHosts?.find((h) => h.hostId === p.chosenHostId);
  return chosen?.hostApp || (p.hostState?.ok && p.hostState.info.hostApp) || p.linkedHosts?.[0]?.hostApp || "freecad";
}

/** The linked hosts of an application. */
export function hostsOf(p: Page, hostApp: string): LinkedHost[] {
  return (p.linkedHosts ?? []).filter((h) => h.hostApp === hostApp);
}

/**
 * The linked host the shown session's calls go to; for a new session the
 * one it will bind to (the one picked, or the person's only one). null when
 * there is none, or several and none picked yet.
 */
export function shownHost(p: Page): LinkedHost | null {
  const hosts = p.linkedHosts ?? [];
  if (p.sessionId) return hosts.find((h) => h.hostId === p.sessionHostId) ?? null;
  if (p.chosenHostId) return hosts.find((h) => h.hostId === p.chosenHostId) ?? null;
  const own = hostsOf(p, pageHostApp(p));
  return own.length === 1 ? own[0] : null;
}

/** Reads the person's linked hosts; a gateway without them lists none. */
export async function loadLinkedHosts(p: Page): Promise<void> {
  try {
    p.linkedHosts = (await api.hosts()).linkedHosts ?? [];
  } catch {
    // An older gateway, or not signed in yet: the page's own runtime is all.
    p.linkedHosts = p.linkedHosts ?? [];
  }
}
