import { describe, expect, it } from "vitest";
import { highlightPython } from "./highlight";
import { renderMarkdown } from "./markdown";

describe("renderMarkdown", () => {
  it.each([
    ["**bold** and `code`", "<p><strong>bold</strong> and <code>code</code></p>"],
    ["- a\n- b", "<ul><li>a</li><li>b</li></ul>"],
    ["1. a\n2. b", "<ol><li>a</li><li>b</li></ol>"],
    ["# Title", "<h3>Title</h3>"],
    ["```python\nx = 1 < 2\n```", "<pre><code>x = 1 &lt; 2</code></pre>"],
    ["[docs](https://example.org/a)", '<p><a href="https://example.org/a" rel="noopener noreferrer" target="_blank">docs</a></p>'],
  ])("%s", (src, html) => {
    expect(renderMarkdown(src)).toBe(html);
  });

  it.each([
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[x](javascript:alert(1))",
    '[x](https://a.org/"onmouseover="alert(1))',
  ])("never emits markup from the model: %s", (src) => {
    const html = renderMarkdown(src);
    expect(html).not.toMatch(/<script|<img|href="javascript|onerror="|" onmouseover/);
  });
});

describe("highlightPython", () => {
  it("marks keywords, strings, comments and numbers and escapes the rest", () => {
    expect(highlightPython('import x # <b>\ny = "a<b" + 2')).toBe(
      '<span class="tok-keyword">import</span> x <span class="tok-comment"># &lt;b&gt;</span>\n' +
        'y = <span class="tok-string">&quot;a&lt;b&quot;</span> + <span class="tok-number">2</span>',
    );
  });
});
