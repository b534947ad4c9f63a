import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import {
  decodePaymentRequiredHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../src/app";
import { call, type ErrorItem, ORIGIN } from "./helpers";

// Spec 2.8, copied by hand: [partner, service, method, path, partner price, listing price].
const SPEC: [string, string, string, string, number, number][] = [
  ["pricefeed", "price", "GET", "/price", 0.01, 0.03],
  ["pricefeed", "price_coin", "GET", "/price/{coin}", 0.02, 0.06],
  ["pricefeed", "portfolio", "GET", "/portfolio", 0.05, 0.15],
  ["pricefeed", "opportunities", "GET", "/opportunities/latest", 0.03, 0.09],
  ["pricefeed", "briefing", "GET", "/briefing/morning", 0.01, 0.03],
  ["pricefeed", "research", "GET", "/research/{topic}", 0.02, 0.06],
  ["pricefeed", "audit_x402", "GET", "/audit/x402", 1.0, 3.0],
  ["pricefeed", "receipt_verify", "POST", "/receipt/verify", 0.05, 0.15],
  ["pricefeed", "mcp_tools", "GET", "/mcp/tools", 0.0, 0.0],
  ["pricefeed", "mcp_call", "POST", "/mcp/call", 0.05, 0.15],
  ["textkit", "pii-redactor", "POST", "/api/redact", 0.01, 0.03],
  ["textkit", "rag-chunker", "POST", "/api/chunk", 0.012, 0.036],
  ["textkit", "heading-outline", "POST", "/api/outline", 0.01, 0.03],
  ["textkit", "csv-normalizer", "POST", "/api/normalize-csv", 0.008, 0.024],
  ["textkit", "text-structurer", "POST", "/api/structure", 0.015, 0.045],
  ["textkit", "token-counter", "POST", "/api/token-count", 0.005, 0.015],
  ["textkit", "base64", "POST", "/api/base64", 0.003, 0.009],
  ["textkit", "json-sort", "POST", "/api/json-sort", 0.004, 0.012],
  ["refinery", "eval_set", "POST", "/api/recipes/eval_set/run", 0.02, 0.06],
  ["refinery", "rag_chunks", "POST", "/api/recipes/rag_chunks/run", 0.02, 0.06],
  ["refinery", "policy_digest", "POST", "/api/recipes/policy_digest/run", 0.03, 0.09],
  ["refinery", "custom", "POST", "/api/recipes/custom/run", 0.02, 0.06],
  ["notifyhook", "notify", "POST", "/v1/hooks", 0.0, 0.0],
];

interface Flat {
  partner_id: string;
  service_id: string;
  id: string;
  method: string;
  path: string;
  partner_price_usd: number;
  price_usd: number;
  cost_multiplier: number;
  marketplace_fee_usd: number;
  partner_payout_usd: number;
  revenue_vs_cost: number | null;
  try_url: string;
  external_url: string;
  base_url: string;
  listing_status: string;
  [k: string]: unknown;
}
const listing = async (e = env) =>
  (await createApp().fetch(new Request("https://skills.test/api/partners"), e)).json<{
    partners: Record<string, unknown>[];
    services: Flat[];
    listing_status: string;
  }>();

describe("GET /api/partners", () => {
  it("lists the four partners and all 23 services of spec 2.8 with exact derived prices", async () => {
    const body = await listing();
    expect(body.listing_status).toBe("paid");
    expect(body.partners.map((p) => p.id)).toEqual(["pricefeed", "textkit", "refinery", "notifyhook"]);
    expect(
      body.services.map((s) => [
        s.partner_id,
        s.service_id,
        s.method,
        s.path,
        s.partner_price_usd,
        s.price_usd,
      ]),
    ).toEqual(SPEC);
    for (const s of body.services) {
      const free = s.partner_price_usd === 0;
      // Exact decimals: 3 × 0.012 is 0.036, not 0.036000000000000004.
      expect(String(s.price_usd)).toBe(
        String(SPEC.find((r) => r[1] === s.service_id && r[0] === s.partner_id)?.[5]),
      );
      expect(s.cost_multiplier).toBe(3);
      expect(s.partner_payout_usd).toBe(s.partner_price_usd);
      // In integer micro-dollars, then back: exactly the number the listing carries.
      expect(s.marketplace_fee_usd).toBe(
        (Math.round(s.price_usd * 1e6) - Math.round(s.partner_price_usd * 1e6)) / 1e6,
      );
      expect(s.revenue_vs_cost).toBe(free ? null : 3);
      expect(s.try_url).toBe(`/api/partners/${s.partner_id}/try/${s.service_id}`);
      expect(s.external_url).toBe(`${s.base_url}${s.path}`);
      const partner = body.partners.find((p) => p.id === s.partner_id);
      for (const [field, from] of [
        ["partner_name", "name"],
        ["provider", "provider"],
        ["github", "github"],
        ["icon", "icon"],
        ["base_url", "base_url"],
        ["listing_status", "listing_status"],
      ] as const) {
        expect(s[field], `${s.service_id}.${field}`).toBe(partner?.[from]);
        expect(s[field], `${s.service_id}.${field}`).toBeTruthy();
      }
      for (const hidden of ["test_params", "test_headers", "test_body", "our_margin_vs_cost"]) {
        expect(s, `${s.service_id}.${hidden}`).not.toHaveProperty(hidden);
      }
    }
    expect(body.services.find((s) => s.service_id === "rag-chunker")?.marketplace_fee_usd).toBe(0.024);
  });

  it("partner objects carry every field of spec 2.6, external fields only on the external partner", async () => {
    const { partners } = await listing();
    for (const p of partners) {
      expect(p).toMatchObject({ category: "hosted_partner", network: "base", cost_multiplier: 3 });
      for (const k of [
        "id",
        "name",
        "provider",
        "github",
        "base_url",
        "icon",
        "description",
        "facilitator",
        "ownership_wallet",
        "listing_status",
        "services",
      ]) {
        expect(p, `${p.id}.${k}`).toHaveProperty(k);
      }
      const services = p.services as { our_margin_vs_cost: number | null; partner_price_usd: number }[];
      for (const s of services) expect(s.our_margin_vs_cost).toBe(s.partner_price_usd === 0 ? null : 2);
    }
    const notify = partners.find((p) => p.id === "notifyhook");
    expect(notify).toMatchObject({ listing_status: "external_x403", facilitator: "" });
    expect(notify?.billing_model).toBeTruthy();
    expect(notify?.protocol).toBeTruthy();
    const paid = partners.filter((p) => p.id !== "notifyhook");
    for (const p of paid) {
      expect(p).not.toHaveProperty("billing_model");
      expect(p.facilitator).toBe(env.FACILITATOR_URL);
    }
  });

  it("base URLs are overridable and the multiplier is configuration, refused below 3", async () => {
    const overridden = await listing({ ...env, PARTNER_BASE_URLS: '{"textkit":"http://127.0.0.1:9999/"}' });
    expect(overridden.services.find((s) => s.service_id === "base64")?.external_url).toBe(
      "http://127.0.0.1:9999/api/base64",
    );
    const four = await listing({ ...env, PARTNER_PRICE_MULTIPLIER: "4" });
    expect(four.services.find((s) => s.service_id === "rag-chunker")).toMatchObject({
      price_usd: 0.048,
      revenue_vs_cost: 4,
    });
    const low = await createApp().fetch(new Request("https://skills.test/api/partners"), {
      ...env,
      PARTNER_PRICE_MULTIPLIER: "2.5",
    });
    expect(low.status).toBe(503);
    expect((await low.json<{ detail: string }>()).detail).toMatch(/below the minimum of 3/);
  });

  it.each([
    ["null", /not a JSON object/],
    ["[]", /not a JSON object/],
    ['["http://127.0.0.1:1"]', /not a JSON object/],
    ["3", /not a JSON object/],
    ['"http://127.0.0.1:1"', /not a JSON object/],
    ["{nope", /not valid JSON/],
    ['{"textkit":"ftp://127.0.0.1/"}', /\["textkit"\] is not an http\(s\) URL/],
    ['{"textkit":"127.0.0.1:9999"}', /\["textkit"\] is not an http\(s\) URL/],
    ['{"textkit":5}', /\["textkit"\] is not an http\(s\) URL/],
  ])("PARTNER_BASE_URLS=%s is the documented 503, not a crash", async (value, message) => {
    const e = { ...env, PARTNER_BASE_URLS: value };
    for (const path of ["/api/partners", "/api/partners/textkit", "/api/partners/pricefeed/try/mcp_tools"]) {
      const res = await createApp().fetch(new Request(`${ORIGIN}${path}`), e);
      expect(res.status, path).toBe(503);
      const { detail } = await res.json<{ detail: string }>();
      expect(detail, path).toMatch(/^Partner listing is misconfigured: PARTNER_BASE_URLS/);
      expect(detail, path).toMatch(message);
    }
  });

  it("GET /api/partners/<id> for one; unknown is 404 JSON", async () => {
    expect(
      (await (await call("/api/partners/refinery")).json<{ services: unknown[] }>()).services,
    ).toHaveLength(4);
    const missing = await call("/api/partners/nope");
    expect(missing.status).toBe(404);
  });
});

describe("try: path parameters cannot change the upstream path or host", () => {
  it.each([
    "../admin",
    "..",
    "%2e%2e",
    "a%2fb",
    "a/b",
    "btc?x=1",
    "btc#frag",
    "evil.com",
    "@evil.com",
    "btc@evil.com",
    "http://evil.com",
    "//evil.com",
    "BTC",
    "b c",
    "b\\c",
    "",
    "-btc",
    "x".repeat(65),
  ])("coin=%j is refused with 422", async (value) => {
    const res = await call(`/api/partners/pricefeed/try/price_coin?coin=${encodeURIComponent(value)}`);
    expect(res.status).toBe(422);
    const body = await res.json<{ detail: { loc: string[] }[] }>();
    expect(body.detail[0]?.loc).toEqual(["query", "coin"]);
  });

  it("raw encoded slashes in the query are decoded before the check and refused", async () => {
    expect((await call("/api/partners/pricefeed/try/research?topic=a%2F..%2F..%2Fadmin")).status).toBe(422);
  });

  it("unknown partner or service is 404", async () => {
    expect((await call("/api/partners/nope/try/price")).status).toBe(404);
    expect((await call("/api/partners/pricefeed/try/nope")).status).toBe(404);
  });
});

// --- Stand-in network for try calls: partners and a facilitator answered inside the isolate ---------

const FACILITATOR = "https://facilitator.test";
const PARTNER_HOSTS: Record<string, string> = {
  pricefeed: "https://pricefeed.test",
  textkit: "https://textkit.test",
  refinery: "https://refinery.test",
  notifyhook: "https://notifyhook.test",
};
const CALLER_TX = `0x${"22".repeat(32)}`;
const PARTNER_TX = `0x${"33".repeat(32)}`;
const tryEnv = {
  ...env,
  FACILITATOR_URL: FACILITATOR,
  PARTNER_BASE_URLS: JSON.stringify(PARTNER_HOSTS),
  PARTNER_PAYER_KEY: generatePrivateKey(),
  ADMIN_TOKEN: "t0ken",
};

interface PartnerCall {
  req: Request;
  init: RequestInit | undefined;
}

/**
 * Replaces fetch for the partner hosts (answered by `partner`) and the facilitator (verifies every
 * payment; settles unless told not to). Everything else goes to the real network.
 */
function stubNetwork(partner: (req: Request) => Response | Promise<Response>, { settles = true } = {}) {
  const partnerCalls: PartnerCall[] = [];
  const settled: PaymentPayload[] = [];
  const realFetch = globalThis.fetch;
  const hosts = new Set(Object.values(PARTNER_HOSTS));
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const { origin, pathname } = new URL(req.url);
    if (hosts.has(origin)) {
      partnerCalls.push({ req: req.clone(), init });
      return partner(req);
    }
    if (origin !== FACILITATOR) return realFetch(input, init);
    const network = env.X402_NETWORK;
    if (pathname === "/supported")
      return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network }] });
    const { paymentPayload } = await req.json<{ paymentPayload: PaymentPayload }>();
    const payer = (paymentPayload.payload as { authorization: { from: string } }).authorization.from;
    if (pathname === "/verify") return Response.json({ isValid: true, payer });
    settled.push(paymentPayload);
    return Response.json(
      settles
        ? { success: true, transaction: CALLER_TX, network, payer }
        : { success: false, errorReason: "insufficient_funds", transaction: "", network, payer },
    );
  });
  return { partnerCalls, settled };
}
afterEach(() => {
  vi.restoreAllMocks();
});

/** A partner that is itself an x402 server: 402 until paid, then `paid(req)`. */
const x402Partner =
  (amount: string, paid: (req: Request) => Response) =>
  (req: Request): Response => {
    if (req.headers.get("payment-signature")) return paid(req);
    const required = encodePaymentRequiredHeader({
      x402Version: 2,
      resource: { url: req.url, description: "partner data", mimeType: "application/json" },
      accepts: [
        {
          scheme: "exact",
          network: env.X402_NETWORK as `${string}:${string}`,
          amount,
          asset: env.USDC_ADDRESS,
          payTo: "0x1111111111111111111111111111111111111111",
          maxTimeoutSeconds: 300,
          extra: { name: "USD Coin", version: "2" },
        },
      ],
    });
    return Response.json({}, { status: 402, headers: { "payment-required": required } });
  };
const receipt = (amount: string) => ({
  "payment-response": encodePaymentResponseHeader({
    success: true,
    transaction: PARTNER_TX,
    network: env.X402_NETWORK as `${string}:${string}`,
    amount,
  }),
});

const send = (path: string, init: RequestInit = {}, e: object = tryEnv) =>
  createApp().fetch(new Request(`${ORIGIN}${path}`, init), e);

/** Asks for the price, then pays it from a fresh caller wallet, as @x402/fetch would. */
async function paidCall(path: string, init: RequestInit = {}, e: object = tryEnv) {
  const challenge = await send(path, init, e);
  expect(challenge.status).toBe(402);
  const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required") ?? "");
  const caller = registerExactEvmScheme(new x402Client(), {
    signer: privateKeyToAccount(generatePrivateKey()),
  });
  const headers = new Headers(init.headers);
  headers.set("payment-signature", encodePaymentSignatureHeader(await caller.createPaymentPayload(required)));
  return send(path, { ...init, headers }, e);
}

const upstreamRows = (requestId: string | null) =>
  env.DB.prepare("SELECT * FROM upstream_payments WHERE request_id = ?1")
    .bind(requestId)
    .all<Record<string, unknown>>()
    .then((r) => r.results);
const payoutRows = (requestId: string | null) =>
  env.DB.prepare("SELECT * FROM payout_ledger WHERE request_id = ?1")
    .bind(requestId)
    .all<Record<string, unknown>>()
    .then((r) => r.results);

describe("try: HEAD is refused before anything runs", () => {
  it.each(["price", "price_coin", "mcp_tools"])("HEAD %s → 405 with Allow, no upstream call", async (id) => {
    const { partnerCalls, settled } = stubNetwork(() => Response.json({ ok: true }));
    const res = await send(`/api/partners/pricefeed/try/${id}`, { method: "HEAD" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
    expect(partnerCalls).toHaveLength(0);
    expect(settled).toHaveLength(0);
  });
});

describe("try: the upstream call's limits", () => {
  it("a timeout while reading the answer is a 504, not charged", async () => {
    for (const name of ["TimeoutError", "AbortError"]) {
      stubNetwork(() => {
        const body = new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('{"tools":['));
            controller.error(new DOMException("The operation timed out.", name));
          },
        });
        return new Response(body, { headers: { "content-type": "application/json" } });
      });
      const res = await send("/api/partners/pricefeed/try/mcp_tools");
      expect(res.status, name).toBe(504);
      expect(await res.json(), name).toMatchObject({ charged: false, partner_id: "pricefeed" });
      vi.restoreAllMocks();
    }
  });

  it("one deadline covers the whole call: every redirect hop shares the same signal", async () => {
    const { partnerCalls } = stubNetwork((req) =>
      new URL(req.url).pathname === "/mcp/tools"
        ? new Response(null, { status: 302, headers: { location: "/mcp/tools/v2" } })
        : Response.json({ tools: [] }),
    );
    const res = await send("/api/partners/pricefeed/try/mcp_tools");
    expect(res.status).toBe(200);
    expect(partnerCalls).toHaveLength(2);
    const [first, second] = partnerCalls.map((p) => p.init?.signal);
    expect(first).toBeInstanceOf(AbortSignal);
    expect(second).toBe(first);
  });

  it("a redirect off the partner's host is refused: 502, not followed, caller not charged", async () => {
    const { partnerCalls, settled } = stubNetwork(
      () => new Response(null, { status: 302, headers: { location: "https://evil.test/steal" } }),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: false, upstream_status: 302 });
    expect(res.headers.get("payment-response")).toBeNull();
    expect(settled).toHaveLength(0);
    expect(partnerCalls.map((c) => new URL(c.req.url).host)).toEqual(["pricefeed.test"]);
  });

  it("an answer over 1 MB is a 502, caller not charged", async () => {
    const { settled } = stubNetwork(
      () => new Response("x".repeat(1024 * 1024 + 1), { headers: { "content-type": "text/plain" } }),
    );
    const res = await paidCall("/api/partners/textkit/try/base64", { method: "POST" });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: false, detail: expect.stringMatching(/larger than/) });
    expect(settled).toHaveLength(0);
  });

  it("a partner's 402 without an operating wallet: 502, caller not charged, nothing paid upstream", async () => {
    const { partnerCalls, settled } = stubNetwork(x402Partner("10000", () => Response.json({ prices: {} })));
    const res = await paidCall("/api/partners/pricefeed/try/price", {}, { ...tryEnv, PARTNER_PAYER_KEY: "" });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: false, upstream_status: 402 });
    expect(settled).toHaveLength(0);
    expect(partnerCalls.every((c) => !c.req.headers.has("payment-signature"))).toBe(true);
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([]);
  });
});

describe("try: money paid upstream from the operating wallet is always recorded", () => {
  it("a paid 2xx without a receipt header still counts as paid upstream; the caller's row is not owed", async () => {
    stubNetwork(x402Partner("10000", () => Response.json({ prices: { btc: 1 } })));
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true, upstream_status: 200 });
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([
      expect.objectContaining({
        partner_id: "pricefeed",
        service_id: "price",
        amount_micro: 10000,
        tx_hash: null,
        upstream_status: 200,
      }),
    ]);
    expect(await payoutRows(id)).toEqual([
      expect.objectContaining({ partner_share_micro: 10000, paid_upstream: 1, batch_id: null }),
    ]);
  });

  it("a caller whose payment does not settle never costs us the partner's price (issue 19.1)", async () => {
    const { settled, partnerCalls } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: {} }, { headers: receipt("10000") })),
      { settles: false },
    );
    const rows = () => env.DB.prepare("SELECT count(*) AS n FROM upstream_payments").first<number>("n");
    const before = await rows();
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(402);
    expect((await res.json<{ reason: string }>()).reason).toBe("insufficient_funds");
    // The caller was settled first and that failed: the partner saw only the unpaid request.
    expect(settled).toHaveLength(1);
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null]);
    expect(await rows()).toBe(before);
  });

  it("the partner took our payment but answered non-2xx: the caller, settled first, gets back what we kept", async () => {
    const { settled } = stubNetwork(
      x402Partner("20000", () =>
        Response.json({ error: "boom" }, { status: 500, headers: receipt("20000") }),
      ),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      paid_upstream: true,
      upstream_status: 500,
      refund: { status: "refunded", amount_usd: 0.04 },
    });
    // The caller's settlement, then the refund from the operating wallet to the caller.
    expect(settled).toHaveLength(2);
    const [callerSettle, refundSettle] = settled as [PaymentPayload, PaymentPayload];
    const refundAuth = (refundSettle.payload as { authorization: { to: string; value: string } })
      .authorization;
    const callerAuth = (callerSettle.payload as { authorization: { from: string } }).authorization;
    expect(refundAuth).toMatchObject({ to: callerAuth.from, value: "40000" });
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([
      expect.objectContaining({ amount_micro: 20000, tx_hash: PARTNER_TX, upstream_status: 500 }),
    ]);
    expect(await payoutRows(id)).toEqual([]);
    const report = await (
      await send("/api/admin/payouts", { headers: { authorization: "Bearer t0ken" } })
    ).json<{ refunds: Record<string, unknown>[] }>();
    expect(report.refunds.find((r) => r.request_id === id)).toMatchObject({
      amount_micro: 40000,
      withheld_micro: 20000,
      status: "refunded",
    });
  });
});

describe("try: an authorization handed to a partner is recorded even without an answer", () => {
  it("the paid request fails in transit: 502, the signed amount recorded and withheld from the refund", async () => {
    const { settled } = stubNetwork(
      x402Partner("20000", () => {
        throw new TypeError("Network connection lost.");
      }),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "refunded", amount_usd: 0.04 },
    });
    expect(settled).toHaveLength(2);
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([
      expect.objectContaining({ amount_micro: 20000, tx_hash: null, upstream_status: 0 }),
    ]);
  });
});

describe("try: the external notify partner is only probed", () => {
  it("sends its own sample body and headers, never the caller's; a 403 is reported", async () => {
    const { partnerCalls } = stubNetwork(() => Response.json({ error: "grant_required" }, { status: 403 }));
    const res = await send("/api/partners/notifyhook/try/notify", {
      method: "POST",
      headers: { "content-type": "application/json", "x-watch-id": "caller-watch" },
      body: JSON.stringify({ message: "from the caller" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ upstream_status: 403, charged: false, price_usd: 0 });
    expect(partnerCalls).toHaveLength(1);
    const sent = partnerCalls[0]?.req;
    expect(await sent?.json()).toEqual({});
    expect(sent?.headers.get("x-watch-id")).toBe("demo-watch");
  });

  it("anything but the 403 challenge is a 502, never a paid 200", async () => {
    stubNetwork(() => Response.json({ delivered: true }));
    const res = await send("/api/partners/notifyhook/try/notify", { method: "POST" });
    expect(res.status).toBe(502);
    const body = await res.json<Record<string, unknown>>();
    expect(body).toMatchObject({ charged: false, upstream_status: 200, partner_id: "notifyhook" });
    expect(body).not.toHaveProperty("body");
  });
});

describe("refinery native skill: body validation (FastAPI shape)", () => {
  const post = (body: unknown) =>
    paidCall("/api/skills/refinery-recipes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("an unknown recipe is a 422 literal_error and nothing settles", async () => {
    const { partnerCalls, settled } = stubNetwork(() => Response.json({}));
    const res = await post({ raw: "text", request: "what", recipe: "nope" });
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: ErrorItem[] }>()).detail).toEqual([
      {
        loc: ["body", "recipe"],
        msg: "Input should be 'eval_set', 'rag_chunks', 'policy_digest' or 'custom'",
        type: "literal_error",
        input: "nope",
        ctx: { expected: "'eval_set', 'rag_chunks', 'policy_digest' or 'custom'" },
      },
    ]);
    expect(partnerCalls).toHaveLength(0);
    expect(settled).toHaveLength(0);
  });

  it.each(["raw", "request"])("a missing %s is a 422 missing", async (field) => {
    stubNetwork(() => Response.json({}));
    const body: Record<string, string> = { raw: "text", request: "what", recipe: "eval_set" };
    delete body[field];
    const res = await post(body);
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: ErrorItem[] }>()).detail).toEqual([
      { loc: ["body", field], msg: "Field required", type: "missing", input: body },
    ]);
  });
});

describe("admin payouts", () => {
  const admin = { ...env, ADMIN_TOKEN: "t0ken" };
  const req = (path: string, init: RequestInit = {}) =>
    createApp().fetch(
      new Request(`https://skills.test${path}`, {
        ...init,
        headers: { authorization: "Bearer t0ken", ...(init.headers ?? {}) },
      }),
      admin,
    );

  it("sums owed per partner and service, exports CSV, settles to zero without deleting history", async () => {
    const rows: [string, string, number, number, number][] = [
      ["textkit", "base64", 3000, 6000, 0],
      ["textkit", "base64", 3000, 6000, 0],
      ["textkit", "json-sort", 4000, 8000, 0],
      ["pricefeed", "price", 10000, 20000, 1],
    ];
    for (const [i, [p, s, share, fee, up]] of rows.entries()) {
      await env.DB.prepare(
        "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES (?1, ?2, ?3, ?4, '0xabc', '0xtx', ?5, ?6, 0)",
      )
        .bind(p, s, share, fee, `payout-test-${i}`, up)
        .run();
    }
    const before = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number }[];
      services: { service_id: string; owed_usd: number; calls: number }[];
    }>();
    expect(before.partners.find((p) => p.partner_id === "textkit")?.owed_usd).toBe(0.01);
    expect(before.partners.find((p) => p.partner_id === "pricefeed")?.owed_usd).toBe(0);
    expect(before.services.find((s) => s.service_id === "base64")).toMatchObject({
      owed_usd: 0.006,
      calls: 2,
    });

    const csv = await (await req("/api/admin/payouts?format=csv")).text();
    expect(csv.split("\n")[0]).toBe(
      "id,partner_id,service_id,partner_share_usd,marketplace_fee_usd,payer,tx_hash,request_id,paid_upstream,batch_id,created_at",
    );
    expect(csv).toContain("textkit,base64,0.003,0.006");

    const tx = `0x${"ab".repeat(32)}`;
    const settled = await req("/api/admin/payouts/textkit/settle", {
      method: "POST",
      body: JSON.stringify({ tx_hash: tx }),
    });
    expect(await settled.json()).toMatchObject({
      partner_id: "textkit",
      batch: { amount_usd: 0.01, rows: 3, tx_hash: tx },
    });
    const after = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number; earned_usd: number }[];
    }>();
    expect(after.partners.find((p) => p.partner_id === "textkit")).toMatchObject({
      owed_usd: 0,
      earned_usd: 0.01,
    });
    expect(
      (
        await req("/api/admin/payouts/textkit/settle", {
          method: "POST",
          body: JSON.stringify({ tx_hash: tx }),
        })
      ).status,
    ).toBe(409);
    expect(
      (await req("/api/admin/payouts/nope/settle", { method: "POST", body: JSON.stringify({ tx_hash: tx }) }))
        .status,
    ).toBe(404);
    expect(
      (await req("/api/admin/payouts/textkit/settle", { method: "POST", body: '{"tx_hash":"nope"}' })).status,
    ).toBe(422);
  });

  it("needs the admin token", async () => {
    const res = await createApp().fetch(new Request("https://skills.test/api/admin/payouts"), admin);
    expect(res.status).toBe(401);
    const disabled = await call("/api/admin/payouts");
    expect(disabled.status).toBe(503);
  });
});
