/**
 * Bar charts drawn as inline SVG on the server: no script, no CDN, and colours from CSS classes
 * (static/assets/site.css) so they follow the light or dark scheme. Each chart comes with a table
 * of its numbers, which is what a screen reader reads (the SVG is aria-hidden).
 */

export interface Series {
  name: string;
  /** CSS class of the bars: chart-a, chart-b. */
  cls: string;
  values: number[];
}

const W = 640;
const BASE_H = 220;
// Right: room for the last day's centred label (half of ~72 units) past its bar's centre.
const BASE_PAD = { top: 12, right: 18, bottom: 44, left: 64 };
/** Longest axis label drawn, in characters (a longer one is cut with …). */
const LABEL_MAX = 12;
/**
 * Room one label character takes at the labels' 12 units (site.css .chart-label): 0.6 em. DejaVu
 * Sans, a wide system-ui, draws "2026-05-01" 69.8 units wide (72 allowed), and the gap is room to spare.
 */
const CHAR_W = 7.2;
const LABEL_GAP = 6;
/**
 * Categories (skill ids) are all named, slanted: thinned like dates, ten of fifteen bars went
 * unnamed. At 45° labels one 37-unit slot apart sit 26 units apart, over the 12 of their height;
 * the longest (12 characters) reaches 61 units down, so the chart grows by what that needs.
 */
const SLANT_EXTRA = 36;

/**
 * Every how many bars a label is drawn, so that no two labels overlap: 14 dates ("2026-05-01",
 * ~70 units) in 40-unit slots were drawn on top of one another at every width. The SVG scales
 * uniformly, so labels that clear each other in the viewBox clear each other on any screen.
 */
function labelStep(labels: string[], slot: number): number {
  const longest = Math.max(0, ...labels.map((l) => Math.min(l.length, LABEL_MAX)));
  return Math.max(1, Math.ceil((longest * CHAR_W + LABEL_GAP) / Math.max(1, slot)));
}

/** Grouped vertical bars, one group per label; `format` prints axis and table values. */
export function BarChart(props: {
  id: string;
  title: string;
  labels: string[];
  series: Series[];
  format: (v: number) => string;
  /** The labels name categories, not a sequence: every one is drawn, slanted. */
  categories?: boolean;
}) {
  const { labels, series, format } = props;
  const H = props.categories ? BASE_H + SLANT_EXTRA : BASE_H;
  const PAD = props.categories ? { ...BASE_PAD, bottom: BASE_PAD.bottom + SLANT_EXTRA } : BASE_PAD;
  const max = Math.max(0, ...series.flatMap((s) => s.values));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const group = labels.length ? plotW / labels.length : plotW;
  const barW = Math.max(2, (group * 0.8) / Math.max(1, series.length));
  const y = (v: number) => PAD.top + plotH - (max > 0 ? (v / max) * plotH : 0);
  // Counted from the last bar, so the latest day is always labelled.
  const step = props.categories ? 1 : labelStep(labels, group);
  const cut = (label: string) => (label.length > LABEL_MAX ? `${label.slice(0, LABEL_MAX - 1)}…` : label);
  // A centred label past the right edge is clipped (inline SVG hides its overflow): the last day's
  // is moved in by what sticks out.
  const centre = (i: number, label: string) =>
    Math.min(PAD.left + i * group + group / 2, W - 1 - (cut(label).length * CHAR_W) / 2);
  const labelled = (i: number) => (labels.length - 1 - i) % step === 0;
  return (
    <figure class="chart" id={props.id}>
      <figcaption>{props.title}</figcaption>
      {/*
        The SVG keeps a minimum width (site.css .chart-svg), so its 12-unit labels never render
        smaller than 12 px; a narrower screen scrolls this box sideways, which a keyboard reaches by
        focusing it. The numbers themselves are in the table view below, for every bar.
      */}
      <section
        class="chart-scroll"
        tabindex={0}
        aria-label={`${props.title}: chart (its numbers are in the table view)`}
      >
        <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-hidden="true" class="chart-svg">
          <line
            x1={PAD.left}
            y1={PAD.top + plotH}
            x2={W - PAD.right}
            y2={PAD.top + plotH}
            class="chart-axis"
          />
          <text x={PAD.left - 6} y={PAD.top + 10} text-anchor="end" class="chart-label">
            {format(max)}
          </text>
          <text x={PAD.left - 6} y={PAD.top + plotH} text-anchor="end" class="chart-label">
            {format(0)}
          </text>
          {labels.map((label, i) => (
            <g>
              {series.map((s, j) => {
                const v = s.values[i] ?? 0;
                const x = PAD.left + i * group + group * 0.1 + j * barW;
                return (
                  <rect
                    x={x.toFixed(1)}
                    y={y(v).toFixed(1)}
                    width={barW.toFixed(1)}
                    height={(PAD.top + plotH - y(v)).toFixed(1)}
                    class={s.cls}
                    data-value={String(v)}
                  >
                    <title>{`${label} · ${s.name}: ${format(v)}`}</title>
                  </rect>
                );
              })}
              {props.categories ? (
                <text
                  x={(PAD.left + i * group + group / 2).toFixed(1)}
                  y={H - PAD.bottom + 14}
                  text-anchor="end"
                  transform={`rotate(-45 ${(PAD.left + i * group + group / 2).toFixed(1)} ${H - PAD.bottom + 14})`}
                  class="chart-label"
                >
                  {cut(label)}
                </text>
              ) : labelled(i) ? (
                <text
                  x={centre(i, label).toFixed(1)}
                  y={H - PAD.bottom + 16}
                  text-anchor="middle"
                  class="chart-label"
                >
                  {cut(label)}
                </text>
              ) : null}
            </g>
          ))}
        </svg>
      </section>
      <p class="chart-legend">
        {series.map((s) => (
          <span>
            <span class={`chart-key ${s.cls}`} aria-hidden="true" /> {s.name}
          </span>
        ))}
      </p>
      <details>
        <summary>Table view</summary>
        <table class="chart-table">
          <caption>{props.title}</caption>
          <thead>
            <tr>
              <th scope="col">Label</th>
              {series.map((s) => (
                <th scope="col">{s.name}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {labels.map((label, i) => (
              <tr>
                <th scope="row">{label}</th>
                {series.map((s) => (
                  <td>{format(s.values[i] ?? 0)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
