// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { highlightPython } from "./highlight";
import { renderMarkdown } from "./markdown";

/** The rendered HTML as a DOM fragment, to ask what it holds. */
function dom(src: string): HTMLElement {
  const div = document.createElement("div");
  div.innerHTML = renderMarkdown(src);
  return div;
}

describe("renderMarkdown", () => {
  it.each([
    ["**bold** and `code`", "<p><strong>bold</strong> and <code>code</code></p>"],
    ["# Title", "<h3>Title</h3>"],
    ["```python\nx = 1 < 2\n```", '<pre><code>x = 1 &lt; 2\n</code></pre>'],
    ["[docs](https://example.org/a)", '<p><a href="https://example.org/a" target="_blank" rel="noopener noreferrer">docs</a></p>'],
  ])("%s", (src, html) => {
    expect(renderMarkdown(src).trim()).toBe(html);
  });

  it("renders a table with its header, alignment and cells", () => {
    const d = dom("| Room | Area |\n| :--- | ---: |\n| Kitchen | 12.5 m² |\n| Hall | 6 m² |");
    const rows = [...d.querySelectorAll("table tr")].map((tr) => [...tr.children].map((c) => `${c.tagName}:${c.textContent}`));
    expect(rows).toEqual([
      ["TH:Room", "TH:Area"],
      ["TD:Kitchen", "TD:12.5 m²"],
      ["TD:Hall", "TD:6 m²"],
    ]);
    expect(d.querySelector("td:last-child")?.getAttribute("align")).toBe("right");
  });

  it("renders a nested list inside its item, and a blockquote", () => {
    const d = dom("- Level 1\n  - Wall A\n  - Wall B\n- Level 2\n\n> checked twice");
    const outer = d.querySelector(":scope > ul")!;
    expect([...outer.children].map((li) => li.firstChild?.textContent?.trim())).toEqual(["Level 1", "Level 2"]);
    expect([...outer.querySelectorAll(":scope > li > ul > li")].map((li) => li.textContent)).toEqual(["Wall A", "Wall B"]);
    expect(d.querySelector("blockquote")?.textContent?.trim()).toBe("checked twice");
  });

  it.each([
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "![pixel](https://attacker.example/p.png)",
    "[x](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    "[x](JaVaScRiPt:alert(1))",
    '<p onclick="alert(1)" style="color:red">x</p>',
    '[x](https://a.org/"onmouseover="alert(1))',
    "<iframe src=https://a.org></iframe><form><input></form>",
  ])("renders inert: %s", (src) => {
    const d = dom(src);
    expect(d.querySelectorAll("script, img, iframe, form, input, style").length).toBe(0);
    for (const el of d.querySelectorAll("*")) {
      for (const a of el.attributes) {
        expect(a.name).not.toMatch(/^on|^style$/);
        if (a.name === "href") expect(a.value).toMatch(/^https?:/);
      }
    }
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
