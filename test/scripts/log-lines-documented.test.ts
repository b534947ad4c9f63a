import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
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

/** A literal's text, or a template's up to its first interpolation. */
function textOf(node: ts.Node | undefined): string | undefined {
  if (!node) return undefined;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) return node.head.text;
  return undefined;
}

/**
 * Lines whose words are not in a literal where they are written: a helper that takes them as an
 * argument (its callers are read below), or a line named by its fields. Each must be named by this
 * text in the Log lines section.
 */
const NAMED_ELSEWHERE: Record<string, string> = {
  "src/app.ts": "`error` with `path` and `stack`",
  "src/index.ts": "`error`: `<part>: <reason>` (Cron)",
  "src/http/after-response.ts": "`error`: `<what> write: …`",
  "src/payments/checkout-create.ts": "`checkout room read failed`, `checkout session record failed`",
  "src/payments/refund-warn.ts": "`refund held for a person`",
  "src/routes/did.ts": "`receipt signing key unusable`, `retired receipt keys unreadable`",
};
/** Helpers that log a line whose `msg` is their argument at this index. */
const MSG_ARGUMENT: Record<string, number> = { warnRefundLine: 1, logOnce: 3 };

/**
 * Every warn or error line in src/: an object literal with `level` "warn" or "error" (any key
 * order), read by its `msg`, else its `error` text up to the first interpolation; the `msg` of the
 * helpers above and of Stripe failures (payments/stripe.ts adds the level).
 */
function loggedLines() {
  const named: { file: string; msg: string }[] = [];
  const unnamed = new Set<string>();
  for (const file of sources("src")) {
    const sf = ts.createSourceFile(
      file,
      readFileSync(path.join(root, file), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
    const visit = (node: ts.Node) => {
      if (ts.isObjectLiteralExpression(node)) {
        const prop = (key: string) =>
          node.properties.find(
            (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === key,
          );
        const level = textOf(prop("level")?.initializer);
        if (level === "warn" || level === "error") {
          const msg = (textOf(prop("msg")?.initializer) ?? textOf(prop("error")?.initializer) ?? "").trim();
          if (msg.length >= 8) named.push({ file, msg });
          else unnamed.add(file);
        }
      }
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
        const name = node.expression.text;
        const at = MSG_ARGUMENT[name];
        const msg = at === undefined ? undefined : textOf(node.arguments[at]);
        if (msg) named.push({ file, msg });
        const options = name === "logStripeFailure" ? node.arguments[2] : undefined;
        if (options && ts.isObjectLiteralExpression(options)) {
          const m = options.properties.find(
            (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === "msg",
          );
          const text = textOf(m?.initializer);
          if (text) named.push({ file, msg: text });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return { named, unnamed: [...unnamed].sort() };
}

it("every warn and error line the Worker logs has a row in docs/OPERATIONS.md's Log lines (what it means, what to do)", () => {
  const ops = readFileSync(path.join(root, "docs/OPERATIONS.md"), "utf8");
  const section = ops.slice(ops.indexOf("\n## Log lines"));
  const { named, unnamed } = loggedLines();
  // The scan still finds the lines (a changed logging shape would make this test vacuous).
  expect(named.length).toBeGreaterThan(50);
  expect(named.filter(({ msg }) => !section.includes(msg))).toEqual([]);
  // A line with no words of its own is one named here, and its row is there.
  expect(unnamed).toEqual(Object.keys(NAMED_ELSEWHERE).sort());
  expect(Object.values(NAMED_ELSEWHERE).filter((row) => !section.includes(row))).toEqual([]);
});
