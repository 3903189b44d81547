import { describe, expect, it } from "vitest";
import { readSSE, type SSEEvent } from "./sse";

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
  for await (const e of readSSE(streamOf(pieces), (c) => comments.push(c))) events.push(e);
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
});
