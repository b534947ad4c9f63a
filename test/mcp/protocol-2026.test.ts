import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import type { PaymentRequirementsV1 } from "@x402/core/types/v1";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { skills } from "../../src/skills/registry";
import { callsLeft, keyWith } from "../fixtures/credits";
import { unsignedPayment } from "../fixtures/payments";
import { createPaymentHeader, v1Offer } from "../fixtures/payments-v1";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import type { ToolResult } from "../helpers";

// MCP 2026-07-28, the stateless revision: no initialize, every request carries its version in the
// MCP-Protocol-Version header and in _meta, and the client first asks server/discover. Served beside
// 2024-11-05 … 2025-11-25 (server.test.ts) by the same tools and the same payment chain.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const ORIGIN = "https://skills.test";
const VERSION = "2026-07-28";
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";

interface RpcAnswer {
  id: number | string | null;
  result?: Record<string, unknown> & { _meta?: Record<string, unknown> };
  error?: { code: number; message: string };
}

/** What the envelope of every 2026-07-28 request holds, as a client sends it. */
const envelope = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientInfo": { name: "modern-test", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

/** A 2025-11-25 tools/list (no envelope, no initialize needed: the transport is stateless). */
const legacyToolsList = (accept?: string) =>
  app.fetch(
    new Request(`${ORIGIN}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(accept === undefined ? {} : { accept }) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }),
    paidEnv,
  );

/** A 2026-07-28 tools/list as written. */
const modernToolsList = { jsonrpc: "2.0", id: 9, method: "tools/list", params: { _meta: envelope } };

let nextId = 1;
/**
 * A 2026-07-28 message as written, with the headers such a client sends (Mcp-Name for a named
 * call) and the connection's own `headers` (a card key, another Accept).
 */
function post(
  text: string,
  method: string,
  name?: string,
  e: object = paidEnv,
  headers: Record<string, string> = {},
) {
  return app.fetch(
    new Request(`${ORIGIN}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
        ...(name ? { "mcp-name": name } : {}),
        ...headers,
      },
      body: text,
    }),
    e,
  );
}

interface Connection {
  env?: object;
  headers?: Record<string, string>;
}

/** One 2026-07-28 request: its params with the envelope in their _meta. */
async function modern(
  method: string,
  params: Record<string, unknown> = {},
  name?: string,
  connection: Connection = {},
) {
  const { _meta, ...rest } = params as { _meta?: Record<string, unknown> };
  const body = {
    jsonrpc: "2.0",
    id: nextId++,
    method,
    params: { ...rest, _meta: { ...envelope, ..._meta } },
  };
  const res = await post(JSON.stringify(body), method, name, connection.env, connection.headers);
  return { status: res.status, answer: await res.json<RpcAnswer>() };
}

const call = (tool: string, args: unknown, meta: Record<string, unknown> = {}, connection?: Connection) =>
  modern("tools/call", { name: tool, arguments: args, _meta: meta }, tool, connection);

type Result = ToolResult & { structuredContent?: Record<string, unknown> };
const resultOf = (answer: RpcAnswer) => answer.result as unknown as Result;

const settles = (nonce: string) => upstreamRequests(`facilitator-settle nonce=${nonce}`);
const ledgerRows = async (resource: string) =>
  (
    await env.DB.prepare("SELECT COUNT(*) AS n FROM payments WHERE resource = ?1").bind(resource).first<{
      n: number;
    }>()
  )?.n;

describe("MCP 2026-07-28 (per-request envelope, no initialize)", () => {
  it("is served, not refused with the 400 'Unsupported protocol version' of the 1.x SDK", async () => {
    const { status, answer } = await modern("tools/list");
    expect(status).toBe(200);
    expect(answer.error).toBeUndefined();
    expect(answer.result?.resultType).toBe("complete");
  });

  it("a message naming 2026-07-28 by header alone is refused as lacking the envelope, not as an unserved revision", async () => {
    const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 7, result: {} }), "tools/list");
    expect(res.status).toBe(400);
    const { error } = await res.json<RpcAnswer>();
    expect(error?.message).toBe(
      'Bad Request: a 2026-07-28 message carries _meta["io.modelcontextprotocol/protocolVersion"]',
    );
  });

  it("many requests log the SDK's warning about JSON answers at most once (one handler per isolate)", async () => {
    const warn = vi.spyOn(console, "warn");
    for (let i = 0; i < 3; i++) expect((await modern("tools/list")).status).toBe(200);
    const warnings = warn.mock.calls.filter((args) => String(args[0]).includes("responseMode"));
    expect(warnings.length).toBeLessThanOrEqual(1);
    warn.mockRestore();
  });

  it("server/discover names this server, its capabilities, the revision and the instructions", async () => {
    const { status, answer } = await modern("server/discover");
    expect(status).toBe(200);
    // The earlier revisions are negotiated by initialize, as before; discover names the modern ones.
    expect(answer.result).toMatchObject({
      supportedVersions: [VERSION],
      capabilities: { tools: {}, resources: {} },
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "agent-skills-marketplace" } },
    });
    expect(String(answer.result?.instructions)).toContain('_meta["x402/payment"]');
  });

  it("tools/list: the same tools, names and schemas as a 2025-11-25 client gets", async () => {
    const { answer } = await modern("tools/list");
    const tools = answer.result?.tools as { name: string }[];
    const legacy = await legacyToolsList("application/json, text/event-stream");
    expect(tools).toEqual(((await legacy.json()) as RpcAnswer).result?.tools);
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(skills.map((s) => s.id)));
  });

  it("an unpaid call is the tool error with the x402 offer, as in every revision", async () => {
    const { answer } = await call("sha256", { text: "abc" });
    const result = answer.result as { isError?: boolean; structuredContent?: PaymentRequired };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ x402Version: 2, error: expect.any(String) });
    expect(result.structuredContent?.accepts[0]?.amount).toBe(
      String(skills.find((s) => s.id === "sha256")?.price_atomic),
    );
  });

  it('a call paid with _meta["x402/payment"]: the result and its settlement, settled once', async () => {
    const offer = (await call("sha256", { text: "abc" })).answer.result?.structuredContent;
    const { payload, nonce } = unsignedPayment(offer as PaymentRequired, SETTLES_OK);
    const { answer } = await call("sha256", { text: "abc" }, { "x402/payment": payload });
    const result = answer.result as { isError?: boolean; structuredContent?: { hex?: string } };
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent?.hex).toMatch(/^ba7816bf/);
    expect(answer.result?._meta?.["x402/payment-response"]).toMatchObject({
      success: true,
      payer: SETTLES_OK,
    });
    expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(1);
    const { network, asset } = payload.accepted;
    const key = `${network}:${asset}:${SETTLES_OK}:${nonce}`.toLowerCase();
    const rows = await env.DB.prepare("SELECT resource FROM payments WHERE nonce = ?1").bind(key).all();
    expect(rows.results).toEqual([{ resource: "mcp:sha256" }]);

    // The same authorization again is refused by the one claim table, as in every revision.
    const again = (await call("sha256", { text: "abc" }, { "x402/payment": payload })).answer.result;
    expect(again?.structuredContent).toMatchObject({ reason: "payment_authorization_reused" });
    expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(1);
  });

  it("resources: a skill's docs read; a missing one is -32602, the code 2026-07-28 gives it", async () => {
    const uri = "skills://docs/token_count";
    const docs = await modern("resources/read", { uri }, uri);
    expect(docs.answer.result?.contents).toMatchObject([{ uri, mimeType: "text/markdown" }]);
    const missing = await modern("resources/read", { uri: "skills://docs/nope" }, "skills://docs/nope");
    expect(missing.answer.error?.code).toBe(-32602);
  });

  it("integers past 2^53 in a tool's arguments come back digit for digit (json_sort), as in 2025-11-25", async () => {
    const id = "12345678901234567890";
    const res = await post(
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":{"b":${id},"a":[-${id}1,1.5]}},"_meta":${JSON.stringify(envelope)}}}`,
      "tools/call",
      "json_sort",
      { ...env, FREE_BETA: "true" },
    );
    const text = await res.text();
    expect(text).toContain(`"b":${id}`);
    expect(text).toContain(`-${id}1`);
    expect(text).not.toContain("12345678901234567000");
  });

  it("an unknown tool is -32602 with the message a 2025 client gets", async () => {
    const { answer } = await call("nope", {});
    expect(answer.error).toMatchObject({ code: -32602, message: "Unknown tool: nope. See tools/list." });
  });
  it('a call paid with the v1 key _meta["x402.payment"] (x402-mcp): the result, both settlements, settled once', async () => {
    const unpaid = resultOf((await call("sha256", { text: "abc" })).answer);
    const payment = await createPaymentHeader(v1Offer(unpaid).accepts[0] as PaymentRequirementsV1);
    const { answer } = await call("sha256", { text: "abc" }, { "x402.payment": payment.header });
    const paid = resultOf(answer);
    expect(paid.isError, paid.content[0]?.text).toBeFalsy();
    expect(paid.structuredContent?.hex).toMatch(/^ba7816bf/);
    expect(paid._meta?.["x402.payment-response"]).toMatchObject({ success: true, network: "base" });
    expect(paid._meta?.["x402/payment-response"]).toMatchObject({ success: true, network: "eip155:8453" });
    expect(paid._meta?.["marketplace/receipt"]).toEqual(expect.any(String));
    expect(await settles(payment.nonce)).toBe(1);
    const rows = await env.DB.prepare("SELECT resource FROM payments WHERE nonce = ?1")
      .bind(payment.key)
      .all();
    expect(rows.results).toEqual([{ resource: "mcp:sha256" }]);
  });

  it("a card key on the connection pays its skill from its credits; the same idempotency key is answered once", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const connection = { headers: { authorization: `Bearer ${key}` } };
    const paid = resultOf((await call("slugify", { text: "Card Paid" }, {}, connection)).answer);
    expect(paid.isError, paid.content[0]?.text).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ slug: "card-paid" });
    expect(paid._meta?.["marketplace/credits-remaining"]).toBe(2);
    expect(paid._meta?.["x402/payment-response"]).toBeUndefined();

    const meta = { "marketplace/idempotency-key": crypto.randomUUID() };
    const once = resultOf((await call("slugify", { text: "Once" }, meta, connection)).answer);
    const again = resultOf((await call("slugify", { text: "Once" }, meta, connection)).answer);
    expect(once.isError).toBeFalsy();
    expect(again.structuredContent).toEqual(once.structuredContent);
    expect(again._meta?.["marketplace/idempotent-replay"]).toBe(true);
    expect(await callsLeft(env.DB, key)).toBe(1);
  });

  it("a payment that is no PaymentPayload is refused with why, beside the offer, and nothing is charged", async () => {
    const before = await ledgerRows("mcp:sha256");
    const { answer } = await call(
      "sha256",
      { text: "abc" },
      { "x402/payment": { x402Version: 2, garbage: true } },
    );
    const refused = resultOf(answer);
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({
      x402Version: 2,
      error: expect.stringMatching(
        /^Payment rejected: _meta\["x402\/payment"\] is not an x402 v2 PaymentPayload/,
      ),
      accepts: [expect.objectContaining({ network: "eip155:8453" })],
    });
    expect(refused.structuredContent).not.toHaveProperty("hex");
    expect(await ledgerRows("mcp:sha256")).toBe(before);
  });

  it("a GET partner tool's extra argument is extra_forbidden before any charge, paid or not", async () => {
    const partner = {
      env: { ...paidEnv, PARTNER_BASE_URLS: JSON.stringify({ pricefeed: "https://pricefeed.test" }) },
    };
    const unpaid = resultOf((await call("pricefeed__price_coin", { coin: "eth" }, {}, partner)).answer);
    const { payload, nonce } = unsignedPayment(
      unpaid.structuredContent as unknown as PaymentRequired,
      SETTLES_OK,
    );
    const { answer } = await call(
      "pricefeed__price_coin",
      { coin: "eth", currency: "eur" },
      { "x402/payment": payload },
      partner,
    );
    const extra = resultOf(answer);
    expect(extra.isError).toBe(true);
    expect(extra.content[0]?.text).toBe(
      "Invalid arguments (not charged): query.currency: this tool takes only coin",
    );
    expect(extra.structuredContent).toMatchObject({
      detail: [{ type: "extra_forbidden", loc: ["query", "currency"] }],
    });
    expect(await settles(nonce)).toBe(0);
  });

  it("an Accept naming neither JSON nor SSE is 406, as in 2025-11-25 (the SDK's handler answered it)", async () => {
    const res = await post(JSON.stringify(modernToolsList), "tools/list", undefined, paidEnv, {
      accept: "text/html",
    });
    expect(res.status).toBe(406);
    expect((await res.json<RpcAnswer>()).error).toMatchObject({
      code: -32000,
      message: "Not Acceptable: Client must accept application/json or text/event-stream",
    });
  });

  // Both eras, one rule: the header parsed (case, q values, parameters), not searched for a substring.
  it.each([
    ["application/json", 200],
    ["Application/JSON", 200],
    ["text/event-stream", 200],
    ["application/*", 200],
    ["*/*", 200],
    [undefined, 200],
    ["text/html;q=0.9, application/json;q=0.1", 200],
    ['application/json; profile="a,b"; q=0.5', 200],
    ["text/html", 406],
    ["text/*", 406],
    ["application/json;q=0", 406],
    ["text/html, */*;q=0", 406],
    ["application/jsonl", 406],
    ["application/json-patch+json", 406],
    ["x-application/json-foo", 406],
    ["text/plain; a=application/json", 406],
    ["*", 200],
    ["application/json;q=0, */*", 406],
    ["*/*;q=0, text/event-stream", 200],
    ["text/event-stream;q=0, application/json", 200],
    ["application/json;q=0, text/event-stream", 406],
    ["text/event-stream, application/*;q=0", 406],
    ["application/json;q=0, text/event-stream, */*", 406],
  ])("Accept %s is %i in 2026-07-28 and 2025-11-25", async (accept, status) => {
    const modern = await app.fetch(
      new Request(`${ORIGIN}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "mcp-protocol-version": VERSION,
          "mcp-method": "tools/list",
          ...(accept === undefined ? {} : { accept }),
        },
        body: JSON.stringify(modernToolsList),
      }),
      paidEnv,
    );
    expect(modern.status).toBe(status);
    expect((await legacyToolsList(accept)).status).toBe(status);
  });
});
