// Reads server-sent events from a fetch response. EventSource only does GET,
// and a run starts with a POST, so the run stream is read this way; rejoining
// uses a real EventSource.

export interface SSEEvent {
  event: string;
  id: string;
  data: string;
}

/** Yields each event of the stream; comments (keepalives) go to onComment. */
export async function* readSSE(
  body: ReadableStream<Uint8Array>,
  onComment?: (text: string) => void,
): AsyncGenerator<SSEEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let ev: SSEEvent = { event: "", id: "", data: "" };
  let hasData = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (!done) buf += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
      // A CR at the end may be the first half of a CRLF still in flight.
      if (!done && nl === buf.length - 1 && buf[nl] === "\r") break;
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (hasData) yield { ...ev, event: ev.event || "message" };
        ev = { event: "", id: "", data: "" };
        hasData = false;
        continue;
      }
      const colon = line.indexOf(":");
      if (colon === 0) {
        onComment?.(line.slice(1).trim());
        continue;
      }
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "event") ev.event = val;
      else if (field === "id") ev.id = val;
      else if (field === "data") {
        ev.data = hasData ? ev.data + "\n" + val : val;
        hasData = true;
      }
    }
    if (done) return;
  }
}
