import { env } from "cloudflare:test";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { Hono } from "hono";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import type { AppEnv } from "../../src/env";
import { identify } from "../../src/payments/idempotency-key";
import { READY_WAIT_MS, REFRESH_STALE_MS, SUPPORTED_TTL_MS } from "../../src/payments/x402-gate";
import { authorizationFor } from "../fixtures/payments";

// Reads an isolate shares between its requests (src/http/shared-load.ts). On Cloudflare a read
// started inside a request that workerd cancels (its client went away) never settles: a fetch
// that never answers stands for it here. The same through workerd's own cancellation:
// test/payments/slow-facilitator/.

afterEach(() => {
  for (const cutOff of stranded.splice(0)) cutOff(new Error("cut off at the end of the test"));
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A read that never answers (for the test: cut off after it, so nothing is left waiting). */
const stranded: ((e: Error) => void)[] = [];
const never = () => new Promise<never>((_, cutOff) => stranded.push(cutOff));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The value, or "pending" if `p` has not settled after `ms`. */
const settledWithin = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, sleep(ms).then(() => "pending" as const)]);

/** A facilitator whose /supported answers, or never does; counts its reads. */
function stubFacilitator(origin: string) {
  const state = { reads: 0, mode: "up" as "up" | "hang" };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin !== origin) return realFetch(input, init);
    if (!new URL(req.url).pathname.endsWith("/supported")) return new Response("unexpected", { status: 500 });
    state.reads++;
    if (state.mode === "hang") return never();
    return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });
  });
  return state;
}

const unpaid = async (facilitator: string) => {
  const res = await createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
    { ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator },
  );
  return { status: res.status, body: await res.text() };
};

describe("the facilitator's /supported, read once per isolate", () => {
  it("a first read that never answers: the request gets 503 after 10 s, and a request after that reads again", async () => {
    const origin = "https://facilitator-stranded.test";
    const facilitator = stubFacilitator(origin);
    facilitator.mode = "hang";
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const first = unpaid(origin);
    await vi.waitFor(() => expect(facilitator.reads).toBe(1));
    vi.advanceTimersByTime(READY_WAIT_MS);
    vi.useRealTimers();
    // Before: it waited on the read for ever, and so did every x402 call of the isolate after it.
    const answer = await settledWithin(first, 5000);
    expect(answer).toMatchObject({ status: 503 });
    expect(JSON.parse((answer as { body: string }).body).detail).toBe(
      `x402 payments are unavailable: facilitator: did not answer within ${READY_WAIT_MS / 1000} s`,
    );
    // The read is now older than any request waits: the next request starts another.
    facilitator.mode = "up";
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + READY_WAIT_MS + 1);
    expect(await settledWithin(unpaid(origin), 5000)).toMatchObject({ status: 402 });
    expect(facilitator.reads).toBe(2);
  });

  it("a background re-read that never answers is started again after REFRESH_STALE_MS (it was never again)", async () => {
    const origin = "https://facilitator-stranded-refresh.test";
    const facilitator = stubFacilitator(origin);
    expect((await unpaid(origin)).status).toBe(402);
    const now = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(now + SUPPORTED_TTL_MS + 1000);
    facilitator.mode = "hang";
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(2);
    // Joined while it may still answer.
    clock.mockReturnValue(now + SUPPORTED_TTL_MS + 1000 + REFRESH_STALE_MS - 1);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(2);
    // Then taken for dead: the next request past the TTL starts a new one, which swaps in.
    facilitator.mode = "up";
    clock.mockReturnValue(now + SUPPORTED_TTL_MS + 1000 + REFRESH_STALE_MS + 1);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(3);
    await sleep(50);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(3);
  });
});

describe("the chain id of RPC_URL, asked once per isolate (contract-wallet replays)", () => {
  it("a question that never answers does not hold later replays: the next one after the bound asks again", async () => {
    const rpc = "https://rpc-stranded.test/";
    let chainIdAsked = 0;
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (req.url !== rpc) return realFetch(input, init);
      const { id, method } = await req.json<{ id: number; method: string }>();
      const ok = (result: unknown) => Response.json({ jsonrpc: "2.0", id, result });
      if (method === "eth_chainId") {
        chainIdAsked++;
        if (chainIdAsked === 1) return never();
        return ok(`0x${Number(env.X402_NETWORK.split(":")[1]).toString(16)}`);
      }
      if (method === "eth_getCode") return ok("0x6080604052");
      return ok(`0x1626ba7e${"0".repeat(56)}`); // ERC-1271's magic value
    });
    // What the idempotency middleware asks of a contract wallet's payment (idempotency.ts).
    const app = new Hono<AppEnv>().post("/", async (c) => {
      const id = await identify(c, true);
      if (!id || "invalid" in id || !id.proveOnChain) return c.text("not a contract wallet's payment", 500);
      return c.json({ proven: await id.proveOnChain() });
    });
    const accepted: PaymentRequirements = {
      scheme: "exact",
      network: env.X402_NETWORK as `${string}:${string}`,
      asset: env.USDC_ADDRESS,
      amount: "1000",
      payTo: env.PAY_TO,
      maxTimeoutSeconds: 60,
      extra: { name: "USD Coin", version: "2" },
    };
    const wallet = privateKeyToAccount(generatePrivateKey()).address;
    const replay = async () => {
      const payment: PaymentPayload = {
        x402Version: 2,
        accepted,
        resource: { url: "https://skills.test/api/skills/uuid-mint", description: "", mimeType: "" },
        extensions: { "payment-identifier": { info: { id: generatePaymentId() } } },
        // Not the wallet's EOA signature: only the chain can say whether the wallet made it.
        payload: { signature: `0x${"11".repeat(65)}`, authorization: authorizationFor(accepted, wallet) },
      };
      const headers = { "payment-signature": encodePaymentSignatureHeader(payment) };
      const res = await app.request("/", { method: "POST", headers }, { ...env, RPC_URL: rpc });
      return res.json();
    };
    const first = replay().catch(() => "cut off");
    await vi.waitFor(() => expect(chainIdAsked).toBe(1));
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + 15_001);
    // Before: it awaited the first question for ever, as did every contract-wallet replay after it.
    expect(await settledWithin(replay(), 10_000)).toEqual({ proven: true });
    expect(chainIdAsked).toBe(2);
    expect(await settledWithin(first, 0)).toBe("pending");
  });
});
