import type { HostResult, ModelInfo, Session, ToolCall } from "./types";

// Settings survive reloads in localStorage: the API key for the gateway and
// the paired host runtime.
export const settings = {
  get(key: string): string {
    return localStorage.getItem("nexus." + key) ?? "";
  },
  set(key: string, value: string): void {
    localStorage.setItem("nexus." + key, value);
  },
};

/**
 * The host pairing secret nexus dev prints, carried by the URL it prints
 * (#pair=...). It is kept for this tab only and taken out of the address bar,
 * so it is neither bookmarked nor shared with the page's URL.
 */
export function pairingSecret(): string {
  const m = /(?:^#|&)pair=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("nexus.pairingSecret", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("nexus.pairingSecret") ?? "";
}

export class APIError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function headers(json = false): HeadersInit {
  const h: Record<string, string> = {};
  const key = settings.get("apiKey");
  if (key) h.Authorization = "Bearer " + key;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

async function call<T>(method: string, path: string, body?: unknown, extra?: Record<string, string>): Promise<T> {
  const resp = await fetch(path, {
    method,
    headers: { ...headers(body !== undefined), ...extra },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  if (!resp.ok) {
    let msg = text;
    try {
      msg = JSON.parse(text).error?.message ?? text;
    } catch {
      // Not JSON: show it as it came.
    }
    throw new APIError(resp.status, `${method} ${path}: ${resp.status} ${msg}`);
  }
  return (text ? JSON.parse(text) : {}) as T;
}

export const api = {
  models: () => call<{ models?: ModelInfo[]; defaultModel?: string }>("GET", "/v1/models"),
  createSession: (hostApp: string, model: string) => call<Session>("POST", "/v1/sessions", { hostApp, model }),
  sessions: () => call<{ sessions?: Session[] }>("GET", "/v1/sessions"),
  session: (id: string) => call<Session>("GET", `/v1/sessions/${encodeURIComponent(id)}`),
  cancel: (id: string) => call<{ runId?: string }>("POST", `/v1/sessions/${encodeURIComponent(id)}:cancel`, {}),
  submit: (id: string, call_: ToolCall, result: HostResult) =>
    call<{ accepted?: boolean }>(
      "POST",
      `/v1/sessions/${encodeURIComponent(id)}/tool-results`,
      { toolCallId: call_.toolCallId, resultToken: call_.resultToken, result },
      // The run's trace context, so the result joins the run's trace.
      call_.traceparent ? { traceparent: call_.traceparent } : undefined,
    ),
  hostPairing: async (): Promise<{ hostUrl?: string; hostToken?: string } | null> => {
    const secret = pairingSecret();
    if (!secret) return null;
    try {
      return await call("GET", "/v1/dev/host-pairing", undefined, { "X-Nexus-Pairing-Secret": secret });
    } catch {
      return null;
    }
  },
  /** Starts a run; the response body is the event stream. */
  run: async (id: string, prompt: string, model: string, signal?: AbortSignal): Promise<Response> => {
    const resp = await fetch(`/v1/sessions/${encodeURIComponent(id)}/runs`, {
      method: "POST",
      signal,
      headers: { ...headers(true), Accept: "text/event-stream" },
      body: JSON.stringify({ prompt, model }),
    });
    if (!resp.ok || !resp.body) {
      const text = await resp.text();
      let msg = text;
      try {
        msg = JSON.parse(text).error?.message ?? text;
      } catch {
        // Not JSON.
      }
      throw new APIError(resp.status, msg);
    }
    return resp;
  },
  /** The rejoin URL for an EventSource, which cannot send headers. */
  eventsURL: (runId: string, after: number): string => {
    const q = new URLSearchParams();
    if (after > 0) q.set("lastEventId", String(after));
    const key = settings.get("apiKey");
    if (key) q.set("access_token", key);
    const qs = q.toString();
    return `/v1/runs/${encodeURIComponent(runId)}/events${qs ? "?" + qs : ""}`;
  },
};

/** Carries a tool call to the paired host runtime and returns what it answered. */
export async function carryToHost(hostUrl: string, token: string, tc: ToolCall): Promise<HostResult> {
  const path = tc.execute ? "/v1/execute" : tc.exportView ? "/v1/export-view" : "";
  if (!path) return { error: { type: "HostRuntimeError", message: "the tool call carries no host request" } };
  if (!hostUrl) {
    return { error: { type: "HostRuntimeError", message: "no host runtime is paired: set its URL and token" } };
  }
  try {
    const resp = await fetch(hostUrl.replace(/\/+$/, "") + path, {
      method: "POST",
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify(tc.execute ?? tc.exportView),
    });
    const text = await resp.text();
    if (!resp.ok) {
      return { error: { type: "HostRuntimeError", message: `host runtime answered ${resp.status}: ${text.slice(0, 500)}` } };
    }
    return JSON.parse(text) as HostResult;
  } catch (e) {
    return { error: { type: "HostRuntimeError", message: `host runtime at ${hostUrl} unreachable: ${String(e)}` } };
  }
}

export async function hostInfo(hostUrl: string, token: string): Promise<{ hostApp?: string; hostVersion?: string; document?: string }> {
  const resp = await fetch(hostUrl.replace(/\/+$/, "") + "/v1/info", { headers: { Authorization: "Bearer " + token } });
  if (!resp.ok) throw new Error(`host runtime answered ${resp.status}`);
  return resp.json();
}
