import { env } from "cloudflare:test";
import { DomUtils, parseDocument } from "htmlparser2";
import { describe, expect, it } from "vitest";
import { BarChart } from "../../src/pages/charts";
import { skills } from "../../src/skills/registry";

/** The admin dashboard's 14 days, as stats/query.ts lists them. */
const days = Array.from({ length: 14 }, (_, i) =>
  new Date(Date.UTC(2026, 4, 1 + i)).toISOString().slice(0, 10),
);

async function render(labels: string[]) {
  const node = BarChart({
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
    .map((el) => ({ text: DomUtils.textContent(el), x: Number(el.attribs.x) }));
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
    for (let i = 1; i < labels.length; i++) {
      const [a, b] = [labels[i - 1], labels[i]] as [{ text: string; x: number }, { text: string; x: number }];
      expect(b.x - a.x, `${a.text} / ${b.text}`).toBeGreaterThan((width(a.text) + width(b.text)) / 2);
    }
    // Every day keeps its bars and its row in the table view.
    expect(DomUtils.findAll((el) => el.name === "rect", doc.children)).toHaveLength(28);
    const rows = DomUtils.findAll((el) => el.name === "tr", doc.children).slice(1);
    expect(rows.map((r) => DomUtils.textContent(r.children[0] as never))).toEqual(days);
  });

  it("skill ids (cut at 12 characters) are spaced the same way; a few short labels are all drawn", async () => {
    const ids = skills.map((s) => s.id);
    const labels = axisLabels(await render(ids));
    expect(labels.length).toBeGreaterThan(1);
    const last = ids.at(-1) as string;
    expect(labels.at(-1)?.text).toBe(last.length > 12 ? `${last.slice(0, 11)}…` : last);
    for (let i = 1; i < labels.length; i++) {
      const [a, b] = [labels[i - 1], labels[i]] as [{ text: string; x: number }, { text: string; x: number }];
      expect(b.x - a.x, `${a.text} / ${b.text}`).toBeGreaterThan((width(a.text) + width(b.text)) / 2);
    }
    expect(axisLabels(await render(["a", "b", "c"])).map((l) => l.text)).toEqual(["a", "b", "c"]);
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
