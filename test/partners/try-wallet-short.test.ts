import { env } from "cloudflare:test";
import type { PaymentPayload } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { createApp } from "../../src/app";
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
});

/** The stand-in network, plus an RPC whose balanceOf answers `balance` (or fails: "error"). */
function withRpc(balance: bigint | "error") {
  const net = stubNetwork(
    x402Partner("10000", () => Response.json({ prices: {} }, { headers: receipt("10000") })),
  );
  const spy = globalThis.fetch as unknown as MockInstance<typeof fetch>;
  const stubbed = spy.getMockImplementation() as typeof fetch;
  const balanceReads: string[] = [];
  spy.mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(RPC)) return stubbed(input, init);
    const call = await req.json<{ method: string; params: [{ to: string; data: string }] }>();
    balanceReads.push(`${call.method} ${call.params[0].to} ${call.params[0].data.slice(0, 10)}`);
    if (balance === "error") return new Response("<html>502</html>", { status: 502 });
    return Response.json({ jsonrpc: "2.0", id: 1, result: `0x${balance.toString(16).padStart(64, "0")}` });
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
    expect(logged.mock.calls.some((c) => String(c[0]).includes("balance unreadable"))).toBe(true);
    expect(logged.mock.calls.some((c) => String(c[0]).includes(RPC))).toBe(false);
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
      if (req.url.startsWith(RPC))
        return Response.json({
          jsonrpc: "2.0",
          id: 1,
          result: `0x${(20_000).toString(16).padStart(64, "0")}`,
        });
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
      `Operating wallet ${wallet} holds $0.02 USDC, less than the refunds waiting to be sent`,
    );
  });
});
