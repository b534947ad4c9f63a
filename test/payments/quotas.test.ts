import { env } from "cloudflare:test";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { publicConfig } from "../../src/config";
import { pricingConfig } from "../../src/partners/config";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { isHeavy, LIMITS, NETWORK_MULTIPLES } from "../../src/payments/quotas";
import { sellables } from "../../src/payments/sellables";
import { keyWith } from "../fixtures/credits";
import { freshWindow, installWindowGuard, ONE_MORE_RUN } from "../fixtures/rate-window";

// The figures of wrangler.toml [[ratelimits]] (miniflare runs the real binding here), as the
// published terms state them (test/scripts/deploy-check.test.ts holds LIMITS to wrangler.toml).
const { RL_IP, RL_PAYER, RL_PAYER_HEAVY, RL_FREE } = LIMITS;

const FACILITATOR = "https://facilitator.test";
const PARTNER_HOSTS = { pricefeed: "https://pricefeed.test", notifyhook: "https://notifyhook.test" };
const limitedEnv = {
  ...env,
  RATE_LIMITS: "on",
  FREE_BETA: "false",
  FACILITATOR_URL: FACILITATOR,
  PARTNER_BASE_URLS: JSON.stringify(PARTNER_HOSTS),
};
const app = createApp();

/**
 * Every outgoing request, and a facilitator that refuses every payment at /verify (a cheap 402),
 * except those signed with GOOD_SIGNATURE, which it verifies and settles.
 */
function network() {
  const calls: string[] = [];
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    calls.push(`${req.method} ${url.origin}${url.pathname}`);
    if (url.origin === FACILITATOR) {
      if (url.pathname === "/supported")
        return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });
      const { paymentPayload } = await req.json<{ paymentPayload: PaymentPayload }>();
      const { signature, authorization } = paymentPayload.payload as {
        signature: string;
        authorization: { from: string };
      };
      if (url.pathname === "/verify" && signature === GOOD_SIGNATURE)
        return Response.json({ isValid: true, payer: authorization.from });
      if (url.pathname === "/settle" && signature === GOOD_SIGNATURE)
        return Response.json({
          success: true,
          transaction: `0x${"ab".repeat(32)}`,
          network: env.X402_NETWORK,
          payer: authorization.from,
        });
      return Response.json({ isValid: false, invalidReason: "invalid_exact_evm_payload_signature" });
    }
    if (Object.values(PARTNER_HOSTS).includes(url.origin)) {
      return url.origin === PARTNER_HOSTS.notifyhook
        ? new Response("grant required", { status: 403 })
        : Response.json({ tools: [] });
    }
    return real(input, init);
  });
  return {
    to: (origin: string) => calls.filter((c) => c.includes(origin)).length,
    verifies: () => calls.filter((c) => c.endsWith("/verify")).length,
  };
}
afterEach(() => {
  vi.restoreAllMocks();
});

const randomIp = () => `10.${[0, 0, 0].map(() => Math.floor(Math.random() * 250) + 1).join(".")}`;
const hex16 = () => Math.floor(Math.random() * 0xffff).toString(16);
/** A random IPv6 /48 (its first three groups); `lan(p, s, n)` is an address in its /56 `s`, /64 `n`. */
const randomNet48 = () => `2a01:${hex16()}:${hex16()}`;
const lan = (net48: string, s56: number, n64: number) =>
  `${net48}:${((s56 << 8) | n64).toString(16)}:${hex16()}:${hex16()}:${hex16()}:${hex16()}`;
const randomPayer = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(20))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

/**
 * Checkouts of one test, and how many Stripe sessions they made. The Stripe client keeps the fetch
 * it was made with (network() does not see it), so sessions are counted by their rows, each
 * written only with its Stripe session: a first-call payload marks this test's.
 */
function markedCheckouts() {
  const marker = crypto.randomUUID();
  return {
    checkout: (ip: string) =>
      send("/api/cardpay/checkout", { ip, body: { skill_id: "sha256", payload: { text: marker } } }),
    sessions: async () =>
      (
        await env.DB.prepare("SELECT COUNT(*) AS n FROM checkout_sessions WHERE payload LIKE ?1")
          .bind(`%${marker}%`)
          .first<{ n: number }>()
      )?.n,
  };
}

function send(
  path: string,
  init: { ip: string; headers?: Record<string, string>; body?: unknown; env?: typeof limitedEnv },
) {
  const method = init.body === undefined && path.includes("/try/") ? "GET" : "POST";
  return app.fetch(
    new Request(`https://skills.test${path}`, {
      method,
      headers: { "cf-connecting-ip": init.ip, "content-type": "application/json", ...init.headers },
      body: method === "POST" ? JSON.stringify(init.body ?? {}) : undefined,
    }),
    init.env ?? limitedEnv,
  );
}

const GOOD_SIGNATURE = `0x${"22".repeat(65)}`;

function signature(from: string, amount = "3000", sig = `0x${"11".repeat(65)}`, path = "/api/skills/sha256") {
  const payload: PaymentPayload = {
    x402Version: 2,
    resource: { url: `https://skills.test${path}`, description: "", mimeType: "application/json" },
    accepted: {
      scheme: "exact",
      network: env.X402_NETWORK as `${string}:${string}`,
      asset: env.USDC_ADDRESS,
      amount,
      payTo: limitedEnv.PAY_TO,
      maxTimeoutSeconds: 300,
      extra: { name: "USD Coin", version: "2" },
    },
    payload: {
      signature: sig,
      authorization: {
        from,
        to: limitedEnv.PAY_TO,
        value: amount,
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + 300),
        nonce: `0x${"ab".repeat(32)}`,
      },
    },
  };
  return { "payment-signature": encodePaymentSignatureHeader(payload) };
}

async function expect429(res: Response, scope: string) {
  expect(res.status).toBe(429);
  expect(res.headers.get("retry-after")).toBe("60");
  const body = await res.json<{ detail: string; reason: string; scope: string }>();
  expect(body).toMatchObject({ reason: "rate_limited", scope });
  expect(body.detail).toMatch(/^Too many requests: .*nothing was charged/);
  return body;
}

describe("rate limits (Workers Rate Limiting binding)", ONE_MORE_RUN, () => {
  installWindowGuard();

  it("an unpaid-402 flood from one IP is cut at 600 a minute; other IPs are untouched", async () => {
    await freshWindow();
    const net = network();
    const ip = randomIp();
    const statuses: number[] = [];
    for (let i = 0; i < RL_IP; i++) statuses.push((await send("/api/skills/sha256", { ip })).status);
    expect(statuses.every((s) => s === 402)).toBe(true);
    await expect429(await send("/api/skills/json-sort", { ip }), "ip");
    expect((await send("/api/skills/sha256", { ip: randomIp() })).status).toBe(402);
    // An unpaid 402 never reaches the facilitator, limited or not.
    expect(net.verifies()).toBe(0);
  }, 120_000);

  it("an MCP client's tools/call counts against its own IP, not one bucket shared by every MCP client", async () => {
    await freshWindow();
    network();
    const mcpCall = (ip: string) =>
      app.fetch(
        new Request("https://skills.test/mcp", {
          method: "POST",
          headers: {
            "cf-connecting-ip": ip,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "sha256", arguments: { text: "x" } },
          }),
        }),
        limitedEnv,
      );
    const result = async (res: Response) =>
      (await res.json<{ result: { isError: boolean; structuredContent: Record<string, unknown> } }>()).result;
    const ip = randomIp();
    for (let i = 0; i < RL_IP; i++) await send("/api/skills/sha256", { ip });
    // The flooding client is limited over MCP too; another client is offered the payment.
    expect((await result(await mcpCall(ip))).structuredContent).toMatchObject({
      reason: "rate_limited",
      scope: "ip",
    });
    expect((await result(await mcpCall(randomIp()))).structuredContent).toMatchObject({
      x402Version: 2,
      accepts: expect.any(Array),
    });
  }, 120_000);

  it("a discovery crawler probing every priced route twice from one IP is never limited", async () => {
    await freshWindow();
    network();
    const cfg = publicConfig(limitedEnv, "https://skills.test/");
    const pricing = pricingConfig(limitedEnv);
    const routes = sellables(cfg, "error" in pricing ? undefined : pricing);
    expect(routes.length).toBeGreaterThan(15);
    const ip = randomIp();
    for (let sweep = 0; sweep < 2; sweep++) {
      for (const r of routes) {
        const res = await send(r.path, { ip, body: r.methods.includes("POST") ? {} : undefined });
        expect(res.status, r.path).not.toBe(429);
      }
    }
  }, 120_000);

  it("one payer is cut at 120 verified calls a minute of a skill, and the 121st is never settled", async () => {
    await freshWindow();
    const net = network();
    const payer = randomPayer();
    const paid = () => signature(payer, "3000", GOOD_SIGNATURE);
    for (let i = 0; i < RL_PAYER - 1; i++) {
      // Verified, then refused for its body (422): counted, never settled.
      const res = await send("/api/skills/sha256", { ip: randomIp(), headers: paid(), body: {} });
      expect(res.status).toBe(422);
    }
    // The last call of the budget runs and is settled: counted once, though payerQuota stands twice
    // in the chain (the second only for x402 beside a card key, routes/skills.ts).
    const last = await send("/api/skills/sha256", { ip: randomIp(), headers: paid(), body: { text: "a" } });
    expect(last.status).toBe(200);
    expect(net.to(`${FACILITATOR}/settle`)).toBe(1);
    expect(net.verifies()).toBe(RL_PAYER);
    await expect429(
      await send("/api/skills/sha256", { ip: randomIp(), headers: paid(), body: { text: "a" } }),
      "payer",
    );
    // Paid by x402 beside a card key with no credit left (verified after the body there: gate.ts
    // x402BesideDryKey), the payer's limit holds too.
    const dry = { ...paid(), authorization: `Bearer ${await keyWith(env.DB, 0, "sha256")}` };
    await expect429(
      await send("/api/skills/sha256", { ip: randomIp(), headers: dry, body: { text: "a" } }),
      "payer",
    );
    expect(net.to(`${FACILITATOR}/settle`)).toBe(1);
    // The limit is per skill: the same payer still reaches another one.
    const slugify = signature(payer, "3000", GOOD_SIGNATURE, "/api/skills/slugify");
    expect((await send("/api/skills/slugify", { ip: randomIp(), headers: slugify })).status).toBe(422);
  }, 120_000);

  it("payments forged in a payer's name never use up that payer's budget", async () => {
    await freshWindow();
    const net = network();
    const victim = randomPayer();
    // Signatures the facilitator refuses, naming the victim as payer, from many IPs.
    for (let i = 0; i < RL_PAYER + 30; i++) {
      const res = await send("/api/skills/sha256", { ip: randomIp(), headers: signature(victim), body: {} });
      expect(res.status).toBe(402);
    }
    expect(net.verifies()).toBe(RL_PAYER + 30);
    const own = await send("/api/skills/sha256", {
      ip: randomIp(),
      headers: signature(victim, "3000", GOOD_SIGNATURE),
      body: {},
    });
    expect(own.status).toBe(422);
  }, 120_000);

  it("skills in RATE_LIMIT_HEAVY get the 30-a-minute payer limit", async () => {
    await freshWindow();
    const net = network();
    const payer = randomPayer();
    const paid = () => signature(payer, "10000", GOOD_SIGNATURE, "/api/skills/osint-graph");
    for (let i = 0; i < RL_PAYER_HEAVY; i++) {
      const res = await send("/api/skills/osint-graph", { ip: randomIp(), headers: paid() });
      expect(res.status).toBe(422);
    }
    await expect429(await send("/api/skills/osint-graph", { ip: randomIp(), headers: paid() }), "payer");
    expect(net.verifies()).toBe(RL_PAYER_HEAVY + 1);
    expect(isHeavy(limitedEnv, "partner:pricefeed/price")).toBe(true);
    expect(isHeavy({ ...limitedEnv, RATE_LIMIT_HEAVY: "sha256" }, "osint_graph")).toBe(false);
  }, 120_000);

  it("a card-credit key is cut at 120 calls a minute and the 121st spends no credit", async () => {
    await freshWindow();
    network();
    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'sha256', 200, 200, 0)",
    )
      .bind(crypto.randomUUID(), await hashKey(key))
      .run();
    const headers = { authorization: `Bearer ${key}` };
    for (let i = 0; i < RL_PAYER; i++) {
      const res = await send("/api/skills/sha256", { ip: randomIp(), headers, body: { text: `c${i}` } });
      expect(res.status).toBe(200);
    }
    // The same key in the other forms the gate accepts is the same bucket.
    for (const h of [headers, { "x-api-key": key }, { authorization: key }]) {
      await expect429(
        await send("/api/skills/sha256", { ip: randomIp(), headers: h, body: { text: "over" } }),
        "key",
      );
    }
    const row = await env.DB.prepare("SELECT calls_left FROM api_keys WHERE key_hash = ?1")
      .bind(await hashKey(key))
      .first<{ calls_left: number }>();
    expect(row?.calls_left).toBe(200 - RL_PAYER);
  }, 120_000);

  it.each([
    ["the free mcp_tools partner service", "/api/partners/pricefeed/try/mcp_tools", PARTNER_HOSTS.pricefeed],
    ["the notify probe", "/api/partners/notifyhook/try/notify", PARTNER_HOSTS.notifyhook],
  ])(
    "%s: 20 a minute per IP, then 429 without an upstream request",
    async (_name, path, host) => {
      await freshWindow();
      const net = network();
      const ip = randomIp();
      const body = path.endsWith("notify") ? {} : undefined;
      for (let i = 0; i < RL_FREE; i++) expect((await send(path, { ip, body })).status).toBe(200);
      expect(net.to(host)).toBe(RL_FREE);
      await expect429(await send(path, { ip, body }), "free");
      expect(net.to(host)).toBe(RL_FREE);
      expect((await send(path, { ip: randomIp(), body })).status).toBe(200);
    },
    120_000,
  );

  it("free beta: a skill that costs upstream requests is a free route (20 a minute per IP, then 429 without one); others keep the priced routes' limit", async () => {
    await freshWindow();
    const wikipedia = new URL(env.WIKIPEDIA_API_BASE).origin;
    const upstream: string[] = [];
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = new Request(input, init).url;
      if (url.startsWith(wikipedia)) upstream.push(url);
      return real(input, init);
    });
    const beta = { ...limitedEnv, FREE_BETA: "true", NETWORK_CACHE_TTL_SECONDS: "0" };
    const call = (path: string, ip: string, body: unknown) =>
      app.fetch(
        new Request(`https://skills.test${path}`, {
          method: "POST",
          headers: { "cf-connecting-ip": ip, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
        beta,
      );
    const ip = randomIp();
    for (let i = 0; i < RL_FREE; i++) {
      const res = await call("/api/skills/research", ip, { query: `beta topic ${i}` });
      expect(res.status).not.toBe(429);
    }
    const fetched = upstream.length;
    expect(fetched).toBeGreaterThanOrEqual(RL_FREE);
    await expect429(await call("/api/skills/research", ip, { query: "one more" }), "free");
    expect(upstream.length).toBe(fetched);
    expect((await call("/api/skills/research", randomIp(), { query: "another caller" })).status).not.toBe(
      429,
    );
    // A skill without upstream requests stays on RL_IP.
    for (let i = 0; i <= RL_FREE; i++) {
      expect((await call("/api/skills/sha256", ip, { text: `t${i}` })).status).toBe(200);
    }
  }, 120_000);

  it("checkout-session creation: 20 a minute per IP, then 429 without a Stripe request", async () => {
    await freshWindow();
    network();
    const { checkout, sessions } = markedCheckouts();
    const ip = randomIp();
    for (let i = 0; i < RL_FREE; i++) expect((await checkout(ip)).status).toBe(200);
    expect(await sessions()).toBe(RL_FREE);
    await expect429(await checkout(ip), "free");
    expect(await sessions()).toBe(RL_FREE);
  }, 120_000);

  it("an IPv6 host is one caller per /64: a new address per request does not escape the limit", async () => {
    await freshWindow();
    network();
    const hex = () => Math.floor(Math.random() * 0xffff).toString(16);
    const prefix = `2a01:${hex()}:${hex()}:${hex()}`;
    for (let i = 1; i <= RL_FREE; i++) {
      const res = await send("/api/cardpay/checkout", {
        ip: `${prefix}::${i.toString(16)}`,
        body: { skill_id: "sha256" },
      });
      expect(res.status).toBe(200);
    }
    const sameLan = `${prefix}:${hex()}:${hex()}:${hex()}:${hex()}`;
    await expect429(
      await send("/api/cardpay/checkout", { ip: sameLan, body: { skill_id: "sha256" } }),
      "free",
    );
    // Another /64 has its own budget; an IPv4-mapped address is its IPv4 address's.
    const otherLan = `2a01:${hex()}:${hex()}:${hex()}::1`;
    expect((await send("/api/cardpay/checkout", { ip: otherLan, body: { skill_id: "sha256" } })).status).toBe(
      200,
    );
    const v4 = randomIp();
    for (let i = 0; i < RL_FREE; i++)
      await send("/api/cardpay/checkout", { ip: v4, body: { skill_id: "sha256" } });
    await expect429(
      await send("/api/cardpay/checkout", { ip: `::ffff:${v4}`, body: { skill_id: "sha256" } }),
      "free",
    );
  }, 120_000);

  it("the /64s of one IPv6 /48 share 16 clients' checkouts a minute: past them 429 without a Stripe request; another /48 is untouched", async () => {
    expect(LIMITS.RL_FREE_48).toBe(RL_FREE * NETWORK_MULTIPLES[48]);
    await freshWindow(50);
    network();
    const { checkout, sessions } = markedCheckouts();
    const net48 = randomNet48();
    // A /64 never seen before for every call, 40 per /56 (below a /56's own budget of 80).
    for (let i = 0; i < LIMITS.RL_FREE_48; i++) {
      expect((await checkout(lan(net48, Math.floor(i / 40), i % 40))).status).toBe(200);
    }
    expect(await sessions()).toBe(LIMITS.RL_FREE_48);
    const refused = await expect429(await checkout(lan(net48, 0xff, 0xff)), "free");
    expect(refused.detail).toContain(`from your network ${net48}::/48`);
    expect(await sessions()).toBe(LIMITS.RL_FREE_48);
    expect((await checkout(lan(randomNet48(), 0, 0))).status).toBe(200);
  }, 120_000);

  it("one IPv6 /56 gets 4 clients' budget of a free costly route; a /64 over its own limit spends none of it", async () => {
    await freshWindow();
    const net = network();
    const path = "/api/partners/pricefeed/try/mcp_tools";
    const net48 = randomNet48();
    // One /64 asks twice its limit: the calls refused for the /64 are not counted for its /56.
    for (let i = 0; i < 2 * RL_FREE; i++) await send(path, { ip: lan(net48, 0, 0) });
    expect(net.to(PARTNER_HOSTS.pricefeed)).toBe(RL_FREE);
    for (let n = 1; n <= LIMITS.RL_FREE_56 - RL_FREE; n++) {
      expect((await send(path, { ip: lan(net48, 0, n) })).status).toBe(200);
    }
    const refused = await expect429(await send(path, { ip: lan(net48, 0, 0xff) }), "free");
    expect(refused.detail).toContain(`from your network ${net48}:0::/56`);
    expect(net.to(PARTNER_HOSTS.pricefeed)).toBe(LIMITS.RL_FREE_56);
    // The /48's other /56s keep theirs.
    expect((await send(path, { ip: lan(net48, 1, 0) })).status).toBe(200);
  }, 120_000);

  it("priced routes: the /64s of one IPv6 /48 share its budget, and the call past it is 429 before any payment work; another /48 is untouched", async () => {
    await freshWindow(40);
    const net = network();
    // RL_IP_48 (9,600 a minute) is more calls than a test's minute holds here (each IPv6 call asks
    // three limiters). The priced routes' wide budgets are bound to the real bindings of RL_FREE's
    // wide figures instead: the same code and keys, with a flood that fits.
    const e = { ...limitedEnv, RL_IP_56: env.RL_FREE_56, RL_IP_48: env.RL_FREE_48 };
    const net48 = randomNet48();
    for (let i = 0; i < LIMITS.RL_FREE_48; i++) {
      expect(
        (await send("/api/skills/sha256", { ip: lan(net48, Math.floor(i / 40), i % 40), env: e })).status,
      ).toBe(402);
    }
    const paid = signature(randomPayer(), "3000", GOOD_SIGNATURE);
    const refused = await expect429(
      await send("/api/skills/sha256", {
        ip: lan(net48, 0xff, 0xff),
        headers: paid,
        body: { text: "a" },
        env: e,
      }),
      "ip",
    );
    expect(refused.detail).toContain(`from your network ${net48}::/48`);
    expect(net.verifies()).toBe(0);
    expect(net.to(`${FACILITATOR}/settle`)).toBe(0);
    expect((await send("/api/skills/sha256", { ip: lan(randomNet48(), 0, 0), env: e })).status).toBe(402);
  }, 120_000);

  it("the admin API's bearer token cannot be guessed at network speed: 600 a minute per IP, then 429 before the token is read", async () => {
    await freshWindow();
    const ip = randomIp();
    const e = { ...limitedEnv, ADMIN_TOKEN: "the-real-token-0123456789abcdefghij" };
    const admin = (token: string, from = ip) =>
      app.fetch(
        new Request("https://skills.test/api/admin/payments?limit=1", {
          headers: { "cf-connecting-ip": from, authorization: `Bearer ${token}` },
        }),
        e,
      );
    const statuses = new Set<number>();
    for (let i = 0; i < RL_IP; i++) statuses.add((await admin(`guess-${i}`)).status);
    expect([...statuses]).toEqual([401]);
    await expect429(await admin("the-real-token-0123456789abcdefghij"), "ip");
    // Its own budget: this IP's priced routes and another address's admin calls are untouched.
    expect((await send("/api/skills/sha256", { ip })).status).toBe(402);
    expect((await admin("the-real-token-0123456789abcdefghij", randomIp())).status).toBe(200);
  }, 120_000);

  it('RATE_LIMITS="off" disables every limit', async () => {
    network();
    const ip = randomIp();
    const off = { ...limitedEnv, RATE_LIMITS: "off" };
    for (let i = 0; i < RL_FREE + 5; i++) {
      const res = await app.fetch(
        new Request("https://skills.test/api/partners/pricefeed/try/mcp_tools", {
          headers: { "cf-connecting-ip": ip },
        }),
        off,
      );
      expect(res.status).toBe(200);
    }
  }, 60_000);
});
