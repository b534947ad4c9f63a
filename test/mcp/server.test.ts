import { env } from "cloudflare:test";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/server";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { MAX_JSON_DEPTH } from "../../src/http/json-text";
import { MCP_ENVELOPE_DEPTH, MCP_MAX_BODY_BYTES } from "../../src/mcp/limits";
import { inputForToolCalling, outputForToolCalling } from "../../src/mcp/tool-calling-schema";
import { pricingConfig } from "../../src/partners/config";
import { PARTNERS } from "../../src/partners/data";
import { servicePrices } from "../../src/partners/pricing";
import { hashKey } from "../../src/payments/credits";
import { inputJsonSchema, outputJsonSchema, skills } from "../../src/skills/registry";
import { signedPayment, unsignedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// The MCP surface in workerd: protocol and errors against the real app, payments against the
// facilitator double (test/fixtures/facilitator-double.mjs). The real chain and the official
// client are in test/e2e/mcp.test.ts.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const ORIGIN = "https://skills.test";
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";
/** The facilitator double refuses this payer's settlement before sending (insufficient_funds). */
const INSUFFICIENT_FUNDS = "0x00000000000000000000000000000000000a0002";

interface RpcAnswer {
  jsonrpc: "2.0";
  id: number | string | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}
interface ToolResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { type: string; text: string }[];
  _meta?: Record<string, unknown>;
}

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

function raw(body: string, headers: Record<string, string> = HEADERS, e: object = paidEnv, method = "POST") {
  return app.fetch(
    new Request(`${ORIGIN}/mcp`, { method, headers, body: method === "POST" ? body : undefined }),
    e,
  );
}

let nextId = 1;
async function rpc(
  method: string,
  params?: unknown,
  extra: Record<string, string> = {},
  e: object = paidEnv,
) {
  const res = await raw(
    JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
    { ...HEADERS, ...extra },
    e,
  );
  expect(res.status).toBe(200);
  return res.json<RpcAnswer>();
}

async function callTool(
  name: string,
  args: unknown,
  meta?: Record<string, unknown>,
  extra = {},
  e = paidEnv,
) {
  const answer = await rpc(
    "tools/call",
    { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
    extra,
    e,
  );
  expect(answer.error).toBeUndefined();
  return answer.result as unknown as ToolResult;
}

const field = <T>(answer: RpcAnswer, key: string) => answer.result?.[key] as T;
const withoutDialect = ({ $schema: _d, ...s }: Record<string, unknown>) => s;

function paymentFor(required: PaymentRequired, from = SETTLES_OK) {
  const { payload, nonce } = unsignedPayment(required, from);
  const accepted = payload.accepted;
  return { payload, nonce, key: `${accepted.network}:${accepted.asset}:${from}:${nonce}`.toLowerCase() };
}

const nonceRow = (key: string) =>
  env.DB.prepare("SELECT status, resource FROM payment_nonces WHERE nonce = ?1").bind(key).first();
const ledgerRow = (key: string) =>
  env.DB.prepare("SELECT resource, amount_atomic FROM payments WHERE nonce = ?1").bind(key).all();

describe("MCP protocol surface", () => {
  it("initialize negotiates the protocol version as the SDK does, statelessly (no session id)", async () => {
    const res = await raw(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    const answer = await res.json<RpcAnswer>();
    expect(answer.result).toMatchObject({
      protocolVersion: "2025-06-18",
      capabilities: { tools: {}, resources: {} },
      serverInfo: { name: "agent-skills-marketplace" },
    });
    expect(String(answer.result?.instructions)).toContain('_meta["x402/payment"]');

    const unknown = await rpc("initialize", {
      protocolVersion: "1999-01-01",
      capabilities: {},
      clientInfo: { name: "t", version: "1" },
    });
    expect(unknown.result?.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
  });

  it("tools/list is free and equals the registry: every skill with its schemas and price, and every paid partner service", async () => {
    const answer = await rpc("tools/list", {});
    const tools = answer.result?.tools as {
      name: string;
      title: string;
      description: string;
      inputSchema: Record<string, unknown>;
      outputSchema?: { type: string; anyOf: Record<string, unknown>[] };
    }[];
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const skill of skills) {
      const tool = byName.get(skill.id);
      expect(tool, skill.id).toBeDefined();
      expect(tool?.title).toBe(skill.name);
      expect(tool?.description).toContain(skill.description);
      expect(tool?.description).toContain(`$${skill.price_usd} per call`);
      // The registry's schemas in their tool-calling copy (what converters refuse taken out, the
      // route enforces it all: test/mcp/tool-schemas.test.ts).
      expect(tool?.inputSchema).toEqual(inputForToolCalling(withoutDialect(inputJsonSchema(skill))));
      expect(tool?.outputSchema?.type).toBe("object");
      expect(tool?.outputSchema?.anyOf[0]).toEqual(
        outputForToolCalling(withoutDialect(outputJsonSchema(skill))),
      );
    }
    // Paid partner services only: those listed as paid whose listing price is above zero.
    const pc = pricingConfig(paidEnv);
    if ("error" in pc) throw new Error(pc.error);
    const partnerTools = PARTNERS.filter((p) => p.listing_status === "paid").flatMap((p) =>
      p.services
        .filter((s) => servicePrices(s, pc.multiplierMilli).priceMicros > 0n)
        .map((s) => `${p.id}__${s.id}`),
    );
    expect(partnerTools.length).toBeGreaterThan(5);
    expect(tools.map((t) => t.name).sort()).toEqual(
      [...skills.map((s) => s.id), "refinery_recipes", ...partnerTools].sort(),
    );
    // What the strictest hosts accept (Claude Desktop, OpenAI tool calling): no dots.
    for (const t of tools) expect(t.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    // Hints the spec defaults to the worst case (destructive, when not read-only): a skill only
    // spends the caller's money, so it is neither read-only nor destructive, and never idempotent
    // (each call is charged); only the network skills reach the open world.
    for (const s of skills) {
      const t = tools.find((x) => x.name === s.id) as { annotations?: Record<string, boolean> };
      expect(t.annotations, s.id).toEqual({
        openWorldHint: s.kind !== "utility",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
      });
    }
  });

  it("resources: the catalog (the JSON of /api/catalog) and the docs of each skill", async () => {
    const list = await rpc("resources/list", {});
    const uris = field<{ uri: string }[]>(list, "resources").map((r) => r.uri);
    expect(uris).toEqual(["skills://catalog", ...skills.map((s) => `skills://docs/${s.id}`)]);
    const catalog = await rpc("resources/read", { uri: "skills://catalog" });
    const text = field<{ text: string }[]>(catalog, "contents")[0]?.text ?? "";
    const http = await app.fetch(new Request(`${ORIGIN}/api/catalog`), paidEnv);
    expect(JSON.parse(text)).toEqual(await http.json());
    const docs = await rpc("resources/read", { uri: "skills://docs/token_count" });
    const md = field<{ text: string; mimeType: string }[]>(docs, "contents")[0];
    expect(md?.mimeType).toBe("text/markdown");
    const tokenCount = skills.find((s) => s.id === "token_count");
    expect(md?.text).toContain(`# ${tokenCount?.name} (\`token_count\`)`);
    const missing = await rpc("resources/read", { uri: "skills://docs/nope" });
    expect(missing.error?.code).toBe(-32002);
    // The resources capability's templates method answers too (none offered), not -32601.
    expect(await rpc("resources/templates/list", {})).toMatchObject({ result: { resourceTemplates: [] } });
  });

  describe("errors are JSON-RPC errors with the right code, never a 5xx", () => {
    it("malformed JSON: 400, -32700", async () => {
      const res = await raw('{"jsonrpc":"2.0",');
      expect(res.status).toBe(400);
      expect((await res.json<RpcAnswer>()).error?.code).toBe(-32700);
    });
    it("a number past a double's range in a tool's arguments: 400, -32602 naming where, never null for the tool", async () => {
      const res = await raw(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":{"max":1e400}}}}',
      );
      expect(res.status).toBe(400);
      const answer = await res.json<RpcAnswer>();
      expect(answer.error?.code).toBe(-32602);
      expect(answer.error?.message).toContain("params.arguments.data.max");
      // The message was read: its id is echoed.
      expect(answer.id).toBe(1);
    });
    it("a 400-digit integer in a tool's arguments is a number the tool reads exactly, as over HTTP", async () => {
      const big = `1${"0".repeat(400)}`;
      const res = await raw(
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":{"a":${big}}}}}`,
      );
      // Not refused as out of range: the message reaches the tool (here its offer: payments are on).
      expect(res.status).toBe(200);
      const answer = await res.json<RpcAnswer>();
      expect(answer.error).toBeUndefined();
      expect(answer.result).toBeDefined();
    });
    it("a batch holding a number past a double's range is refused as a batch, before anything walks it", async () => {
      const res = await raw('[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1e400}}]');
      expect(res.status).toBe(400);
      expect((await res.json<RpcAnswer>()).error?.code).toBe(-32600);
    });
    it("valid JSON that is no JSON-RPC message: 400, -32600", async () => {
      const res = await raw('{"hello":"world"}');
      expect(res.status).toBe(400);
      expect((await res.json<RpcAnswer>()).error?.code).toBe(-32600);
    });
    it("a batch: 400, -32600 (MCP has no batches since 2025-06-18)", async () => {
      const one = { jsonrpc: "2.0", id: 1, method: "tools/list" };
      const res = await raw(JSON.stringify([one, { ...one, id: 2 }]));
      expect(res.status).toBe(400);
      const answer = await res.json<RpcAnswer>();
      expect(answer.error?.code).toBe(-32600);
      expect(answer.error?.message).toMatch(/batch/i);
    });
    it("unknown method: -32601", async () => {
      expect((await rpc("skills/buy", {})).error?.code).toBe(-32601);
    });
    it("unknown tool: -32602, and nothing is dispatched or charged", async () => {
      const answer = await rpc("tools/call", { name: "no_such_tool", arguments: {} });
      expect(answer.error?.code).toBe(-32602);
      // As written: the SDK's McpError put "MCP error -32602: " before it (and its client again).
      expect(answer.error?.message).toBe("Unknown tool: no_such_tool. See tools/list.");
    });
    it("tools/call without a name, resources/read without a uri: -32602", async () => {
      expect((await rpc("tools/call", { arguments: {} })).error?.code).toBe(-32602);
      expect((await rpc("resources/read", {})).error?.code).toBe(-32602);
    });
    it("wrong content type: 415, -32000", async () => {
      const res = await raw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), {
        "content-type": "text/plain",
        accept: "application/json",
      });
      expect(res.status).toBe(415);
      expect((await res.json<RpcAnswer>()).error?.code).toBe(-32000);
    });
    it.each([["application/json"], ["*/*"], [undefined]])(
      "an Accept of %j takes the JSON answer: 200 (the SDK's own transport wants SSE named too)",
      async (accept) => {
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (accept) headers.accept = accept;
        const res = await raw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), headers);
        expect(res.status).toBe(200);
        expect((await res.json<RpcAnswer>()).result?.tools).toBeInstanceOf(Array);
      },
    );
    it("an Accept that takes neither JSON nor SSE: 406", async () => {
      const res = await raw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), {
        "content-type": "application/json",
        accept: "text/html",
      });
      expect(res.status).toBe(406);
      expect((await res.json<RpcAnswer>()).error?.code).toBeLessThan(0);
    });
    it(`an oversized body (> ${MCP_MAX_BODY_BYTES} bytes): 413, -32000, before parsing`, async () => {
      const big = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "token_count", arguments: { text: "a".repeat(MCP_MAX_BODY_BYTES) } },
      });
      const res = await raw(big);
      expect(res.status).toBe(413);
      expect((await res.json<RpcAnswer>()).error?.code).toBe(-32000);
    });
    it.each(["1999-01-01", ""])(
      "an unsupported MCP-Protocol-Version header (%j): 400, not 404 (session gone)",
      async (v) => {
        const res = await raw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), {
          ...HEADERS,
          "mcp-protocol-version": v,
        });
        expect(res.status).toBe(400);
        expect((await res.json<RpcAnswer>()).error?.message).toMatch(/protocol version/i);
      },
    );
    it.each(["GET", "DELETE", "PUT"])(
      "%s /mcp: 405 with Allow: POST (stateless: no stream, no session)",
      async (method) => {
        const res = await raw("", { accept: "text/event-stream" }, paidEnv, method);
        expect(res.status).toBe(405);
        expect(res.headers.get("allow")).toBe("POST");
        expect((await res.json<RpcAnswer>()).error?.code).toBe(-32000);
      },
    );
    it("a message with more arrays and objects than any body may hold is a parse error, before it is parsed", async () => {
      const many = `[${"{},".repeat(600_000)}{}]`;
      // Also behind a nesting past the message's bound (a body's 200 levels and the envelope's
      // headroom), where the scan stops counting.
      const levels = MAX_JSON_DEPTH + MCP_ENVELOPE_DEPTH;
      const nested = `${"[".repeat(levels)}${"]".repeat(levels)}`;
      for (const args of [`{"data":${many}}`, `{"x":${nested},"data":${many}}`]) {
        const res = await raw(
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"json_sort","arguments":${args}}}`,
        );
        expect(res.status).toBe(400);
        expect((await res.json<RpcAnswer>()).error?.code).toBe(-32700);
      }
    });
    it("bad params of initialize, tools/list and resources/list are -32602 (invalid params) with the request's id, not -32603", async () => {
      const errorOf = async (method: string, params: unknown) => {
        const res = await raw(JSON.stringify({ jsonrpc: "2.0", id: 77, method, params }));
        const answer = await res.json<RpcAnswer>();
        expect(answer.id, method).toBe(77);
        return answer.error?.code;
      };
      expect(await errorOf("initialize", { protocolVersion: 5 })).toBe(-32602);
      expect(await errorOf("initialize", undefined)).toBe(-32602);
      expect(await errorOf("tools/list", { cursor: 5 })).toBe(-32602);
      // One page only: a cursor this server never gave is refused, not answered with the first page.
      expect(await errorOf("tools/list", { cursor: "page-2" })).toBe(-32602);
      expect(await errorOf("resources/list", { cursor: 5 })).toBe(-32602);
      expect(await errorOf("tools/list", {})).toBeUndefined();
    });
    it("a notification is accepted with 202 and no body", async () => {
      const res = await raw(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
      expect(res.status).toBe(202);
      expect(await res.text()).toBe("");
      expect(res.headers.get("content-type")).toBeNull();
    });
  });
});

describe("every tool's input schema is one the model APIs accept", () => {
  it("no anyOf/oneOf/allOf at the top (Anthropic refuses the whole tool list), and properties on every object (OpenAI)", async () => {
    const answer = await rpc("tools/list", {});
    const tools = field<{ name: string; inputSchema: Record<string, unknown> }[]>(answer, "tools");
    expect(tools.length).toBeGreaterThan(30);
    /** Every schema inside: an array needs items, an object properties (OpenAI checks all depths). */
    const faults = (schema: Record<string, unknown>, at: string): string[] => {
      const own = [
        ...(schema.type === "array" && !("items" in schema) ? [`${at}: array without items`] : []),
        ...(schema.type === "object" && !("properties" in schema)
          ? [`${at}: object without properties`]
          : []),
      ];
      const props = Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>);
      const items = schema.items as Record<string, unknown> | undefined;
      return [
        ...own,
        ...props.flatMap(([k, v]) => faults(v, `${at}.${k}`)),
        ...(items ? faults(items, `${at}[]`) : []),
      ];
    };
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe("object");
      for (const k of ["anyOf", "oneOf", "allOf"]) expect(t.inputSchema, t.name).not.toHaveProperty(k);
      expect(faults(t.inputSchema, t.name)).toEqual([]);
    }
    const detector = tools.find((t) => t.name === "ai_detector");
    expect(JSON.stringify(detector?.inputSchema)).toContain("Give text or url: one is required.");
    const verify = tools.find((t) => t.name === "pricefeed__receipt_verify");
    expect(verify?.inputSchema.properties).toMatchObject({
      claim: { type: "string" },
      evidence: { type: "array", items: { type: "string" } },
    });
  });
});

describe("MCP tools/call pays through the HTTP route's own chain", () => {
  it("free beta: a call runs without payment and answers structuredContent plus its JSON text", async () => {
    const result = await callTool("sha256", { text: "abc" }, undefined, {}, {
      ...env,
      FREE_BETA: "true",
    } as typeof paidEnv);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ skill: "sha256", ok: true });
    expect(String(result.structuredContent?.hex)).toMatch(/^ba7816bf/);
    expect(JSON.parse(result.content[0]?.text ?? "")).toEqual(result.structuredContent);
  });

  it("a result over 1 MiB of JSON comes once, as structuredContent, with a note as its text", async () => {
    const data = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`key${i}`, "v".repeat(10)]));
    const result = await callTool("json_sort", { data }, undefined, {}, {
      ...env,
      FREE_BETA: "true",
    } as typeof paidEnv);
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as { bytes: number }).bytes).toBeGreaterThan(1024 * 1024);
    expect(result.content[0]?.text).toMatch(
      /^The result \(\d+ characters of JSON\) is in structuredContent\.$/,
    );
  });

  it("integers past 2^53 in a tool's arguments come back digit for digit (json_sort), as over HTTP", async () => {
    const id = "12345678901234567890";
    const res = await raw(
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":{"b":${id},"a":[-${id}1,1.5]}}}}`,
      HEADERS,
      { ...env, FREE_BETA: "true" },
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    // In structuredContent and inside the escaped JSON text copy; never rounded.
    expect(text).toContain(`"b":${id}`);
    expect(text).toContain(`\\"b\\":${id}`);
    expect(text).toContain(`-${id}1`);
    expect(text).not.toContain("12345678901234567000");
    const answer = JSON.parse(text) as RpcAnswer;
    expect(answer.result?.isError).toBeFalsy();
  });

  it("unpaid: isError with the x402 v2 PaymentRequired of the HTTP route, as structuredContent and in content[0].text's x402/error wrapper", async () => {
    const result = await callTool("sha256", { text: "abc" });
    expect(result.isError).toBe(true);
    const http = await app.fetch(
      new Request(`${ORIGIN}/api/skills/sha256`, { method: "POST", body: "{}" }),
      paidEnv,
    );
    const httpRequired = decodePaymentRequiredHeader(http.headers.get("payment-required") as string);
    expect(result.structuredContent).toEqual(httpRequired);
    // The x402 MCP transport's text, the only place the @x402/mcp client reads the offer.
    expect(JSON.parse(result.content[0]?.text ?? "")).toEqual({
      "x402/error": { code: 402, message: httpRequired.error ?? "Payment required", data: httpRequired },
    });
    // Where Cloudflare Agents' withX402Client (and other MCP payers) read the offer.
    expect(result._meta?.["x402/error"]).toEqual(httpRequired);
    expect(httpRequired.accepts[0]?.amount).toBe(
      skills.find((s) => s.id === "sha256")?.price_atomic.toString(),
    );
  });

  it("a payer that reads the offer only from content[0].text's x402/error wrapper (the @x402/mcp client) pays", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    // @x402/mcp's x402MCPClient: isError, a text item, JSON with x402/error {code 402, message, data}.
    const wrapped = JSON.parse(unpaid.content[0]?.text ?? "")["x402/error"];
    expect(unpaid.isError && wrapped?.code === 402 && typeof wrapped.message === "string").toBe(true);
    const pay = await signedPayment(
      wrapped.data as PaymentRequired,
      privateKeyToAccount(generatePrivateKey()),
    );
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    expect(await nonceRow(pay.key)).toEqual({ status: "settled", resource: "mcp:sha256" });
  });

  it("paid: the result, the settle response in _meta, one ledger row named mcp:<tool>", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const pay = paymentFor(unpaid.structuredContent as unknown as PaymentRequired);
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
    expect(result.isError).toBeFalsy();
    expect(String(result.structuredContent?.hex)).toMatch(/^ba7816bf/);
    expect(result._meta?.["x402/payment-response"]).toMatchObject({ success: true, payer: SETTLES_OK });
    expect(await nonceRow(pay.key)).toEqual({ status: "settled", resource: "mcp:sha256" });
    const rows = await ledgerRow(pay.key);
    const price = Number(skills.find((s) => s.id === "sha256")?.price_atomic);
    expect(rows.results).toEqual([{ resource: "mcp:sha256", amount_atomic: price }]);
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(1);

    // The same authorization again, over MCP or over HTTP: refused by the one claim table.
    const again = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
    expect(again.isError).toBe(true);
    expect(again.structuredContent?.reason).toBe("payment_authorization_reused");
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(1);
  });

  it("a payment made for another tool is refused as /docs/mcp says, nothing settled: extension_echo_mismatch as x402 clients echo the offer, else resource_mismatch", async () => {
    const forSha = (await callTool("sha256", { text: "abc" }))
      .structuredContent as unknown as PaymentRequired;
    // What @x402/core's client sends: the offer's resource and its extensions echoed.
    const echoed = paymentFor(forSha);
    const asClients = await callTool(
      "slugify",
      { text: "x" },
      {
        "x402/payment": { ...echoed.payload, extensions: forSha.extensions },
      },
    );
    expect(asClients.structuredContent).toMatchObject({ reason: "extension_echo_mismatch" });
    const bare = paymentFor(forSha);
    const named = await callTool("slugify", { text: "x" }, { "x402/payment": bare.payload });
    expect(named.structuredContent).toMatchObject({ reason: "resource_mismatch" });
    for (const p of [echoed, bare]) {
      expect(await upstreamRequests(`facilitator-settle nonce=${p.nonce}`)).toBe(0);
    }
    const docs = await (await app.fetch(new Request(`${ORIGIN}/docs/mcp`), paidEnv)).text();
    expect(docs).toContain("<code>reason: &quot;extension_echo_mismatch&quot;</code>");
    expect(docs).toContain("<code>reason: &quot;resource_mismatch&quot;</code>");
  });

  it("paid with invalid arguments: a tool error with the HTTP 422's field errors, not settled, authorization free", async () => {
    const unpaid = await callTool("slugify", { text: "x" });
    const pay = paymentFor(unpaid.structuredContent as unknown as PaymentRequired);
    const result = await callTool("slugify", { text: 42 }, { "x402/payment": pay.payload });
    expect(result.isError).toBe(true);
    const detail = result.structuredContent?.detail as { loc: string[]; type: string }[];
    expect(detail[0]?.loc).toEqual(["body", "text"]);
    expect(result.content[0]?.text).toMatch(/^Invalid arguments \(not charged\): body\.text/);
    const http = await app.fetch(
      new Request(`${ORIGIN}/api/skills/slugify`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: 42 }),
      }),
      { ...env, FREE_BETA: "true" },
    );
    expect(http.status).toBe(422);
    expect(detail).toEqual((await http.json<{ detail: unknown }>()).detail);
    expect(await nonceRow(pay.key)).toBeNull();
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);
  });

  it("a _meta payment that is none is refused as such with the offer to sign, in words for MCP; not a crash, not a bare refusal", async () => {
    // Any value that is no PaymentPayload: a string that encodes none (e.g. the JSON itself),
    // characters no header can carry (not JSON-RPC -32603), an object that is none, another type.
    for (const bad of ['{"x402Version":2}', "eyJ4NDAy\u0000Ijoy", "eyJ4NDAyIjoy\u00e9", {}, 42, [1], true]) {
      const refused = await callTool("sha256", { text: "abc" }, { "x402/payment": bad });
      const what = JSON.stringify(bad);
      expect(refused.isError, what).toBe(true);
      expect(refused.structuredContent, what).toMatchObject({
        x402Version: 2,
        reason: "invalid_payment_header",
      });
      expect(refused.structuredContent?.accepts, what).toEqual([expect.objectContaining({ amount: "3000" })]);
      // It names the field the caller wrote, not the HTTP header it never saw.
      const error = String(refused.structuredContent?.error);
      expect(error, what).toContain('_meta["x402/payment"] is not an x402 v2 PaymentPayload');
      expect(error, what).not.toContain("PAYMENT-SIGNATURE");
      expect(JSON.parse(refused.content[0]?.text ?? "")["x402/error"], what).toMatchObject({
        code: 402,
        data: refused.structuredContent,
      });
    }
  });

  it("a base64 payment wrapped in lines (as some encoders write it) pays like the unwrapped one", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const pay = paymentFor(unpaid.structuredContent as unknown as PaymentRequired);
    const wrapped = (encodePaymentSignatureHeader(pay.payload).match(/.{1,76}/g) ?? []).join("\r\n");
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": wrapped });
    expect(result.isError).toBeFalsy();
    expect(await nonceRow(pay.key)).toMatchObject({ status: "settled" });
  });

  it("a payment encoded as Cloudflare Agents' withX402Client does (btoa: Latin-1 bytes) pays, non-ASCII extensions echoed", async () => {
    const unpaid = await callTool("slugify", { text: "x" });
    const required = unpaid._meta?.["x402/error"] as unknown as PaymentRequired;
    // slugify's bazaar example is "Crème Brûlée: …": the echoed extension holds Latin-1 characters.
    expect(JSON.stringify(required.extensions)).toMatch(/Crème Brûlée/);
    const pay = paymentFor(required);
    const latin1 = btoa(JSON.stringify({ ...pay.payload, extensions: required.extensions }));
    const result = await callTool("slugify", { text: "x" }, { "x402/payment": latin1 });
    expect(result.isError, JSON.stringify(result.structuredContent)).toBeFalsy();
    expect(await nonceRow(pay.key)).toMatchObject({ status: "settled" });
  });

  it("a settlement that fails carries x402's own settle response (x402/payment-response), in _meta and structuredContent", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const pay = paymentFor(unpaid.structuredContent as unknown as PaymentRequired, INSUFFICIENT_FUNDS);
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
    expect(result.isError).toBe(true);
    const settle = { success: false, errorReason: "insufficient_funds", payer: INSUFFICIENT_FUNDS };
    expect(result._meta?.["x402/payment-response"]).toMatchObject(settle);
    expect(result.structuredContent?.["x402/payment-response"]).toMatchObject(settle);
    expect(result.structuredContent).toMatchObject({ reason: "insufficient_funds" });
    const wrapped = JSON.parse(result.content[0]?.text ?? "")["x402/error"];
    expect(wrapped).toEqual({
      code: 402,
      message: result.structuredContent?.error,
      data: result.structuredContent,
    });
  });

  it.each([
    ["settlement_pending with a transaction", "0006", "settlement_pending", true],
    ["a gateway's 502 page", "0005", undefined, false],
    // No settle response to pass on: the result still carries one, not a success.
    ["a 200 the client cannot read", "0003", undefined, false],
  ])(
    "an unconfirmed settlement (%s) is answered as the transport's settlement failure: the offer, and what tells whether it paid",
    async (_name, suffix, errorReason, hasTransaction) => {
      const unpaid = await callTool("sha256", { text: "abc" });
      const offer = unpaid.structuredContent as unknown as PaymentRequired;
      const payer = `0x00000000000000000000000000000000000a${suffix}`;
      const pay = paymentFor(offer, payer);
      const result = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
      expect(result.isError).toBe(true);
      const structured = result.structuredContent ?? {};
      // transports-v2/mcp.md, Settlement Failure: the PaymentRequired with the settle response.
      expect(structured).toMatchObject({ x402Version: 2, accepts: offer.accepts, resource: offer.resource });
      const settle = structured["x402/payment-response"] as Record<string, unknown>;
      expect(settle).toMatchObject({ success: false, network: offer.accepts[0]?.network });
      expect(result._meta?.["x402/payment-response"]).toEqual(settle);
      expect(settle.errorReason).toBe(errorReason ?? structured.facilitator_reason);
      expect(JSON.parse(result.content[0]?.text ?? "")).toEqual({
        "x402/error": { code: 402, message: structured.error, data: structured },
      });
      // What the HTTP 502 tells its caller, kept: why, the transaction to look for, the request id
      // the ledger and a refund name, and that a transfer landing anyway is refunded.
      expect(structured).toMatchObject({ reason: "settlement_unconfirmed" });
      expect(typeof structured.facilitator_reason).toBe("string");
      expect(structured.transaction).toEqual(hasTransaction ? settle.transaction : null);
      expect(structured.request_id).toEqual(result._meta?.["marketplace/request-id"]);
      expect(String(structured.error)).toMatch(
        /withheld.*refunds it to the payer.*Sign a new authorization/s,
      );
      // The authorization stays reserved for reconciliation: sent again, it settles nothing more.
      expect(await nonceRow(pay.key)).toEqual({ status: "failed", resource: "mcp:sha256" });
      const settles = await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`);
      const again = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
      expect(again.structuredContent?.reason).toBe("payment_authorization_reused");
      expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(settles);
    },
  );

  it("card credits: Authorization: Bearer mk_… on the MCP request pays one call; a spent key gets the offer and why (other keys: card-keys.test.ts)", async () => {
    const key = `mk_${crypto.randomUUID().replaceAll("-", "")}`;
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 2, 2, 0)",
    )
      .bind(crypto.randomUUID(), await hashKey(key))
      .run();
    // The key as X-API-Key, one of the forms the HTTP gate takes, pays over MCP too.
    const viaApiKey = await callTool("slugify", { text: "Hi" }, undefined, { "x-api-key": key });
    expect(viaApiKey.structuredContent).toMatchObject({ skill: "slugify", slug: "hi" });
    expect(viaApiKey._meta?.["marketplace/credits-remaining"]).toBe(1);
    const auth = { authorization: `Bearer ${key}` };
    const paid = await callTool("slugify", { text: "Hello World" }, undefined, auth);
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ skill: "slugify", slug: "hello-world" });
    expect(paid._meta?.["marketplace/credits-remaining"]).toBe(0);
    // Spent: the call falls through to x402 and says why, in the words of the HTTP 402.
    const dry = await callTool("slugify", { text: "x" }, undefined, auth);
    expect(dry.isError).toBe(true);
    expect(dry.structuredContent?.x402Version).toBe(2);
    expect(dry.structuredContent?.error).toMatch(
      /^This key has no slugify credits left\. Buy a new pack .*: it comes with a new key/,
    );
    expect(dry.content[0]?.text).toMatch(/no slugify credits left/);
  });

  it("a card key's credit comes back when the call fails (invalid arguments)", async () => {
    const key = `mk_${crypto.randomUUID().replaceAll("-", "")}`;
    const hash = await hashKey(key);
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 2, 2, 0)",
    )
      .bind(crypto.randomUUID(), hash)
      .run();
    const bad = await callTool("slugify", { text: 1 }, undefined, { authorization: `Bearer ${key}` });
    expect(bad.isError).toBe(true);
    const row = await env.DB.prepare("SELECT calls_left FROM api_keys WHERE key_hash = ?1")
      .bind(hash)
      .first();
    expect(row).toEqual({ calls_left: 2 });
  });
});

describe("MCP partner tools: the try route at the listing price", () => {
  const HOST = "https://pricefeed.test";
  const partnerEnv = { ...paidEnv, PARTNER_BASE_URLS: JSON.stringify({ pricefeed: HOST }) };
  /** The partner host answers inside the isolate; everything else (the facilitator double) is real. */
  function stubPartner(answer: (req: Request) => Response) {
    const seen: string[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (new URL(req.url).origin !== HOST) return realFetch(input, init);
      seen.push(`${req.method} ${new URL(req.url).pathname}`);
      return answer(req);
    });
    return seen;
  }
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("pricefeed__price_coin: unpaid asks the try route's price; paid calls GET /price/<coin> and pays out", async () => {
    const seen = stubPartner(() => Response.json({ coin: "eth", usd: 3000 }));
    const unpaid = await callTool("pricefeed__price_coin", { coin: "eth" }, undefined, {}, partnerEnv);
    const required = unpaid.structuredContent as unknown as PaymentRequired;
    expect(required.resource.url).toBe(`${ORIGIN}/api/partners/pricefeed/try/price_coin`);
    const pay = paymentFor(required);
    const paid = await callTool(
      "pricefeed__price_coin",
      { coin: "eth" },
      { "x402/payment": pay.payload },
      {},
      partnerEnv,
    );
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({
      partner_id: "pricefeed",
      charged: true,
      body: { usd: 3000 },
    });
    expect(seen).toEqual(["GET /price/eth"]);
    expect(await ledgerRow(pay.key)).toMatchObject({
      results: [
        { resource: "mcp:pricefeed__price_coin", amount_atomic: Number(required.accepts[0]?.amount) },
      ],
    });
    const payout = await env.DB.prepare(
      "SELECT partner_id, service_id FROM payout_ledger WHERE request_id = (SELECT request_id FROM payments WHERE nonce = ?1)",
    )
      .bind(pay.key)
      .first();
    expect(payout).toEqual({ partner_id: "pricefeed", service_id: "price_coin" });
    // The workers project shares one D1 across files: leave no owed payout for the payouts tests.
    await env.DB.prepare(
      "DELETE FROM payout_ledger WHERE request_id = (SELECT request_id FROM payments WHERE nonce = ?1)",
    )
      .bind(pay.key)
      .run();
  });

  it("a partner failure is a tool error (HTTP 502), not settled; a bad path parameter is the 422 before any price", async () => {
    stubPartner(() => new Response("down", { status: 500 }));
    // The dotted names partner tools had before still answer (this case calls them so).
    const unpaid = await callTool("pricefeed.price", {}, undefined, {}, partnerEnv);
    const pay = paymentFor(unpaid.structuredContent as unknown as PaymentRequired);
    const failed = await callTool("pricefeed.price", {}, { "x402/payment": pay.payload }, {}, partnerEnv);
    expect(failed.isError).toBe(true);
    expect(failed.content[0]?.text).toMatch(/^Call failed \(HTTP 502\)/);
    expect(failed.structuredContent).toMatchObject({ charged: false, upstream_status: 500 });
    expect(await nonceRow(pay.key)).toBeNull();
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);

    const bad = await callTool("pricefeed.price_coin", { coin: "../admin" }, undefined, {}, partnerEnv);
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ detail: [{ loc: ["query", "coin"] }] });
  });

  it("an argument a GET service does not take is refused before any price or charge, paid or not", async () => {
    const seen = stubPartner(() => Response.json({ coin: "eth", usd: 3000 }));
    const unpaid = await callTool("pricefeed__price_coin", { coin: "eth" }, undefined, {}, partnerEnv);
    const pay = paymentFor(unpaid.structuredContent as unknown as PaymentRequired);
    const extra = await callTool(
      "pricefeed__price_coin",
      { coin: "eth", currency: "eur" },
      { "x402/payment": pay.payload },
      {},
      partnerEnv,
    );
    expect(extra.isError).toBe(true);
    expect(extra.content[0]?.text).toBe(
      "Invalid arguments (not charged): query.currency: this tool takes only coin",
    );
    expect(extra.structuredContent).toEqual({
      detail: [
        {
          type: "extra_forbidden",
          loc: ["query", "currency"],
          msg: "Extra inputs are not permitted",
          input: "eur",
        },
      ],
    });
    const none = await callTool("pricefeed__price", { coin: "eth" }, undefined, {}, partnerEnv);
    expect(none.content[0]?.text).toBe(
      "Invalid arguments (not charged): query.coin: this tool takes no arguments",
    );
    expect(seen).toEqual([]);
    expect(await nonceRow(pay.key)).toBeNull();
    expect(await upstreamRequests(`facilitator-verify nonce=${pay.nonce}`)).toBe(0);
  });
});
