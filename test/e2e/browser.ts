import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

export const SCREENSHOTS = path.resolve("test-output/screenshots");

/** Debian's chromium driven by playwright-core, with the flags this closed network needs. */
export async function launch(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** Collects console errors and page errors, which every page test asserts are absent. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    // The browser's own /favicon.ico probe (on the Stripe emulator's origin) is not a page error.
    if (m.type() === "error" && !m.location().url.endsWith("/favicon.ico"))
      errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => errors.push(e.message));
  return errors;
}
