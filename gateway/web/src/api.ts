import type { CourierFailure, HostInfo, HostResult, LinkedHost, ModelInfo, PendingPairing, Problem, RefusalReason, ReviewPolicy, ReviewVerdict, Session, ToolCall } from "./types";
import type { Limit } from "./refusal";

// The credentials: the API key for the gateway and the pairing token of the
// host runtime. They are kept for this tab only (sessionStorage: a reload
// keeps them, closing the tab forgets them), never in localStorage, where
// every later page of the origin, and anything that reads the profile,
// would find them.
const credentials = new Set(["apiKey", "hostToken"]);

// Settings survive reloads: the model and the runtime's address in
// localStorage, the credentials for this tab only.
export const settings = {
  get(key: string): string {
    return store(key).getItem("nexus." + key) ?? "";
  },
  set(key: string, value: string): void {
    store(key).setItem("nexus." + key, value);
  },
};

function store(key: string): Storage {
  return credentials.has(key) ? sessionStorage : localStorage;
}

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
    /** The gateway limit the request went over, when it says. */
    readonly limit?: Limit,
    /** Why the gateway refused: what the page decides by (the message is for the person). */
    readonly reason?: RefusalReason,
  ) {
    super(message);
  }
}

/** The detail, the limit and the reason of a gateway problem, or the text as it came. */
function errorBody(text: string): { msg: string; limit?: Limit; reason?: RefusalReason } {
  try {
    const p = JSON.parse(text) as Partial<Problem>;
    return { msg: p.detail ?? text, limit: p.limit, reason: p.reason };
  } catch {
    // Not JSON: show it as it came.
    return { msg: text };
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
    const { msg, limit, reason } = errorBody(text);
    throw new APIError(resp.status, `${method} ${path}: ${resp.status} ${msg}`, limit, reason);
  }
  return (text ? JSON.parse(text) : {}) as T;
}

const sid = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;

export const api = {
  /** What the host runtime that printed code said of itself; links nothing. */
  pairing: (userCode: string) => call<PendingPairing>("GET", `/v1/host-pairings/${encodeURIComponent(userCode.trim())}`),
  /** Links the host runtime that printed code to the signed-in person. */
  approvePairing: (userCode: string) => call<LinkedHost>("POST", "/v1/host-pairings:approve", { userCode }),
  models: () => call<{ models?: ModelInfo[]; defaultModel?: string }>("GET", "/v1/models"),
  /** Creates a session; hostId binds it to one linked host ("" lets the gateway pick the person's only one). */
  createSession: (hostApp: string, model: string, reviewPolicy: ReviewPolicy, hostId = "", newDocument = false) =>
    call<Session>("POST", "/v1/sessions", { hostApp, model, reviewPolicy, ...(hostId ? { hostId } : {}), ...(newDocument ? { newDocument } : {}) }),
  /** Deletes a session (one the page made for a prompt the gateway then refused). */
  deleteSession: (id: string) => call<object>("DELETE", sid(id)),
  /** The person's linked desktop hosts, online or not. */
  hosts: () => call<{ linkedHosts?: LinkedHost[] }>("GET", "/v1/hosts"),
  updateSession: (id: string, reviewPolicy: ReviewPolicy) => call<Session>("PATCH", sid(id), { reviewPolicy }),
  sessions: () => call<{ sessions?: Session[]; nextPageToken?: string }>("GET", "/v1/sessions?pageSize=30"),
  session: (id: string) => call<Session>("GET", sid(id)),
  cancel: (id: string) => call<{ runId?: string }>("POST", `${sid(id)}:cancel`, {}),
  /** Decides a call awaiting review; code, with an approval, is the person's edited script. */
  review: (id: string, toolCallId: string, verdict: ReviewVerdict, code?: string) =>
    call<{ verdict?: ReviewVerdict; reviewer?: string }>(
      "POST",
      `${sid(id)}/tool-calls/${encodeURIComponent(toolCallId)}:review`,
      verdict === "REVIEW_VERDICT_DECLINE"
        ? { verdict, reason: "the person reviewing declined to run this script" }
        : code
          ? { verdict, code }
          : { verdict },
    ),
  /** Posts what the host answered, or why the call never reached it. */
  submit: (id: string, call_: ToolCall, answer: { result: HostResult } | { courierFailure: CourierFailure }) =>
    call<{ accepted?: boolean }>(
      "POST",
      `${sid(id)}/tool-results`,
      { toolCallId: call_.toolCallId, resultToken: call_.resultToken, ...answer },
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
  /** The session's document as its host last saved it, and the file's name. */
  document: async (id: string): Promise<{ blob: Blob; fileName: string }> => {
    const resp = await fetch(`${sid(id)}/document`, { headers: headers() });
    if (!resp.ok) {
      const { msg, limit, reason } = errorBody(await resp.text());
      throw new APIError(resp.status, msg, limit, reason);
    }
    const name = /filename="?([^";]+)"?/.exec(resp.headers.get("Content-Disposition") ?? "")?.[1] ?? "document.FCStd";
    return { blob: await resp.blob(), fileName: name };
  },
  /** The 3D model a call's result carried (binary glTF): the state its script left or would leave, or a preview's state before. */
  model: async (id: string, toolCallId: string, state: "before" | "after"): Promise<ArrayBuffer> => {
    const resp = await fetch(`${sid(id)}/calls/${encodeURIComponent(toolCallId)}/model?state=${state}`, { headers: headers() });
    if (!resp.ok) {
      const { msg, limit, reason } = errorBody(await resp.text());
      throw new APIError(resp.status, msg, limit, reason);
    }
    return resp.arrayBuffer();
  },
  /** Starts a run; the response body is the event stream. */
  run: async (id: string, prompt: string, model: string, signal?: AbortSignal): Promise<Response> => {
    const resp = await fetch(`${sid(id)}/runs`, {
      method: "POST",
      signal,
      headers: { ...headers(true), Accept: "text/event-stream" },
      body: JSON.stringify({ prompt, model }),
    });
    if (!resp.ok || !resp.body) {
      const { msg, limit, reason } = errorBody(await resp.text());
      throw new APIError(resp.status, msg, limit, reason);
    }
    return resp;
  },
  /** The rejoin URL of a run's event stream (the credential goes in authHeaders, never here). */
  eventsURL: (runId: string): string => `/v1/runs/${encodeURIComponent(runId)}/events`,
  /** The credential's header, for a stream read with fetch. */
  authHeaders: (): Record<string, string> => headers() as Record<string, string>,
};

/** What the page knows of its host runtime: usable, or why not. */
export type HostState =
  | { ok: true; info: HostInfo }
  | { ok: false; failure: CourierFailure };

function hostBase(hostUrl: string): string {
  return hostUrl.trim().replace(/\/+$/, "");
}

/** Asks the runtime's /v1/info; a failure says which courier failure it is. */
export async function checkHost(hostUrl: string, token: string): Promise<HostState> {
  if (!hostUrl.trim()) {
    return { ok: false, failure: { code: "ERROR_CODE_HOST_NOT_PAIRED", message: "no host runtime is paired with this page" } };
  }
  let resp: Response;
  try {
    resp = await fetch(hostBase(hostUrl) + "/v1/info", { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
  } catch (e) {
    return { ok: false, failure: { code: "ERROR_CODE_HOST_UNREACHABLE", message: `the host runtime at ${hostUrl} did not answer (${String(e)})` } };
  }
  if (resp.status === 401 || resp.status === 403) {
    return {
      ok: false,
      failure: { code: "ERROR_CODE_HOST_UNAUTHORIZED", message: `the host runtime at ${hostUrl} refused the pairing token (HTTP ${resp.status})` },
    };
  }
  if (!resp.ok) {
    return { ok: false, failure: { code: "ERROR_CODE_HOST_UNREACHABLE", message: `the host runtime at ${hostUrl} answered HTTP ${resp.status}` } };
  }
  try {
    return { ok: true, info: (await resp.json()) as HostInfo };
  } catch (e) {
    return { ok: false, failure: { code: "ERROR_CODE_HOST_UNREACHABLE", message: `${hostUrl} is not a host runtime: ${String(e)}` } };
  }
}

/**
 * Carries a tool call to the paired host runtime. It answers the host's
 * result, or a courier failure when the call could not be delivered: no
 * runtime paired, unreachable, token refused, or a runtime of another
 * application than the session's. A failure is never dressed up as a result.
 */
export async function carryToHost(
  hostUrl: string,
  token: string,
  tc: ToolCall,
  hostApp: string,
): Promise<{ result: HostResult } | { courierFailure: CourierFailure }> {
  const path = tc.execute ? "/v1/execute" : tc.exportView ? "/v1/export-view" : "";
  if (!path) return { result: { error: { type: "HostRuntimeError", message: "the tool call carries no host request" } } };
  const state = await checkHost(hostUrl, token);
  if (!state.ok) return { courierFailure: state.failure };
  const want = tc.hostApp || hostApp;
  if (want && state.info.hostApp && state.info.hostApp !== want) {
    return {
      courierFailure: {
        code: "ERROR_CODE_HOST_MISMATCH",
        message: `the runtime at ${hostUrl} serves ${state.info.hostApp}, but this session is for ${want}`,
      },
    };
  }
  let resp: Response;
  try {
    resp = await fetch(hostBase(hostUrl) + path, {
      method: "POST",
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify(tc.execute ?? tc.exportView),
    });
  } catch (e) {
    return {
      courierFailure: {
        code: "ERROR_CODE_HOST_UNREACHABLE",
        message: `the host runtime at ${hostUrl} stopped answering while it was sent the script (${String(e)}); check the document before running again`,
      },
    };
  }
  const text = await resp.text();
  if (resp.status === 401 || resp.status === 403) {
    return {
      courierFailure: { code: "ERROR_CODE_HOST_UNAUTHORIZED", message: `the host runtime refused the pairing token (HTTP ${resp.status})` },
    };
  }
  if (!resp.ok) {
    return { result: { error: { type: "HostRuntimeError", message: `host runtime answered ${resp.status}: ${text.slice(0, 500)}` } } };
  }
  return { result: JSON.parse(text) as HostResult };
}
