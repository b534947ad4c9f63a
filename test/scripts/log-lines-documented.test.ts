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

/** An expression without `as`, `satisfies` and parentheses around it. */
function bare(node: ts.Expression): ts.Expression {
  let n = node;
  while (ts.isAsExpression(n) || ts.isSatisfiesExpression(n) || ts.isParenthesizedExpression(n))
    n = n.expression;
  return n;
}

/** A literal's text, or a template's up to its first interpolation. */
function textOf(node: ts.Expression | undefined): string | undefined {
  if (!node) return undefined;
  const n = bare(node);
  if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) return n.text;
  if (ts.isTemplateExpression(n)) return n.head.text;
  return undefined;
}

/** The levels an expression can be: both sides of a conditional; undefined when not literal. */
function levelsOf(node: ts.Expression): string[] | undefined {
  const n = bare(node);
  if (ts.isNumericLiteral(n)) return []; // a heading's level, not a log line's
  if (ts.isConditionalExpression(n)) {
    const [a, b] = [levelsOf(n.whenTrue), levelsOf(n.whenFalse)];
    return a && b ? [...a, ...b] : undefined;
  }
  const text = textOf(n);
  return text === undefined ? undefined : [text];
}

/**
 * Lines whose words are not a literal where they are written (a helper's argument, a level read
 * from a variable, a line named by its fields), by file and how many: each file's lines are named
 * by this text in the Log lines section, and one more such line in it fails the test.
 */
const NAMED_ELSEWHERE: Record<string, { row: string; lines: number }> = {
  "src/http/after-response.ts": { row: "`error`: `<what> write: …`", lines: 1 },
  // The app's answer to an error (app.onError, and chain() at the step that threw).
  "src/http/app-error.ts": { row: "`error` with `path` and `stack`", lines: 1 },
  "src/index.ts": { row: "`error`: `<part>: <reason>` (Cron)", lines: 4 },
  "src/ops/database.ts": { row: "`database` (Cron)", lines: 1 },
  "src/payments/checkout-create.ts": { row: "`checkout room read failed`", lines: 1 },
  "src/payments/reconcile.ts": { row: "the Cron's `reconcile` summary", lines: 1 },
  "src/payments/refund-warn.ts": { row: "`refund held for a person`", lines: 1 },
  "src/payments/stripe.ts": { row: "`stripe retrieve failed`", lines: 1 },
  "src/routes/did.ts": { row: "`receipt signing key unusable`, `retired receipt keys unreadable`", lines: 1 },
};
/** Helpers whose argument at this index is the words of the line they log. */
const WORDS_ARGUMENT: Record<string, number> = { warnRefundLine: 1, logOnce: 3, storageFailed: 1 };

/**
 * Every warn or error line in src/: an object literal whose `level` can be "warn" or "error" (any
 * key order), read by its `msg`, else its `error` text up to the first interpolation; the words of
 * the helpers above, of Stripe failures (payments/stripe.ts adds the level) and of a plain-text
 * console.warn or console.error. An object whose level is not a literal counts as a line too.
 */
function loggedLines() {
  const named: { file: string; msg: string }[] = [];
  const unnamed: Record<string, number> = {};
  for (const file of sources("src")) {
    const text = readFileSync(path.join(root, file), "utf8");
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isObjectLiteralExpression(node)) {
        const assigned = (key: string) =>
          node.properties.find(
            (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === key,
          )?.initializer;
        const shorthand = node.properties.some(
          (p) => ts.isShorthandPropertyAssignment(p) && p.name.getText(sf) === "level",
        );
        const level = assigned("level");
        const levels = shorthand ? undefined : level && levelsOf(level);
        // A level read from elsewhere is a log line's when the object looks like one: `level`
        // written short, or beside `msg`, `error` or spread fields (not a heading's `level: n`).
        const lineShaped =
          shorthand ||
          assigned("msg") !== undefined ||
          assigned("error") !== undefined ||
          node.properties.some(ts.isSpreadAssignment);
        const unknown = levels === undefined && (shorthand || (level !== undefined && lineShaped));
        if (unknown || levels?.includes("warn") || levels?.includes("error")) {
          const msg = (textOf(assigned("msg")) ?? textOf(assigned("error")) ?? "").trim();
          if (levels && msg.length >= 8) named.push({ file, msg });
          else unnamed[file] = (unnamed[file] ?? 0) + 1;
        }
      }
      if (ts.isCallExpression(node)) {
        const callee = node.expression.getText(sf);
        const at = WORDS_ARGUMENT[callee];
        const words = at === undefined ? undefined : textOf(node.arguments[at]);
        if (words) named.push({ file, msg: words });
        const options = callee === "logStripeFailure" ? node.arguments[2] : undefined;
        if (options && ts.isObjectLiteralExpression(options)) {
          const m = options.properties.find(
            (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === "msg",
          );
          const msg = textOf(m?.initializer);
          if (msg) named.push({ file, msg });
        }
        const plain = /^console\.(warn|error)$/.test(callee) ? textOf(node.arguments[0]) : undefined;
        if (plain) named.push({ file, msg: plain.trim() });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return { named, unnamed };
}

/** The backquoted names in the first column of the Log lines table: where a line is named. */
function namedInTable(ops: string): string[] {
  const section = ops.slice(ops.indexOf("\n## Log lines"));
  return section
    .split("\n")
    .filter((l) => l.startsWith("| "))
    .flatMap((l) => [...(l.split("|")[1] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1] as string));
}

it("every warn and error line the Worker logs has a row in docs/OPERATIONS.md's Log lines (what it means, what to do)", () => {
  const ops = readFileSync(path.join(root, "docs/OPERATIONS.md"), "utf8");
  const names = namedInTable(ops);
  const section = ops.slice(ops.indexOf("\n## Log lines"));
  const { named, unnamed } = loggedLines();
  // The scan still finds the lines (a changed logging shape would make this test vacuous).
  expect(named.length).toBeGreaterThan(50);
  expect(named.filter(({ msg }) => !names.some((name) => name.includes(msg)))).toEqual([]);
  // Lines with no words of their own: exactly those named here, and their rows are there.
  expect(unnamed).toEqual(
    Object.fromEntries(Object.entries(NAMED_ELSEWHERE).map(([f, { lines }]) => [f, lines])),
  );
  expect(Object.values(NAMED_ELSEWHERE).filter(({ row }) => !section.includes(row))).toEqual([]);
});
