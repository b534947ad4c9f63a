import { describe, expect, it } from "vitest";
import { leadingSentences, OPERATION_TEXT_MAX } from "../../src/discovery/action-limits";
import { skills } from "../../src/skills/registry";
import { call } from "../helpers";

// OpenAI's GPT Actions take at most 300 characters in an operation's description or summary: an
// agent builder importing /openapi.json must not find the document refused or cut there.
interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  externalDocs?: { url: string };
  requestBody?: { description?: string };
}

async function operations(): Promise<Map<string, Operation>> {
  const res = await call("/openapi.json");
  expect(res.status).toBe(200);
  const doc = await res.json<{ paths: Record<string, Record<string, Operation>> }>();
  return new Map(
    Object.values(doc.paths)
      .flatMap((ops) => Object.values(ops))
      .map((op) => [op.operationId, op]),
  );
}

describe("openapi.json within GPT Actions' limits", () => {
  it("every operation's summary and description fit in 300 characters", async () => {
    const ops = await operations();
    expect(ops.size).toBeGreaterThan(30);
    const over = [...ops.values()].flatMap((op) =>
      (["summary", "description"] as const)
        .filter((k) => (op[k]?.length ?? 0) > OPERATION_TEXT_MAX)
        .map((k) => `${op.operationId}.${k}: ${op[k]?.length}`),
    );
    expect(over).toEqual([]);
  });

  it("a skill's longer description is cut at a sentence end, and kept whole on the request body and its page", async () => {
    const ops = await operations();
    const long = skills.filter((s) => s.description.length > OPERATION_TEXT_MAX);
    expect(long.length).toBeGreaterThan(0);
    for (const s of skills) {
      const op = ops.get(s.id);
      if (s.description.length <= OPERATION_TEXT_MAX) {
        expect(op?.description, s.id).toBe(s.description);
        expect(op?.externalDocs, s.id).toBeUndefined();
        continue;
      }
      const cut = op?.description ?? "";
      expect(cut.length, s.id).toBeGreaterThan(0);
      expect(s.description.startsWith(cut), s.id).toBe(true);
      // Whole sentences: the cut ends a sentence, and the next one starts right after it.
      expect(cut, s.id).toMatch(/\.$/);
      expect(s.description.slice(cut.length), s.id).toMatch(/^\s+[A-Z]/);
      expect(op?.requestBody?.description, s.id).toBe(s.description);
      expect(op?.externalDocs?.url, s.id).toMatch(new RegExp(`/docs/${s.slug}$`));
      const page = await call(new URL(op?.externalDocs?.url ?? "").pathname);
      expect(page.status, s.id).toBe(200);
    }
  });

  it("a first sentence over the cap is cut at a word, with an ellipsis", () => {
    const text = `${"word ".repeat(80).trim()}. Second sentence.`;
    const cut = leadingSentences(text);
    expect(cut.length).toBeLessThanOrEqual(OPERATION_TEXT_MAX);
    expect(cut).toMatch(/^(word )+word…$/);
    // "e.g. base" does not end a sentence.
    expect(leadingSentences(`A network (e.g. base) here. Next ${"x".repeat(300)}`)).toBe(
      "A network (e.g. base) here.",
    );
  });
});
