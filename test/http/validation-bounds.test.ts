import { describe, expect, it } from "vitest";
import * as z from "zod";
import { MAX_DETAIL_ITEMS, validate } from "../../src/http/validation";
import { inputJsonSchema, skillById } from "../../src/skills/registry";
import { call, type ErrorItem, mcpInit, postJson } from "../helpers";
import { checkoutSeeingStripe } from "../payments/checkout-helpers";

// A 422 lists at most MAX_DETAIL_ITEMS items, produced in bounded time, whatever the body. Before,
// a list of n bad items was n items (100,000 ones: 10 MB; 150,000: a 500, zod's spread of the
// issues into the parent's overflowed the stack; 2.5 million: a 500 after 931 ms).

/** Under this, an answer is bounded (the bodies below are up to 5 MB). */
const SMALL = 64 * 1024;

function seoSkill() {
  const seo = skillById("seo");
  if (!seo) throw new Error("seo missing from the registry");
  return seo;
}

const ones = (n: number) => `[${"1,".repeat(n - 1)}1]`;
const seoBody = (keywords: string) => `{"url":"https://example.com/","keywords":${keywords}}`;

/** The item pydantic gives for a number in a list of strings, at index i of `loc`. */
const stringType = (loc: (string | number)[], i: number): ErrorItem => ({
  loc: [...loc, i],
  msg: "Input should be a valid string",
  type: "string_type",
  input: 1,
});

async function bounded(res: Response) {
  expect(res.status).toBe(422);
  const text = await res.text();
  expect(text.length).toBeLessThan(SMALL);
  return (JSON.parse(text) as { detail: ErrorItem[] }).detail;
}

describe("a list of strings with many bad items (seo keywords): the first 100, never a 500", () => {
  it.each([[101], [100_000], [150_000], [2_500_000]])(
    "%i numbers: 422 with the first 100 items",
    async (n) => {
      const t0 = performance.now();
      const detail = await bounded(await postJson("/api/skills/seo", seoBody(ones(n))));
      expect(detail).toHaveLength(MAX_DETAIL_ITEMS);
      expect(detail).toEqual(
        Array.from({ length: MAX_DETAIL_ITEMS }, (_, i) => stringType(["body", "keywords"], i)),
      );
      // Bounded work: before, 2.5 million took 931 ms to reach its 500.
      expect(performance.now() - t0).toBeLessThan(5000);
    },
    30_000,
  );

  it("bad items after many good ones are found where they are", async () => {
    const good = Array.from({ length: 150_000 }, () => '"k"').join(",");
    const detail = await bounded(
      await postJson("/api/skills/seo", seoBody(`[${good},${ones(150_000).slice(1)}`)),
    );
    expect(detail).toHaveLength(MAX_DETAIL_ITEMS);
    expect(detail[0]).toEqual(stringType(["body", "keywords"], 150_000));
    expect(detail.at(-1)).toEqual(stringType(["body", "keywords"], 150_000 + MAX_DETAIL_ITEMS - 1));
  });

  it("a few bad items are each reported, as before", async () => {
    const detail = await bounded(await postJson("/api/skills/seo", seoBody('["a",1,"b",2]')));
    expect(detail).toEqual([
      stringType(["body", "keywords"], 1),
      { ...stringType(["body", "keywords"], 3), input: 2 },
    ]);
  });

  it("a long list of strings is still taken (the spec bounds none; the audit reads the first 20)", () => {
    const keywords = Array.from({ length: 300_000 }, (_, i) => `k${i}`);
    const parsed = seoSkill().input.safeParse({
      url: "https://example.com/",
      keywords,
    });
    expect(parsed.success).toBe(true);
    expect((parsed.data as { keywords: string[] }).keywords).toHaveLength(300_000);
  });

  it("the published JSON Schema of keywords is still an array of strings or null", () => {
    const props = (inputJsonSchema(seoSkill()) as { properties: Record<string, unknown> }).properties;
    expect(props.keywords).toEqual({
      anyOf: [{ type: "array", items: { type: "string" } }, { type: "null" }],
      default: null,
      description: "Keywords to check (first 20); null or [] extracts five from the page.",
    });
  });

  it("the unauthenticated card checkout: 422 on body.payload with the first 100, Stripe not asked", async () => {
    const { res, sent } = await checkoutSeeingStripe(
      `{"skill_id":"seo","payload":${seoBody(ones(500_000))}}`,
    );
    const detail = await bounded(res);
    expect(detail).toEqual(
      Array.from({ length: MAX_DETAIL_ITEMS }, (_, i) => stringType(["body", "payload", "keywords"], i)),
    );
    expect(sent).toEqual([]);
  });

  it("an MCP tools/call: a tool error with the same bounded items", async () => {
    const keywords = Array.from({ length: 200_000 }, () => 1);
    const res = await call(
      "/mcp",
      mcpInit("tools/call", { name: "seo", arguments: { url: "https://example.com/", keywords } }),
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.length).toBeLessThan(2 * SMALL);
    const answer = JSON.parse(text) as {
      result: { isError: boolean; structuredContent: { detail: ErrorItem[] } };
    };
    expect(answer.result.isError).toBe(true);
    expect(answer.result.structuredContent.detail).toHaveLength(MAX_DETAIL_ITEMS);
    expect(answer.result.structuredContent.detail[0]).toEqual(stringType(["body", "keywords"], 0));
  });
});

describe("validate(): a schema zod cannot judge within the stack is a 422, not a 500", () => {
  // A plain z.array of strings inside an object: zod spreads its issues into the parent's, which
  // overflows workerd's stack past ~125,000 of them.
  const plain = z.object({ k: z.array(z.string()) });
  const value = { k: Array.from({ length: 1_000_000 }, () => 1) };

  it("zod itself throws RangeError here (the case being guarded)", () => {
    expect(() => plain.safeParse(value)).toThrow(RangeError);
  });

  it("validate() answers one value_error item on the body instead", () => {
    const result = validate(plain, value, ["body"]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.items).toHaveLength(1);
    expect(result.items[0]).toMatchObject({ loc: ["body"], type: "value_error" });
    expect(JSON.stringify(result.items).length).toBeLessThan(SMALL);
  });

  it("other throws are not swallowed", () => {
    const broken = z.custom(() => {
      throw new TypeError("a bug");
    });
    expect(() => validate(broken, 1, ["body"])).toThrow(TypeError);
  });
});

it("the docs page says how many errors a 422 lists", async () => {
  const page = await (await call("/docs/seo")).text();
  expect(page).toContain(`At most ${MAX_DETAIL_ITEMS} errors are listed`);
});
