import type { Child } from "hono/jsx";

/*
 * Boxes that scroll sideways on a phone (site.css: overflow-x auto). A keyboard scrolls only what
 * has the focus, so each box is a tab stop of its own (axe: scrollable-region-focusable, WCAG
 * 2.1.1); without it a long JSON line or a row of hashes was out of reach without a mouse.
 */

/** A code block: the text as-is, in a box a keyboard can focus and scroll. */
export function CodeBlock(props: { id?: string; children?: Child }) {
  return (
    <pre tabindex={0}>
      <code id={props.id}>{props.children}</code>
    </pre>
  );
}

/** A table's scrolling box: a named region, so focusing it says which table it holds. */
export function TableBox(props: { label: string; children: Child }) {
  return (
    <section class="table-wrap" tabindex={0} aria-label={props.label}>
      {props.children}
    </section>
  );
}
