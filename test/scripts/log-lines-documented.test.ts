import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const sources = (dir: string): string[] =>
  readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : /\.tsx?$/.test(e.name)
        ? [path.join(dir, e.name)]
        : [],
  );

/**
 * Every `msg` of a warn or error line in src/: its text up to the first interpolation. Lines are
 * object literals with `level` before `msg`, as every logger of ours writes them.
 */
function loggedMessages(): { file: string; msg: string }[] {
  const found: { file: string; msg: string }[] = [];
  for (const file of sources("src")) {
    const text = readFileSync(path.join(root, file), "utf8");
    for (const m of text.matchAll(
      /level: "(?:warn|error)",[^{}]{0,400}?\bmsg:\s*(?:"((?:[^"\\]|\\.)*)"|`([^`$]*))/g,
    )) {
      const msg = (m[1] ?? m[2] ?? "").trim();
      if (msg.length >= 8) found.push({ file, msg });
    }
    // Stripe failures go through one logger (payments/stripe.ts), which adds the level.
    for (const m of text.matchAll(/logStripeFailure\([^{}]*\{\s*msg:\s*"((?:[^"\\]|\\.)*)"/g))
      found.push({ file, msg: m[1] as string });
  }
  return found;
}

it("every warn and error line the Worker logs has a row in docs/OPERATIONS.md's Log lines (what it means, what to do)", () => {
  const ops = readFileSync(path.join(root, "docs/OPERATIONS.md"), "utf8");
  const section = ops.slice(ops.indexOf("\n## Log lines"));
  const logged = loggedMessages();
  // The scan itself still finds the lines (a changed logging shape would make this test vacuous).
  expect(logged.length).toBeGreaterThan(30);
  const undocumented = logged.filter(({ msg }) => !section.includes(msg));
  expect(undocumented).toEqual([]);
});
