// Reads a string field out of a JSON object that is still being written.
// The model streams tool arguments a few characters at a time; this lets the
// script appear as it is typed, and every longer input yields a longer prefix.

function skipSpace(s: string, i: number): number {
  while (i < s.length && " \n\r\t".includes(s[i])) i++;
  return i;
}

// Decodes a JSON string body starting after its opening quote, up to the
// last complete character: [text, index after the closing quote, closed].
function decodeString(s: string, i: number): [string, number, boolean] {
  let out = "";
  while (i < s.length) {
    const c = s[i];
    if (c === '"') return [out, i + 1, true];
    if (c !== "\\") {
      out += c;
      i++;
      continue;
    }
    if (i + 1 >= s.length) return [out, i, false];
    const e = s[i + 1];
    if (e === "u") {
      if (i + 6 > s.length) return [out, i, false];
      const code = parseInt(s.slice(i + 2, i + 6), 16);
      if (Number.isNaN(code)) return [out, i, false];
      // A surrogate pair arrives as two escapes; wait for both halves.
      if (code >= 0xd800 && code < 0xdc00) {
        if (i + 12 > s.length) return [out, i, false];
        const lo = parseInt(s.slice(i + 8, i + 12), 16);
        out += String.fromCharCode(code, lo);
        i += 12;
        continue;
      }
      out += String.fromCharCode(code);
      i += 6;
      continue;
    }
    const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f" };
    out += map[e] ?? e;
    i += 2;
  }
  return [out, i, false];
}

// Index after the JSON value at i, or -1 while it is incomplete.
function skipValue(s: string, i: number): number {
  if (i >= s.length) return -1;
  const c = s[i];
  if (c === '"') {
    const [, next, done] = decodeString(s, i + 1);
    return done ? next : -1;
  }
  if (c === "{" || c === "[") {
    let depth = 0;
    while (i < s.length) {
      const d = s[i];
      if (d === '"') {
        const [, next, done] = decodeString(s, i + 1);
        if (!done) return -1;
        i = next;
        continue;
      }
      if (d === "{" || d === "[") depth++;
      if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return -1;
  }
  while (i < s.length && s[i] !== "," && s[i] !== "}") i++;
  return i >= s.length ? -1 : i;
}

/** The decoded prefix of the top-level string field `key` in `raw`, and whether it is complete. */
export function partialString(raw: string, key: string): [string, boolean] {
  let i = skipSpace(raw, 0);
  if (raw[i] !== "{") return ["", false];
  i++;
  for (;;) {
    i = skipSpace(raw, i);
    if (raw[i] !== '"') return ["", false];
    const [name, next, closed] = decodeString(raw, i + 1);
    if (!closed) return ["", false];
    i = skipSpace(raw, next);
    if (raw[i] !== ":") return ["", false];
    i = skipSpace(raw, i + 1);
    if (i >= raw.length) return ["", false];
    if (name === key) {
      if (raw[i] !== '"') return ["", false];
      const [v, , done] = decodeString(raw, i + 1);
      return [v, done];
    }
    i = skipValue(raw, i);
    if (i < 0) return ["", false];
    i = skipSpace(raw, i);
    if (raw[i] !== ",") return ["", false];
    i++;
  }
}
