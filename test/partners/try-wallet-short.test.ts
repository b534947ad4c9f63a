import { env } from "cloudflare:test";
import type { PaymentPayload } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { createApp } from "../../src/app";
import { BALANCE_REUSE_MS, forgetOperatingBalances } from "../../src/partners/operating-balance";
import { PartnerDeadline } from "../../src/partners/upstream";
import { adminCookie, ORIGIN } from "../helpers";
import { FACILITATOR, paidCall, receipt, stubNetwork, tryEnv, upstreamRows, x402Partner } from "./network";

/**
 * An operating wallet short of USDC (drained, or never topped up) cannot pay an x402-priced
 * partner. Checked before the caller is charged: a dry wallet used to take each caller's full price,
 * answer a 502 and owe them a refund that the same dry wallet could not send either.
 */
const RPC = "https://rpc.test";
const rpcEnv = { ...tryEnv, RPC_URL: RPC };

afterEach(() => {
  vi.restoreAllMocks();
  forgetOperatingBalances();
});

/** A JSON-RPC answer to `req`'s balanceOf: `balance` as a uint256. */
async function balanceAnswer(req: Request, balance: bigint) {
  const { id } = await req.clone().json<{ id: unknown }>();
  return Response.json({ jsonrpc: "2.0", id, result: `0x${balance.toString(16).padStart(64, "0")}` });
}

/**
 * The stand-in network, plus an RPC whose balanceOf answers `balance` (or fails: "error"), once
 * `before` (if given) resolves; `partner` answers the paid hop.
 */
function withRpc(
  balance: bigint | "error" | (() => bigint),
  { before, partner }: { before?: () => Promise<void>; partner?: (req: Request) => Response } = {},
) {
  const net = stubNetwork(
    x402Partner("10000", partner ?? (() => Response.json({ prices: {} }, { headers: receipt("10000") }))),
  );
  const spy = globalThis.fetch as unknown as MockInstance<typeof fetch>;
  const stubbed = spy.getMockImplementation() as typeof fetch;
  const balanceReads: string[] = [];
  spy.mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(RPC)) return stubbed(input, init);
    const call = await req.clone().json<{ method: string; params: [{ to: string; data: string }] }>();
    balanceReads.push(`${call.method} ${call.params[0].to} ${call.params[0].data.slice(0, 10)}`);
    await before?.();
    if (balance === "error") return new Response("<html>502</html>", { status: 502 });
    return balanceAnswer(req, typeof balance === "function" ? balance() : balance);
  });
  return { ...net, balanceReads };
}

describe("try: the operating wallet's USDC is checked before the caller is charged", () => {
  it("a wallet holding less than the partner's price: 502 charged false, nothing settled, the partner never paid, a log line says what to do", async () => {
    const { settled, partnerCalls, balanceReads } = withRpc(9_999n);
    const logged = vi.spyOn(console, "error");
    const res = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    expect(res.status).toBe(502);
    const body = await res.json<{ charged: boolean; refund?: unknown }>();
    expect(body).toMatchObject({ charged: false });
    expect(body.refund).toBeUndefined();
    expect(settled).toHaveLength(0);
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null]);
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([]);
    expect(balanceReads).toEqual([`eth_call ${env.USDC_ADDRESS} 0x70a08231`]);
    const line = logged.mock.calls.map((c) => String(c[0])).find((l) => l.includes("operating wallet short"));
    expect(JSON.parse(line ?? "{}")).toMatchObject({
      level: "error",
      balance_micro: 9999,
      action: expect.stringContaining("send USDC"),
    });
  });

  it("paid tries while the wallet is short cost one read per 15 s, not one each; then the chain is asked again", async () => {
    const { settled, balanceReads } = withRpc(9_999n);
    const payment = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    expect(payment.status).toBe(502);
    // Refused before the caller is charged, its authorization is free again: a resent one (or any
    // other paid try) is refused on the balance read a moment ago.
    const again = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    expect(again.status).toBe(502);
    expect(balanceReads).toHaveLength(1);
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now + BALANCE_REUSE_MS + 1);
    expect((await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv)).status).toBe(502);
    expect(balanceReads).toHaveLength(2);
    expect(settled).toHaveLength(0);
  });

  it("a balance that was enough is read again by the next try: a wallet our payments emptied is found before the caller is charged", async () => {
    let balance = 10_000n;
    const { settled, balanceReads } = withRpc(() => balance);
    expect((await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv)).status).toBe(200);
    // The partner was paid its 10_000: the wallet is empty now.
    balance = 0n;
    const next = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    expect(next.status).toBe(502);
    expect(await next.json()).toMatchObject({ charged: false });
    expect(balanceReads).toHaveLength(2);
    expect(settled).toHaveLength(1);
  });

  it("a wallet holding the price: the call is paid as before", async () => {
    const { settled, balanceReads } = withRpc(10_000n);
    const res = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true });
    expect(settled).toHaveLength(1);
    expect(balanceReads).toHaveLength(1);
  });

  it("an RPC that fails does not stop sales: the call goes on unchecked, logged", async () => {
    const { settled } = withRpc("error");
    const logged = vi.spyOn(console, "error");
    const res = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    expect(res.status).toBe(200);
    expect(settled).toHaveLength(1);
    const unreadable = logged.mock.calls
      .map((c) => String(c[0]))
      .find((l) => l.includes("balance unreadable"));
    expect(JSON.parse(unreadable ?? "{}")).toMatchObject({ error: "HTTP request failed. (HTTP 502)" });
    expect(logged.mock.calls.some((c) => String(c[0]).includes(RPC))).toBe(false);
  });
});

describe("the balance read takes none of the partner's 10 s", () => {
  it("an RPC answering in 2.8 s and a partner's paid hop of 7.5 s: the call is paid and answered, not a 504 refunded", async () => {
    // A clock of the test's own: Date.now and AbortSignal.timeout (the partner's deadline) run on
    // it, and only the stand-ins move it, so the outcome does not depend on the machine's speed.
    let now = Date.now();
    const timers: { at: number; c: AbortController }[] = [];
    const advance = (ms: number) => {
      now += ms;
      for (const t of timers)
        if (t.at <= now && !t.c.signal.aborted) t.c.abort(new DOMException("timed out", "TimeoutError"));
    };
    vi.spyOn(Date, "now").mockImplementation(() => now);
    vi.spyOn(AbortSignal, "timeout").mockImplementation((ms) => {
      const c = new AbortController();
      timers.push({ at: now + ms, c });
      return c.signal;
    });
    // The RPC answers once the partner's clock is stopped for the first time, as a slow RPC would
    // while the partner's 402 was long answered. Code that reads the balance before stopping the
    // clock never gets there while the read is pending: the second arm only keeps it from hanging.
    let paused = () => {};
    const firstPause = new Promise<void>((r) => {
      paused = r;
    });
    const pausedFor = PartnerDeadline.prototype.pausedFor;
    vi.spyOn(PartnerDeadline.prototype, "pausedFor").mockImplementation(function (
      this: PartnerDeadline,
      work: () => Promise<unknown>,
    ) {
      paused();
      return pausedFor.call(this, work);
    } as typeof pausedFor);
    const { settled, balanceReads } = withRpc(1_000_000n, {
      before: async () => {
        await Promise.race([firstPause, new Promise((r) => setTimeout(r, 1_000))]);
        advance(2_800);
      },
      partner: (req) => {
        advance(7_500);
        // As fetch does: an answer that comes after the deadline is a timeout.
        req.signal.throwIfAborted();
        return Response.json({ prices: {} }, { headers: receipt("10000") });
      },
    });
    const res = await paidCall("/api/partners/pricefeed/try/price", {}, rpcEnv);
    const body = await res.json<{ charged: boolean; refund?: unknown }>();
    expect({ status: res.status, refund: body.refund }).toEqual({ status: 200, refund: undefined });
    expect(body).toMatchObject({ charged: true, paid_upstream: true });
    expect(settled).toHaveLength(1);
    expect(balanceReads).toHaveLength(1);
  });
});

describe("/admin: an operating wallet holding less than a partner's price", () => {
  it("says partner calls are being refused, not only when refunds wait", async () => {
    withRpc(5_000n);
    const send = (path: string, init: RequestInit = {}) =>
      createApp().fetch(new Request(`${ORIGIN}${path}`, init), rpcEnv);
    const cookie = await adminCookie(send, tryEnv.ADMIN_TOKEN);
    const page = await (await send("/admin", { headers: { cookie } })).text();
    const line = page.slice(
      page.indexOf('id="operating-wallet"'),
      page.indexOf("</p>", page.indexOf('id="operating-wallet"')),
    );
    // Other files' owed refunds share this D1: the line may name them too.
    expect(line).toContain("holds $0.005000 USDC, less than ");
    expect(line).toContain("the largest partner price ($1.00): send USDC to it.");
    expect(line).toContain("Partner calls are being refused meanwhile (nothing charged)");
  });
});

describe("a refund the operating wallet is too short to send", () => {
  it("stays owed, and the request's warn line and the dashboard say to fund the wallet", async () => {
    stubNetwork(
      x402Partner("20000", () =>
        Response.json({ error: "boom" }, { status: 500, headers: receipt("20000") }),
      ),
    );
    const spy = globalThis.fetch as unknown as MockInstance<typeof fetch>;
    const stubbed = spy.getMockImplementation() as typeof fetch;
    const wallet = privateKeyToAccount(tryEnv.PARTNER_PAYER_KEY as `0x${string}`).address;
    // The facilitator settles the caller's payment and finds the wallet's refund short.
    spy.mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      // The chain: the wallet holds 0.02 USDC, less than the 0.04 refund.
      if (req.url.startsWith(RPC)) return balanceAnswer(req, 20_000n);
      if (req.url !== `${FACILITATOR}/settle`) return stubbed(input, init);
      const { paymentPayload } = await req.clone().json<{ paymentPayload: PaymentPayload }>();
      const from = (paymentPayload.payload as { authorization: { from: string } }).authorization.from;
      if (from !== wallet) return stubbed(input, init);
      return Response.json({
        success: false,
        errorReason: "invalid_exact_evm_insufficient_balance",
        transaction: "",
        network: env.X402_NETWORK,
        payer: from,
      });
    });
    const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: true, refund: { status: "owed", amount_usd: 0.04 } });
    const requestId = res.headers.get("x-request-id");
    const lines = warned.mock.calls
      .map((c) => JSON.parse(String(c[0])) as Record<string, unknown>)
      .filter((l) => l.request_id === requestId);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: "refund not sent",
        on: "request",
        amount_micro: 40000,
        error: "invalid_exact_evm_insufficient_balance",
        action: expect.stringContaining("fund it"),
      }),
    ]);

    const send = (path: string, init: RequestInit = {}) =>
      createApp().fetch(new Request(`${ORIGIN}${path}`, init), rpcEnv);
    const cookie = await adminCookie(send, tryEnv.ADMIN_TOKEN);
    const page = await (await send("/admin", { headers: { cookie } })).text();
    const row = page.slice(page.indexOf(String(requestId)), page.indexOf(String(requestId)) + 2000);
    expect(row).toContain("Last send: invalid_exact_evm_insufficient_balance. To do: the operating wallet");
    // The wallet's balance beside the refunds it must send (other files' owed rows share this D1).
    expect(page).toContain(
      `Operating wallet <code>${wallet}</code> holds $0.02 USDC, less than the refunds waiting to be sent`,
    );
  });
});
