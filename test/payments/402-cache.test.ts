import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { SUPPORTED_TTL_MS } from "../../src/payments/x402-gate";

// The unpaid 402 is built once per isolate and configuration and reused; these tests check that
// reuse never changes what a caller sees and never waits on the facilitator.

afterEach(() => {
  vi.restoreAllMocks();
});

/** A facilitator whose /supported answer can be switched off or held; counts its reads. */
function stubFacilitator(origin: string) {
  const state = { reads: 0, mode: "up" as "up" | "down" | "hang" };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin !== origin) return realFetch(input, init);
    if (new URL(req.url).pathname.endsWith("/supported")) {
      state.reads++;
      if (state.mode === "down") return new Response("down", { status: 500 });
      if (state.mode === "hang") return new Promise<Response>(() => {});
      return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });
    }
    return new Response("unexpected", { status: 500 });
  });
  return state;
}

const paidEnv = (facilitator: string) => ({ ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator });
const unpaid = async (e: object, path = "/api/skills/sha256", body: unknown = { text: "a" }) => {
  const res = await createApp().fetch(
    new Request(`https://skills.test${path}`, { method: "POST", body: JSON.stringify(body) }),
    e,
  );
  return { status: res.status, header: res.headers.get("payment-required"), body: await res.text() };
};

/**
 * The offer as a client acts on it: the signed offers (offer-receipt extension) are re-signed when
 * the cached answer is rebuilt (every 60 s, so they stay within their validity); the rest is fixed.
 */
const offer = (a: { status: number; header: string | null; body: string }) => {
  const header = decodePaymentRequiredHeader(a.header as string) as { extensions?: Record<string, unknown> };
  const body = JSON.parse(a.body) as { extensions?: Record<string, unknown> };
  delete header.extensions?.["offer-receipt"];
  delete body.extensions?.["offer-receipt"];
  return { status: a.status, header, body };
};

describe("the unpaid 402 is built once and reused", () => {
  it("answers the same header and body every time, without reading /supported again", async () => {
    const origin = "https://facilitator-a.test";
    const facilitator = stubFacilitator(origin);
    const e = paidEnv(origin);
    const first = await unpaid(e);
    expect(first.status).toBe(402);
    expect(decodePaymentRequiredHeader(first.header as string).accepts[0]?.amount).toBeTruthy();
    expect(JSON.parse(first.body)).toMatchObject({ x402Version: 1, reason: "payment_required" });
    facilitator.mode = "down";
    for (let i = 0; i < 3; i++) expect(await unpaid(e)).toEqual(first);
    expect(facilitator.reads).toBe(1);
    // Another route has its own offer.
    const other = await unpaid(e, "/api/skills/slugify");
    expect(other.status).toBe(402);
    expect(other.header).not.toBe(first.header);
    expect(decodePaymentRequiredHeader(other.header as string).resource.url).toBe(
      "https://skills.test/api/skills/slugify",
    );
  });

  it("requests alternating between two origins (workers.dev and a custom domain, BASE_URL unset) keep one gate each", async () => {
    const origin = "https://facilitator-origins.test";
    const facilitator = stubFacilitator(origin);
    const e = { ...paidEnv(origin), BASE_URL: "" };
    const app = createApp();
    const at = async (host: string) => {
      const res = await app.fetch(
        new Request(`${host}/api/skills/sha256`, { method: "POST", body: '{"text":"a"}' }),
        e,
      );
      expect(res.status).toBe(402);
      return decodePaymentRequiredHeader(res.headers.get("payment-required") as string).resource.url;
    };
    for (let i = 0; i < 4; i++) {
      expect(await at("https://a.example")).toBe("https://a.example/api/skills/sha256");
      expect(await at("https://b.example")).toBe("https://b.example/api/skills/sha256");
    }
    expect(facilitator.reads).toBe(2);
  });

  it("more configurations than the isolate keeps: the least recently used gate goes, not the ones in use", async () => {
    const origin = "https://facilitator-lru.test";
    const facilitator = stubFacilitator(origin);
    const e = { ...paidEnv(origin), BASE_URL: "" };
    const app = createApp();
    const at = (host: string) =>
      app.fetch(new Request(`${host}/api/skills/sha256`, { method: "POST", body: '{"text":"a"}' }), e);
    // Nine origins, each a configuration of its own, with the first used between every other.
    for (let i = 1; i <= 9; i++) {
      expect((await at("https://main.example")).status).toBe(402);
      expect((await at(`https://other-${i}.example`)).status).toBe(402);
    }
    // One read for the origin in use throughout, one for each other: clearing every gate when the
    // isolate's eight were full read the first again.
    expect(facilitator.reads).toBe(10);
  });

  it("after the TTL, /supported is re-read in the background; the answer never waits for it", async () => {
    const origin = "https://facilitator-b.test";
    const facilitator = stubFacilitator(origin);
    const e = paidEnv(origin);
    const first = await unpaid(e);
    expect(facilitator.reads).toBe(1);
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now + SUPPORTED_TTL_MS + 1000);
    facilitator.mode = "hang";
    // /supported never answers now: the 402 still comes, the same, and only one re-read is made.
    for (let i = 0; i < 3; i++) expect(offer(await unpaid(e))).toEqual(offer(first));
    expect(facilitator.reads).toBe(2);
  });

  it("a failed background re-read keeps the offer and is retried only after another TTL", async () => {
    const origin = "https://facilitator-c.test";
    const facilitator = stubFacilitator(origin);
    const e = paidEnv(origin);
    const first = await unpaid(e);
    const now = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(now + SUPPORTED_TTL_MS + 1000);
    facilitator.mode = "down";
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(offer(await unpaid(e))).toEqual(offer(first));
    await vi.waitFor(() => expect(facilitator.reads).toBe(2), { timeout: 5000 });
    // Once the re-read has failed (its warning is written where it restarts the TTL), ask again
    // within the new TTL: no third read.
    const reReadFailed = () =>
      warn.mock.calls
        .map((args) => String(args[0]))
        .filter((l) => l.includes("facilitator /supported re-read failed"));
    await vi.waitFor(() => expect(reReadFailed()).toHaveLength(1), { timeout: 5000 });
    // One JSON line, as every other line of ours (it was the only plain-text one), with the
    // facilitator's own answer.
    expect(JSON.parse(reReadFailed()[0] as string)).toEqual({
      level: "warn",
      msg: "facilitator /supported re-read failed",
      error: expect.stringMatching(/500/),
    });
    expect(offer(await unpaid(e))).toEqual(offer(first));
    expect(facilitator.reads).toBe(2);
    clock.mockReturnValue(now + 3 * SUPPORTED_TTL_MS);
    facilitator.mode = "up";
    expect(offer(await unpaid(e))).toEqual(offer(first));
    await vi.waitFor(() => expect(facilitator.reads).toBe(3), { timeout: 5000 });
  });

  it("a price that depends on the body gets one offer per price, each reused", async () => {
    const origin = "https://facilitator-d.test";
    stubFacilitator(origin);
    const e = { ...paidEnv(origin), PARTNER_PRICE_MULTIPLIER: "3" };
    const amount = async (recipe: string) => {
      const r = await unpaid(e, "/api/skills/refinery-recipes", { raw: "x", request: "y", recipe });
      expect(r.status).toBe(402);
      return decodePaymentRequiredHeader(r.header as string).accepts[0]?.amount;
    };
    const digest = await amount("policy_digest");
    const custom = await amount("custom");
    expect(digest).not.toBe(custom);
    // Asked again in another order, each recipe keeps its own price.
    expect(await amount("custom")).toBe(custom);
    expect(await amount("policy_digest")).toBe(digest);
  });
});
