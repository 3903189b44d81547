import { describe, expect, it } from "vitest";
import { followSSE, newStreamState, readSSE, StreamRefused, type SSEEvent } from "./sse";

function streamOf(pieces: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of pieces) c.enqueue(enc.encode(p));
      c.close();
    },
  });
}

async function collect(pieces: string[]): Promise<{ events: SSEEvent[]; comments: string[] }> {
  const events: SSEEvent[] = [];
  const comments: string[] = [];
  for await (const e of readSSE(streamOf(pieces), newStreamState(), (c) => comments.push(c))) events.push(e);
  return { events, comments };
}

describe("readSSE", () => {
  it("parses frames split anywhere, with comments between them", async () => {
    const text = 'retry: 1000\nevent: metadata\nid: 1\ndata: {"seq":"1"}\n\n: keepalive\n\nevent: message\nid: 2\ndata: {"seq":"2"}\n\n';
    for (const size of [1, 3, 7, text.length]) {
      const pieces: string[] = [];
      for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
      const { events, comments } = await collect(pieces);
      expect(events).toEqual([
        { event: "metadata", id: "1", data: '{"seq":"1"}' },
        { event: "message", id: "2", data: '{"seq":"2"}' },
      ]);
      expect(comments).toEqual(["keepalive"]);
    }
  });

  it("accepts CRLF and CR line ends and joins multi-line data, however split", async () => {
    const text = "data: a\r\ndata: b\r\n\r\nevent: x\rdata: c\r\r";
    for (const pieces of [[text], text.split("")]) {
      const { events } = await collect(pieces);
      expect(events).toEqual([
        { event: "message", id: "", data: "a\nb" },
        { event: "x", id: "", data: "c" },
      ]);
    }
  });

  it("drops a frame cut off by the end of the stream", async () => {
    const { events } = await collect(["event: message\ndata: whole\n\nevent: message\ndata: cut"]);
    expect(events.map((e) => e.data)).toEqual(["whole"]);
  });

  it("keeps multi-byte characters split across reads", async () => {
    const bytes = new TextEncoder().encode("data: é😀\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const b of bytes) c.enqueue(new Uint8Array([b]));
        c.close();
      },
    });
    const out: SSEEvent[] = [];
    for await (const e of readSSE(body)) out.push(e);
    expect(out[0].data).toBe("é😀");
  });

  it("keeps the last event ID across events that carry none, as EventSource does", async () => {
    const state = newStreamState();
    const out: SSEEvent[] = [];
    for await (const e of readSSE(streamOf(["id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"]), state)) out.push(e);
    expect(out.map((e) => e.id)).toEqual(["7", "7", ""]);
    expect(state.lastEventId).toBe("");
    const kept = newStreamState();
    for await (const e of readSSE(streamOf(["id: 7\ndata: a\n\ndata: b\n\n"]), kept)) void e;
    expect(kept.lastEventId).toBe("7");
  });

  it("takes the retry field as the reconnect delay and ignores one that is not a number", async () => {
    const state = newStreamState();
    expect(state.retryMs).toBe(3000);
    for await (const e of readSSE(streamOf(["retry: 4500\n\nretry: soon\n\ndata: x\n\n"]), state)) void e;
    expect(state.retryMs).toBe(4500);
  });

  it("strips a byte-order mark before the first field", async () => {
    const bom = new Uint8Array([0xef, 0xbb, 0xbf]);
    const rest = new TextEncoder().encode("event: metadata\nid: 1\ndata: x\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bom);
        c.enqueue(rest);
        c.close();
      },
    });
    const out: SSEEvent[] = [];
    for await (const e of readSSE(body)) out.push(e);
    expect(out).toEqual([{ event: "metadata", id: "1", data: "x" }]);
  });
});

describe("followSSE", () => {
  type Req = { url: string; headers: Record<string, string> };

  /** A server on fetch: each request gets the next body of bodies. */
  function serve(bodies: (string | number)[]): { requests: Req[]; fetch: typeof fetch } {
    const requests: Req[] = [];
    return {
      requests,
      fetch: (async (url: string, init: RequestInit) => {
        requests.push({ url, headers: init.headers as Record<string, string> });
        const b = bodies.shift() ?? "";
        if (typeof b === "number") return new Response("no", { status: b });
        return new Response(streamOf([b]), { headers: { "Content-Type": "text/event-stream" } });
      }) as unknown as typeof fetch,
    };
  }

  it("reconnects after the stream's retry delay with Last-Event-ID and the credential in a header", async () => {
    const srv = serve(["retry: 4200\nid: 1\ndata: a\n\nid: 2\ndata: b\n\n", "id: 3\nevent: complete\ndata: c\n\n"]);
    const orig = globalThis.fetch;
    globalThis.fetch = srv.fetch;
    const slept: number[] = [];
    const seen: SSEEvent[] = [];
    try {
      await followSSE("/v1/runs/r/events", {
        headers: () => ({ Authorization: "Bearer k" }),
        state: newStreamState(),
        signal: new AbortController().signal,
        onEvent: (e) => seen.push(e),
        finished: () => seen.some((e) => e.event === "complete"),
        sleep: async (ms) => {
          slept.push(ms);
        },
      });
    } finally {
      globalThis.fetch = orig;
    }
    expect(seen.map((e) => e.id)).toEqual(["1", "2", "3"]);
    expect(slept).toEqual([4200]);
    expect(srv.requests.map((r) => r.url)).toEqual(["/v1/runs/r/events", "/v1/runs/r/events"]);
    expect(srv.requests[0].headers["Last-Event-ID"]).toBeUndefined();
    expect(srv.requests[1].headers["Last-Event-ID"]).toBe("2");
    expect(srv.requests[1].headers.Authorization).toBe("Bearer k");
  });

  it("stops with StreamRefused when the server refuses the stream", async () => {
    const srv = serve([401]);
    const orig = globalThis.fetch;
    globalThis.fetch = srv.fetch;
    try {
      await expect(
        followSSE("/e", {
          headers: () => ({}),
          state: newStreamState("5"),
          signal: new AbortController().signal,
          onEvent: () => undefined,
          finished: () => false,
        }),
      ).rejects.toBeInstanceOf(StreamRefused);
    } finally {
      globalThis.fetch = orig;
    }
    expect(srv.requests[0].headers["Last-Event-ID"]).toBe("5");
  });
});
