// Reads server-sent events from fetch responses with eventsource-parser.
// EventSource only does GET and cannot send headers, so both the run a POST
// starts and a rejoin are read this way: the credential travels in the
// Authorization header, never in the URL where proxies log it.
import { createParser } from "eventsource-parser";

export interface SSEEvent {
  event: string;
  /** The stream's last event ID when the event arrived (kept across events, as EventSource does). */
  id: string;
  data: string;
}

/** What a stream told its reader to keep: the last event ID and the reconnect delay. */
export interface StreamState {
  lastEventId: string;
  retryMs: number;
}

/** The reconnect delay before a stream sets one (EventSource's usual 3 s). */
export const defaultRetryMs = 3000;

export function newStreamState(lastEventId = ""): StreamState {
  return { lastEventId, retryMs: defaultRetryMs };
}

/**
 * Yields each event of the stream. state follows the stream's `id` and
 * `retry` fields; comments (keepalives) go to onComment. TextDecoder drops a
 * leading byte-order mark, as the EventSource rules ask.
 */
export async function* readSSE(
  body: ReadableStream<Uint8Array>,
  state: StreamState = newStreamState(),
  onComment?: (text: string) => void,
): AsyncGenerator<SSEEvent> {
  const queue: SSEEvent[] = [];
  const parser = createParser({
    onEvent: (m) => {
      if (m.id !== undefined) state.lastEventId = m.id;
      queue.push({ event: m.event || "message", id: state.lastEventId, data: m.data });
    },
    onRetry: (ms) => {
      state.retryMs = ms;
    },
    onComment: (c) => onComment?.(c.trim()),
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let last = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      let text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      // A CR that ends the stream ends its line; the parser holds a trailing
      // CR back as the possible start of a CRLF, so it is completed here.
      if (done && (text || last).endsWith("\r")) text += "\n";
      if (text) last = text;
      parser.feed(text);
      while (queue.length > 0) yield queue.shift()!;
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

/** Options of followSSE. */
export interface FollowOptions {
  /** Headers of every request (the credential), read again on each reconnect. */
  headers: () => Record<string, string>;
  state: StreamState;
  signal: AbortSignal;
  onEvent: (ev: SSEEvent) => void;
  /**
   * Whether the stream is followed to its end: asked after each event (ev)
   * and after each disconnect (no ev), with the count of events the
   * connection brought.
   */
  finished: (eventsThisConnection: number, ev?: SSEEvent) => boolean;
  /** Told of each dropped connection before the reconnect's wait. */
  onDisconnect?: () => void;
  /** Waits ms before a reconnect (a timer; tests may pass their own). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** A stream the server refused: reconnecting would be refused again. */
export class StreamRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body}`);
  }
}

function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/**
 * Follows a GET event stream the way EventSource does, over fetch: a dropped
 * connection is reopened after the stream's `retry` delay with
 * `Last-Event-ID`, until finished says so or signal aborts. A response that
 * is not a 200 event stream ends it with StreamRefused.
 */
export async function followSSE(url: string, o: FollowOptions): Promise<void> {
  const sleep = o.sleep ?? sleepFor;
  while (!o.signal.aborted) {
    const h = { ...o.headers(), Accept: "text/event-stream" } as Record<string, string>;
    if (o.state.lastEventId) h["Last-Event-ID"] = o.state.lastEventId;
    let n = 0;
    let resp: Response | undefined;
    try {
      resp = await fetch(url, { headers: h, signal: o.signal, cache: "no-store" });
    } catch {
      // A network failure: retried below, as EventSource does.
    }
    if (resp && (resp.status !== 200 || !resp.body || !(resp.headers.get("Content-Type") ?? "").startsWith("text/event-stream"))) {
      throw new StreamRefused(resp.status, await resp.text().catch(() => ""));
    }
    if (resp?.body) {
      try {
        for await (const ev of readSSE(resp.body, o.state)) {
          n++;
          o.onEvent(ev);
          if (o.finished(n, ev)) {
            await resp.body.cancel().catch(() => undefined);
            return;
          }
        }
      } catch {
        // The connection broke mid-stream: reconnect below.
      }
    }
    if (o.signal.aborted || o.finished(n)) return;
    o.onDisconnect?.();
    await sleep(o.state.retryMs, o.signal);
  }
}
