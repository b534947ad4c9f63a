import { env } from "cloudflare:test";
import { DomUtils, parseDocument } from "htmlparser2";
import { describe, expect, it } from "vitest";
import { BarChart } from "../../src/pages/charts";
import { skills } from "../../src/skills/registry";

/** The admin dashboard's 14 days, as stats/query.ts lists them. */
const days = Array.from({ length: 14 }, (_, i) =>
  new Date(Date.UTC(2026, 4, 1 + i)).toISOString().slice(0, 10),
);

async function render(labels: string[], categories = false) {
  const node = BarChart({
    categories,
    id: "chart-test",
    title: "Revenue per day by rail (USD)",
    labels,
    series: [
      { name: "x402", cls: "chart-a", values: labels.map((_, i) => i * 1000) },
      { name: "card", cls: "chart-b", values: labels.map(() => 500) },
    ],
    format: (v) => `$${v}`,
  });
  return parseDocument(String(await node.toString()));
}

/** The axis labels under the bars: their text and centre (viewBox units; the first two are the scale). */
function axisLabels(doc: ReturnType<typeof parseDocument>) {
  return DomUtils.findAll((el) => el.name === "text", doc.children)
    .slice(2)
    .map((el) => ({
      text: DomUtils.textContent(el),
      x: Number(el.attribs.x),
      transform: el.attribs.transform,
    }));
}

/** A generous width for a label at the chart's 12 units: 0.65 em a character. */
const width = (text: string) => text.length * 12 * 0.65;

describe("the admin charts' labels", () => {
  it("14 days are labelled every other day, the latest included: no two labels overlap", async () => {
    const doc = await render(days);
    const labels = axisLabels(doc);
    // Every day was labelled in a 40-unit slot, each label ~70 units wide: all drawn on top of one another.
    expect(labels.map((l) => l.text)).toEqual(days.filter((_, i) => (13 - i) % 2 === 0));
    expect(labels.at(-1)?.text).toBe("2026-05-14");
    // Inside the 640-unit viewBox (inline SVG clips what sticks out): the last label's right edge too.
    for (const l of labels) expect(l.x + (l.text.length * 7.2) / 2, l.text).toBeLessThanOrEqual(640);
    for (let i = 1; i < labels.length; i++) {
      const [a, b] = [labels[i - 1], labels[i]] as [{ text: string; x: number }, { text: string; x: number }];
      expect(b.x - a.x, `${a.text} / ${b.text}`).toBeGreaterThan((width(a.text) + width(b.text)) / 2);
    }
    // Every day keeps its bars and its row in the table view.
    expect(DomUtils.findAll((el) => el.name === "rect", doc.children)).toHaveLength(28);
    const rows = DomUtils.findAll((el) => el.name === "tr", doc.children).slice(1);
    expect(rows.map((r) => DomUtils.textContent(r.children[0] as never))).toEqual(days);
  });

  it("skill ids are categories: every one is named (cut at 12 characters), slanted so none overlaps", async () => {
    const ids = skills.map((s) => s.id);
    const doc = await render(ids, true);
    const labels = axisLabels(doc);
    expect(labels.map((l) => l.text)).toEqual(ids.map((id) => (id.length > 12 ? `${id.slice(0, 11)}…` : id)));
    for (const l of labels) expect(l.transform).toMatch(/^rotate\(-45 /);
    // At 45° two labels one slot apart are slot·sin 45° apart, more than their 12-unit height.
    const slot = (labels[1]?.x ?? 0) - (labels[0]?.x ?? 0);
    expect(slot * Math.SQRT1_2).toBeGreaterThan(12);
    // The longest label (12 characters, 86 units) slanted fits under the axis: the chart grew for it.
    const svg = DomUtils.findOne((el) => el.name === "svg", doc.children);
    const height = Number(svg?.attribs.viewbox?.split(" ")[3]);
    const axisY = Number(DomUtils.findOne((el) => el.name === "line", doc.children)?.attribs.y1);
    expect(height - axisY).toBeGreaterThan(12 * 7.2 * Math.SQRT1_2 + 14);
    // Dates stay thinned and upright.
    expect(axisLabels(await render(["a", "b", "c"])).map((l) => [l.text, l.transform])).toEqual([
      ["a", undefined],
      ["b", undefined],
      ["c", undefined],
    ]);
  });

  it("never render below 12 px: the SVG keeps a minimum width and its box scrolls sideways, keyboard-focusable", async () => {
    const doc = await render(days);
    const svg = DomUtils.findOne((el) => el.name === "svg", doc.children);
    const box = svg?.parent as { name?: string; attribs?: Record<string, string> } | null;
    expect(box?.attribs?.class).toBe("chart-scroll");
    expect(box?.attribs?.tabindex).toBe("0");
    expect(box?.attribs?.["aria-label"]).toContain("Revenue per day by rail (USD)");
    expect(svg?.attribs.viewbox).toBe("0 0 640 220");
    const css = await (await env.ASSETS.fetch("https://skills.test/assets/site.css")).text();
    // 40rem is the viewBox's 640 units at 16 px: the labels' 12 units are 12 px or more.
    expect(css).toMatch(/\.chart-svg \{[^}]*min-width: 40rem;/);
    expect(css).toMatch(/\.chart-label \{[^}]*font-size: 12px;/);
    expect(css).toMatch(/\.chart-scroll \{ overflow-x: auto; \}/);
  });
});
