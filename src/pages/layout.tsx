import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import { SITE_NAME } from "../discovery/identity";

/**
 * The one layout every page shares: same header, stylesheet and footer; no inline script or style.
 * The doctype keeps browsers in standards mode (without it every page rendered in quirks mode).
 */
export function Layout(props: { title: string; description?: string; children: Child; scripts?: string[] }) {
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${props.title} · ${SITE_NAME}`}</title>
          {props.description ? <meta name="description" content={props.description} /> : null}
          <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
          <link rel="stylesheet" href="/assets/site.css" />
          {(props.scripts ?? []).map((src) => (
            <script src={src} defer />
          ))}
        </head>
        <body>
          {/* The first tab stop, shown only when focused: past the six header links in one key. */}
          <a class="skip" href="#main">
            Skip to content
          </a>
          <header class="top">
            <a class="brand" href="/">
              <img src="/favicon.svg" alt="" width="28" height="28" />
              <span>{SITE_NAME}</span>
            </a>
            <nav aria-label="Main">
              <a href="/docs">Docs</a>
              <a href="/applet">Try it</a>
              <a href="/llms.txt">llms.txt</a>
              <a href="/AGENTS.md">AGENTS.md</a>
              <a href="/openapi.json">OpenAPI</a>
            </nav>
          </header>
          <main id="main">{props.children}</main>
          <footer class="foot">
            <p>
              Pay per call with x402 (USDC on Base) or card credits.{" "}
              <a href="/contracts/humanless.json">Terms for agents</a>
              {" · "}
              <a href="/api/catalog">Catalog JSON</a>
            </p>
          </footer>
        </body>
      </html>
    </>
  );
}
