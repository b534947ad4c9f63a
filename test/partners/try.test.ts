import { afterEach, describe, expect, it, vi } from "vitest";
import { call } from "../helpers";
import { paidCall, send, stubNetwork, tryEnv, upstreamRows, x402Partner } from "./network";

afterEach(() => {
  vi.restoreAllMocks();
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

describe("try: HEAD is refused before anything runs", () => {
  it.each(["price", "price_coin", "mcp_tools"])("HEAD %s → 405 with Allow, no upstream call", async (id) => {
    const { partnerCalls, settled } = stubNetwork(() => Response.json({ ok: true }));
    const res = await send(`/api/partners/pricefeed/try/${id}`, { method: "HEAD" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, POST");
    expect(partnerCalls).toHaveLength(0);
    expect(settled).toHaveLength(0);
  });

  it("another method's 405 names the same methods: HEAD is not among them", async () => {
    for (const method of ["PUT", "DELETE", "PATCH"]) {
      const res = await send("/api/partners/pricefeed/try/price", { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("GET, POST");
    }
    // Other GET routes still name HEAD, which they answer.
    expect((await call("/api/catalog", { method: "PUT" })).headers.get("allow")).toBe("GET, HEAD");
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

  it.each([
    ["an invalid URL", "http://[::1", /invalid URL/],
    ["an endless same-host loop", "/price", /redirected more than \d+ times/],
  ])(
    "a redirect to %s is a 502 that says so, not a 500; caller not charged",
    async (_name, location, message) => {
      const { settled } = stubNetwork(() => new Response(null, { status: 302, headers: { location } }));
      const res = await paidCall("/api/partners/pricefeed/try/price");
      expect(res.status).toBe(502);
      const body = await res.json<{ charged: boolean; detail: string }>();
      expect(body.charged).toBe(false);
      expect(JSON.stringify(body)).toMatch(message);
      expect(settled).toHaveLength(0);
    },
  );

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
