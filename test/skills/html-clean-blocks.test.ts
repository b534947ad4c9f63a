import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { htmlToMd, htmlToText, outputAtLeast } from "../../src/skills/lib/html-convert";
import { analyzeText } from "../../src/skills/lib/stylometry";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Elements a browser lays out as blocks that html-to-text writes inline unless told: their text
 * ran into its neighbours' ("Price$5SizeLarge"). Markdown mode already separated them.
 */
describe("html_clean text mode writes a browser's block elements on lines of their own", () => {
  it.each([
    ["<dl><dt>Price</dt><dd>$5</dd><dt>Size</dt><dd>Large</dd></dl>", "Price\n$5\nSize\nLarge"],
    [
      "<details><summary>More</summary>Hidden text</details><address>1 Main St</address>",
      "More\nHidden text\n1 Main St",
    ],
    ["<fieldset><legend>Leg</legend>Field</fieldset>", "Leg\nField"],
    ["<li>orphan1</li><li>orphan2</li>", "orphan1\norphan2"],
    ["<figure>pic<figcaption>Cap</figcaption></figure>after", "pic\nCap\n\nafter"],
    ["<p>Intro</p><dl><dt>A</dt><dd>1</dd></dl><p>Outro</p>", "Intro\n\nA\n1\n\nOutro"],
    [
      "a<center>c</center>b<hgroup>h</hgroup>c<search>s</search>d<dialog open>x</dialog>e",
      "a\nc\nb\nh\nc\ns\nd\nx\ne",
    ],
    ["<menu><li>m1</li><li>m2</li></menu>", "m1\nm2"],
    // Already blocks to html-to-text: unchanged.
    [
      "<header>h</header><nav>n</nav><main>m</main><section>s</section><article>a</article><aside>x</aside><footer>f</footer><form>o</form>",
      "h\nn\nm\ns\na\nx\nf\no",
    ],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });

  it("each piece of text is a word of its own in both modes", () => {
    const html =
      "<dl><dt>Price</dt><dd>$5</dd></dl><details><summary>More</summary>Hidden</details><address>Main</address><fieldset><legend>Leg</legend>Field</fieldset><li>one</li><li>two</li><figure>pic<figcaption>Cap</figcaption></figure>";
    const words = ["Price", "$5", "More", "Hidden", "Main", "Leg", "Field", "one", "two", "pic", "Cap"];
    expect(htmlToText(html).split(/\s+/)).toEqual(words);
    expect(
      htmlToMd(html)
        .replace(/[-*]/g, " ")
        .split(/\s+/)
        .filter((w) => w !== ""),
    ).toEqual(words);
  });

  it("a list's own items are unchanged: marker and text on one line", () => {
    expect(htmlToText("<p>x</p><ul><li>a</li><li>b<ul><li>c</li></ul></li></ul><ol><li>d</li></ol>")).toBe(
      "x\n\n * a\n * b\n   * c\n\n 1. d",
    );
  });

  it("over HTTP too", async () => {
    const res = await postJson("/api/skills/html-clean", {
      html: "<dl><dt>Price</dt><dd>$5</dd><dt>Size</dt><dd>Large</dd></dl>",
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ output: "Price\n$5\nSize\nLarge", chars: 19 });
  });
});

describe("the new blocks keep the early stop and the size count exact", () => {
  const blocks = "dl dt dd details summary address fieldset legend figure figcaption li menu center".split(
    " ",
  );
  const pieces = [
    ...blocks.flatMap((tag) => [`<${tag}>`, `</${tag}>`]),
    ..."p ul ol blockquote b".split(" ").flatMap((tag) => [`<${tag}>`, `</${tag}>`]),
    "<br>",
    "&amp;",
    "word ",
  ];
  const texts = ["x".repeat(700), "a\n".repeat(300), "one two ".repeat(80)];
  const page = fc
    .array(
      fc.oneof(
        { arbitrary: fc.constantFrom(...pieces), weight: 3 },
        { arbitrary: fc.constantFrom(...texts), weight: 1 },
      ),
      { minLength: 60, maxLength: 160 },
    )
    .map((parts) => `<html><body>${parts.join("")}`);

  it(
    "on random pages of them, ai_detector's stop gives the whole page's first 8,000 characters, and the count stays below the output",
    () => {
      fc.assert(
        fc.property(page, (html) => {
          const whole = htmlToText(html);
          expect(outputAtLeast(html, "text")).toBeLessThanOrEqual(whole.length);
          fc.pre(whole.length > 8000);
          expect(htmlToText(html, ["url"], 8000)).toBe(whole.slice(0, 8000));
        }),
        // A fixed seed: CI runs the same pages every time (other seeds were run while writing it).
        { numRuns: 100, seed: 7 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("ai_detector's url mode reads those blocks as html_clean does", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it(
    "counts the words of a definition list one by one",
    async () => {
      const path = `/pages/blocks-${crypto.randomUUID()}.html`;
      const real = globalThis.fetch;
      vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
        const req = new Request(input, init);
        if (req.url === `${FIXTURE}${path}`)
          return new Response(
            "<html><body><dl><dt>Price</dt><dd>Five dollars</dd><dt>Size</dt><dd>Large</dd></dl></body></html>",
            { headers: { "content-type": "text/html; charset=utf-8" } },
          );
        return real(input, init);
      });
      const res = await postJson("/api/skills/ai-detector", { url: `${FIXTURE}${path}` });
      expect(res.status).toBe(200);
      const body = await res.json<{ text_preview: string; signals: { words: number } }>();
      expect(body.text_preview).toBe("Price Five dollars Size Large");
      expect(body.signals.words).toBe(analyzeText("Price Five dollars Size Large").signals.words);
      expect(body.signals.words).toBe(5);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("html_clean text mode writes a table's caption above its grid", () => {
  it.each([
    ["<table><caption>Cap</caption><tr><td>a</td></tr></table>", "Cap\na"],
    [
      "<p>Intro</p><table><caption>Prices <b>2024</b></caption><tr><th>Item</th><th>Cost</th></tr><tr><td>Tea</td><td>2</td></tr></table><p>Outro</p>",
      "Intro\n\nPrices 2024\nItem   Cost\nTea    2\n\nOutro",
    ],
    // Where a browser puts it too: above the table, wherever it stands among the rows.
    ["<table><tr><td>a</td></tr><caption>Late</caption></table>", "Late\na"],
    ["<table><caption></caption><tr><td>a</td></tr></table>", "a"],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });

  it("as markdown mode does, and as text mode did for a table too big for a grid", () => {
    const html = "<table><caption>Cap</caption><tr><td>a</td></tr></table>";
    expect(htmlToMd(html)).toMatch(/^Cap\n/);
    const big = `<table><caption>Big</caption>${"<tr><td>a</td></tr>".repeat(2001)}</table>`;
    expect(htmlToText(big)).toMatch(/^Big\n+a\n+a\n/);
  });
});
