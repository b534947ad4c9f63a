import { describe, expect, it } from "vitest";
import { htmlToText } from "../../src/skills/lib/html-convert";
import { postJson } from "../helpers";

const items = (n: number) => "<li>x</li>".repeat(n);
const markers = (text: string) => text.split("\n").flatMap((l) => /^\s*(\S+)\.\s+x$/.exec(l)?.[1] ?? []);

describe("ordered lists are numbered as a browser numbers them", () => {
  it("a Roman list numbered past 3999 is a 200 in decimal, not a 500", async () => {
    const res = await postJson("/api/skills/html-clean", {
      html: `<ol type="i" start="10000">${items(2)}</ol>`,
    });
    expect(res.status).toBe(200);
    expect(markers((await res.json<{ output: string }>()).output)).toEqual(["10000", "10001"]);
  });

  it("markdown numbers such a list too", async () => {
    const res = await postJson("/api/skills/html-clean", {
      html: `<ol type="i" start="10000">${items(2)}</ol>`,
      mode: "markdown",
    });
    expect(res.status).toBe(200);
    expect((await res.json<{ output: string }>()).output).toBe("10000. x\n10001. x");
  });

  it.each([
    // Number by number, as CSS counter styles fall back: only 4000 is past Roman numerals.
    [`<ol type="i" start="3998">${items(3)}</ol>`, ["mmmcmxcviii", "mmmcmxcix", "4000"]],
    [`<ol type="I" start="3997">${items(2)}</ol>`, ["MMMCMXCVII", "MMMCMXCVIII"]],
    [`<ol type="i" start="0">${items(2)}</ol>`, ["0", "i"]],
    [`<ol type="i" start="1e21">${items(1)}</ol>`, ["i"]],
    [`<ol start="abc">${items(2)}</ol>`, ["1", "2"]],
    [`<ol start=" 7th">${items(2)}</ol>`, ["7", "8"]],
    [`<ol type="a" start="-1">${items(2)}</ol>`, ["-1", "0"]],
    [`<ol type="a" start="27">${items(1)}</ol>`, ["aa"]],
  ])("%s", (html, expected) => {
    expect(markers(htmlToText(html))).toEqual(expected);
  });
});
