import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { RECIPES } from "../../src/partners/data";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";
import { mcpCall, mcpInit, ORIGIN } from "../helpers";

// What tools/list publishes about a tool's arguments is what its route takes: a client (or the
// model filling the arguments) builds its call from these schemas.
const app = createApp();
const betaEnv = { ...env, FREE_BETA: "true" };
const REFINERY = "https://refinery.test";
const paidEnv = {
  ...env,
  FREE_BETA: "false",
  FACILITATOR_URL: `${FIXTURE}/facilitator`,
  PARTNER_BASE_URLS: JSON.stringify({ refinery: REFINERY }),
};
/** A payer the facilitator double settles. */
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";

interface Tool {
  name: string;
  inputSchema: { properties: Record<string, Record<string, unknown>>; required?: string[] };
  outputSchema?: Record<string, unknown>;
}

async function tools(e: object = betaEnv): Promise<Map<string, Tool>> {
  const res = await app.fetch(new Request(`${ORIGIN}/mcp`, mcpInit("tools/list", {})), e);
  const list = (await res.json<{ result: { tools: Tool[] } }>()).result.tools;
  return new Map(list.map((t) => [t.name, t]));
}

/** Keywords whose value is a subschema, a map of subschemas or a list of them. */
const ONE = new Set([
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "additionalItems",
  "unevaluatedItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "contentSchema",
]);
const MAP = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
const LIST = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);

/** Every subschema of `schema` with its path, booleans included (values of const, enum, default... are not schemas). */
function* subschemas(schema: unknown, path: string): Generator<[string, unknown]> {
  yield [path, schema];
  if (typeof schema !== "object" || schema === null) return;
  for (const [k, v] of Object.entries(schema)) {
    if (ONE.has(k) && !Array.isArray(v)) yield* subschemas(v, `${path}.${k}`);
    else if ((LIST.has(k) || k === "items") && Array.isArray(v))
      for (const [i, x] of v.entries()) yield* subschemas(x, `${path}.${k}[${i}]`);
    else if (MAP.has(k) && typeof v === "object" && v !== null)
      for (const [name, x] of Object.entries(v)) yield* subschemas(x, `${path}.${k}.${name}`);
  }
}

describe("tools/list's schemas as tool-calling converters take them", () => {
  it("hold no boolean subschema (google-genai's MCP conversion throws on one, and drops every tool)", async () => {
    const list = await tools(paidEnv);
    expect(list.size).toBeGreaterThan(30);
    const booleans = [...list.values()].flatMap((t) =>
      [
        ...subschemas(t.inputSchema, `${t.name}.inputSchema`),
        ...subschemas(t.outputSchema, `${t.name}.outputSchema`),
      ]
        .filter(([, s]) => typeof s === "boolean")
        .map(([path]) => path),
    );
    expect(booleans).toEqual([]);
  });

  it("hold no numeric enum or const in arguments (Gemini's Schema takes string enums only)", async () => {
    const numeric = [...(await tools(paidEnv)).values()].flatMap((t) =>
      [...subschemas(t.inputSchema, t.name)]
        .filter(([, s]) => {
          const { const: c, enum: e } = (s ?? {}) as { const?: unknown; enum?: unknown[] };
          return typeof c === "number" || (e ?? []).some((v) => typeof v !== "string");
        })
        .map(([path]) => path),
    );
    expect(numeric).toEqual([]);
    // uuid_mint's version says in words what the route takes.
    const version = (await tools()).get("uuid_mint")?.inputSchema.properties.version;
    expect(version).toMatchObject({ type: "integer", default: 4 });
    expect(version?.description).toContain("Allowed values: 1 or 4 (default 4).");
  });

  it("the route still takes only what the registry allows: uuid_mint version 2 is refused, 1 is minted", async () => {
    const refused = (await mcpCall(app, betaEnv, "uuid_mint", { version: 2 })).result;
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ detail: [{ loc: ["body", "version"] }] });
    const minted = (await mcpCall(app, betaEnv, "uuid_mint", { version: 1, count: 1 })).result;
    expect(minted.isError).toBeFalsy();
    expect(minted.structuredContent).toMatchObject({ version: 1, count: 1 });
  });
});

describe("tools/list's argument schemas", () => {
  it("sha256's encoding names every alias its pattern lets through (binary, utf16le included), and each is taken", async () => {
    const field = (await tools()).get("sha256")?.inputSchema.properties.encoding as {
      description: string;
      pattern: string;
    };
    // The pattern's alternatives, each letter written as [xX].
    const names = /\(\?:(.*)\)/
      .exec(field.pattern)?.[1]
      ?.split("|")
      .map((n) => n.replace(/\[([a-z])[A-Z]\]/g, "$1"));
    expect(names).toContain("binary");
    for (const name of names ?? []) {
      expect(field.description, name).toMatch(new RegExp(`(^|[ (,])${name.replace(/-/g, "\\-")}\\b`));
      const res = await app.fetch(
        new Request(`${ORIGIN}/api/skills/sha256`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text: "ab", encoding: ` ${name.toUpperCase()} ` }),
        }),
        betaEnv,
      );
      expect(res.status, name).toBe(200);
    }
  });

  describe("refinery__<recipe>", () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it("publishes recipe as the one value its route takes (optional), and a call naming it is run and paid", async () => {
      const list = await tools(paidEnv);
      for (const recipe of RECIPES) {
        const schema = list.get(`refinery__${recipe}`)?.inputSchema;
        expect(schema?.properties.recipe, recipe).toEqual({ type: "string", const: recipe });
        expect(schema?.required ?? []).not.toContain("recipe");
      }
      // The partner answers inside the isolate; the facilitator double is real.
      const sent: unknown[] = [];
      const realFetch = globalThis.fetch;
      vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
        const req = new Request(input, init);
        if (new URL(req.url).origin !== REFINERY) return realFetch(input, init);
        sent.push(await req.json());
        return Response.json({ digest: ["refunds within 30 days"] });
      });
      const args = {
        raw: "Refunds are due within 30 days.",
        request: "Obligations?",
        recipe: "policy_digest",
      };
      const call = (meta?: Record<string, unknown>) =>
        mcpCall(app, paidEnv, "refinery__policy_digest", args, meta);
      const unpaid = (await call()).result;
      const { payload } = unsignedPayment(unpaid.structuredContent as unknown as PaymentRequired, SETTLES_OK);
      const { result } = await call({ "x402/payment": payload });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ partner_id: "refinery", charged: true });
      expect(sent).toEqual([args]);
      // Any other value is what the route refuses (after the payment is verified; not settled).
      const other = unsignedPayment(unpaid.structuredContent as unknown as PaymentRequired, SETTLES_OK);
      const wrong = await mcpCall(
        app,
        paidEnv,
        "refinery__policy_digest",
        { ...args, recipe: "custom" },
        { "x402/payment": other.payload },
      );
      expect(wrong.result.isError).toBe(true);
      expect(wrong.result.structuredContent).toMatchObject({
        detail: [{ loc: ["body", "recipe"], type: "literal_error" }],
      });
      expect(sent).toHaveLength(1);
      // The workers project shares one D1 across files: leave no owed payout for the payouts tests.
      await env.DB.prepare("DELETE FROM payout_ledger WHERE request_id = ?1")
        .bind(result._meta?.["marketplace/request-id"])
        .run();
    });
  });
});
