// The model's prose as HTML: Markdown (GitHub's flavour, with tables) by
// marked, then sanitised by DOMPurify to the few elements prose needs. No
// script, image, style or event handler from the model reaches the page, and
// a link goes only to http(s) or mailto, in a new tab.
import DOMPurify from "dompurify";
import { Marked } from "marked";

export function escapeHTML(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  // A heading in a chat bubble sits under the page's own: # is an h3.
  walkTokens: (t) => {
    if (t.type === "heading") t.depth = Math.min(t.depth + 2, 6);
  },
});

const allowedTags = [
  "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote",
  "ul", "ol", "li", "h3", "h4", "h5", "h6", "a",
  "table", "thead", "tbody", "tr", "th", "td",
];

const purify = DOMPurify();
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Renders the model's Markdown as sanitised HTML. */
export function renderMarkdown(src: string): string {
  const html = marked.parse(src, { async: false });
  return purify.sanitize(html, {
    ALLOWED_TAGS: allowedTags,
    ALLOWED_ATTR: ["href", "title", "align", "start"],
    // Every attribute but these few is held to the link rule below.
    ADD_URI_SAFE_ATTR: ["align", "start"],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  });
}
