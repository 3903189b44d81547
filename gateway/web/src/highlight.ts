import { escapeHTML } from "./markdown";

// Light syntax highlighting for the scripts hosts run (Python for FreeCAD and
// Revit): comments, strings, keywords and numbers, nothing more.

const KEYWORDS = new Set(
  (
    "and as assert async await break class continue def del elif else except False finally for " +
    "from global if import in is lambda None nonlocal not or pass raise return True try while with yield"
  ).split(" "),
);

const TOKEN = /(#[^\n]*)|("""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)|\b(\d+(?:\.\d+)?)\b|\b([A-Za-z_]\w*)\b/g;

/** Returns the code as HTML with spans for the token classes. */
export function highlightPython(code: string): string {
  let out = "";
  let last = 0;
  for (const m of code.matchAll(TOKEN)) {
    const at = m.index ?? 0;
    out += escapeHTML(code.slice(last, at));
    const text = escapeHTML(m[0]);
    if (m[1]) out += `<span class="tok-comment">${text}</span>`;
    else if (m[2]) out += `<span class="tok-string">${text}</span>`;
    else if (m[3]) out += `<span class="tok-number">${text}</span>`;
    else if (m[4] && KEYWORDS.has(m[4])) out += `<span class="tok-keyword">${text}</span>`;
    else out += text;
    last = at + m[0].length;
  }
  return out + escapeHTML(code.slice(last));
}
