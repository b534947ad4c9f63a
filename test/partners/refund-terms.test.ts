import { env } from "cloudflare:test";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { withheldReturn } from "../../src/payments/refunds";
import { CALLER_TX, FACILITATOR, PARTNER_HOSTS, paidCall, x402Partner } from "./network";

// A partner call's refund pays back what the caller signed for (the route's price, less what the
// partner can collect) to the authorization's signer, whatever the facilitator's settle answer
// says the payment was: the facilitator only tells us that it settled (payments/partner-calls.ts).

afterEach(() => {
  vi.restoreAllMocks();
});

const STRANGER = "0x00000000000000000000000000000000000dEaD0";
const REFUND_TX = `0x${"44".repeat(32)}`;

/**
 * Partners and a facilitator answered inside the isolate, as network.ts's stubNetwork, except that
 * the caller's settlement is answered by `callerSettle(payer)`; refunds (the operating wallet's
 * payments, resource `refund:<request id>`) settle and are kept in `refunds`.
 */
function stubWith(
  partner: (req: Request) => Response,
  callerSettle: (payer: string) => Record<string, unknown>,
  refundTx = REFUND_TX,
) {
  const refunds: PaymentPayload[] = [];
  const callers: string[] = [];
  const realFetch = globalThis.fetch;
  const hosts = new Set(Object.values(PARTNER_HOSTS));
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const { origin, pathname } = new URL(req.url);
    if (hosts.has(origin)) return partner(req);
    if (origin !== FACILITATOR) return realFetch(input, init);
    const network = env.X402_NETWORK;
    if (pathname === "/supported")
      return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network }] });
    const { paymentPayload } = await req.json<{ paymentPayload: PaymentPayload }>();
    const payer = (paymentPayload.payload as { authorization: { from: string } }).authorization.from;
    if (pathname === "/verify") return Response.json({ isValid: true, payer });
    if (paymentPayload.resource?.url.startsWith("refund:")) {
      refunds.push(paymentPayload);
      return Response.json({ success: true, transaction: refundTx, network, payer });
    }
    callers.push(payer);
    return Response.json(callerSettle(payer));
  });
  return { refunds, callers };
}

/** Pricefeed's price_coin: 0.06 to the caller, 0.02 to the partner, which fails once paid. */
const failingOncePaid = x402Partner("20000", () => {
  throw new TypeError("Network connection lost.");
});

const refundRow = (requestId: string | null) =>
  env.DB.prepare(
    "SELECT payer, amount_micro, withheld_micro, status, hold FROM refunds WHERE request_id = ?1",
  )
    .bind(requestId)
    .first<Record<string, unknown>>();

const sentRefund = (p: PaymentPayload | undefined) =>
  (p?.payload as { authorization: { to: string; value: string } } | undefined)?.authorization;

describe("a partner call's refund follows the payment, not the facilitator's account of it", () => {
  it("a settle answer naming another payer and 50 USDC: the refund is 0.04 to the signer, held for a person", async () => {
    const { refunds, callers } = stubWith(failingOncePaid, () => ({
      success: true,
      transaction: CALLER_TX,
      network: env.X402_NETWORK,
      payer: STRANGER,
      amount: "5000000",
    }));
    const errors = vi.spyOn(console, "error");
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "owed", amount_usd: 0.04, transaction: null },
    });
    const row = await refundRow(res.headers.get("x-request-id"));
    expect(row).toMatchObject({
      payer: callers[0],
      amount_micro: 40000,
      withheld_micro: 20000,
      status: "owed",
    });
    expect(String(row?.hold)).toMatch(/disagrees with the payment/);
    // Nothing left the operating wallet on the facilitator's word.
    expect(refunds).toHaveLength(0);
    // Nor later: the partner's share kept back, returned once its authorization expires unused,
    // is held with the refund it completes.
    const back = await withheldReturn(env.DB, res.headers.get("x-request-id") as string, {
      amountMicros: 20000n,
      asset: env.USDC_ADDRESS,
      network: env.X402_NETWORK,
    });
    expect(back).toMatchObject({ paidMicros: 20000n, payer: callers[0] });
    expect(back?.hold).toMatch(/^held with refund .*disagrees with the payment/);
    expect(errors.mock.calls.map(([line]) => String(line)).join("\n")).toMatch(
      /facilitator settlement disagrees with the payment: payer .*dEaD0.*amount .*5000000/,
    );
  });

  it("a settle answer that names no payer or amount: the refund is still sent, 0.04 to the signer", async () => {
    const { refunds, callers } = stubWith(failingOncePaid, () => ({
      success: true,
      transaction: CALLER_TX,
      network: env.X402_NETWORK,
    }));
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "refunded", amount_usd: 0.04, transaction: REFUND_TX },
    });
    expect(await refundRow(res.headers.get("x-request-id"))).toMatchObject({
      payer: callers[0],
      amount_micro: 40000,
      status: "refunded",
      hold: null,
    });
    expect(refunds).toHaveLength(1);
    expect(sentRefund(refunds[0])).toMatchObject({ to: callers[0], value: "40000" });
  });

  it("a success without a transaction hash pays the partner nothing: the call is unconfirmed, left to reconciliation", async () => {
    const partnerPaid = vi.fn(() => Response.json({ eth: 1 }));
    const { refunds } = stubWith(x402Partner("20000", partnerPaid), (payer) => ({
      success: true,
      transaction: "",
      network: env.X402_NETWORK,
      payer,
    }));
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ reason: "settlement_unconfirmed" });
    expect(partnerPaid).not.toHaveBeenCalled();
    expect(refunds).toHaveLength(0);
    const claim = await env.DB.prepare("SELECT status FROM payment_nonces WHERE request_id = ?1")
      .bind(res.headers.get("x-request-id"))
      .first();
    expect(claim).toEqual({ status: "failed" });
  });

  it("a refund whose settlement answers success with no transaction hash stays owed, for reconciliation to read", async () => {
    const { refunds } = stubWith(
      failingOncePaid,
      (payer) => ({ success: true, transaction: CALLER_TX, network: env.X402_NETWORK, payer }),
      "",
    );
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "owed", amount_usd: 0.04, transaction: null },
    });
    expect(refunds).toHaveLength(1);
    const row = await env.DB.prepare(
      "SELECT status, tx_hash, error, valid_before FROM refunds WHERE request_id = ?1",
    )
      .bind(res.headers.get("x-request-id"))
      .first<Record<string, unknown>>();
    expect(row).toMatchObject({ status: "owed", tx_hash: null });
    expect(String(row?.error)).toMatch(/success without a transaction hash/);
    expect(row?.valid_before).toBeGreaterThan(0);
  });
});
