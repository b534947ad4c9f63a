import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import {
  decodePaymentRequiredHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { expect, vi } from "vitest";
import { createApp } from "../../src/app";
import { ORIGIN } from "../helpers";

// --- Stand-in network for try calls: partners and a facilitator answered inside the isolate ---------

export const FACILITATOR = "https://facilitator.test";
export const PARTNER_HOSTS: Record<string, string> = {
  pricefeed: "https://pricefeed.test",
  textkit: "https://textkit.test",
  refinery: "https://refinery.test",
  notifyhook: "https://notifyhook.test",
};
export const CALLER_TX = `0x${"22".repeat(32)}`;
export const PARTNER_TX = `0x${"33".repeat(32)}`;
export const tryEnv = {
  ...env,
  FACILITATOR_URL: FACILITATOR,
  PARTNER_BASE_URLS: JSON.stringify(PARTNER_HOSTS),
  PARTNER_PAYER_KEY: generatePrivateKey(),
  ADMIN_TOKEN: "t0ken-0123456789abcdefghij",
};

interface PartnerCall {
  req: Request;
  init: RequestInit | undefined;
}

/**
 * Replaces fetch for the partner hosts (answered by `partner`) and the facilitator (verifies every
 * payment; settles unless told not to, or answers a settle with an error page: "no answer", an
 * outcome the Worker cannot know, as is its own failure, "facilitator error" (a 500
 * unexpected_settle_error); `settleDelayMs` makes each settle that slow). Everything else goes to
 * the real network.
 */
export function stubNetwork(
  partner: (req: Request) => Response | Promise<Response>,
  {
    settles = true,
    settleDelayMs = 0,
  }: {
    settles?: boolean | "no answer" | "nonce spent" | "facilitator error";
    settleDelayMs?: number;
  } = {},
) {
  const partnerCalls: PartnerCall[] = [];
  const settled: PaymentPayload[] = [];
  const realFetch = globalThis.fetch;
  const hosts = new Set(Object.values(PARTNER_HOSTS));
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const { origin, pathname } = new URL(req.url);
    if (hosts.has(origin)) {
      // As fetch does: a request whose deadline has passed is never sent.
      req.signal.throwIfAborted();
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
    if (settleDelayMs) await new Promise((r) => setTimeout(r, settleDelayMs));
    if (settles === "no answer") return new Response("<html>502 Bad Gateway</html>", { status: 502 });
    // The facilitator's own failure while settling (scripts/lib/facilitator.mjs answers any
    // exception so): it may have broadcast the transfer first.
    if (settles === "facilitator error")
      return Response.json(
        { success: false, errorReason: "unexpected_settle_error", transaction: "", network, payer },
        { status: 500 },
      );
    if (settles === "nonce spent")
      return Response.json({
        success: false,
        errorReason: "invalid_exact_evm_nonce_already_used",
        transaction: "",
        network,
        payer,
      });
    return Response.json(
      settles
        ? { success: true, transaction: CALLER_TX, network, payer }
        : { success: false, errorReason: "insufficient_funds", transaction: "", network, payer },
    );
  });
  return { partnerCalls, settled };
}

/** Pricefeed's listed ownership wallet: where x402Partner asks to be paid unless told otherwise. */
export const PRICEFEED_WALLET = "0x1111111111111111111111111111111111111111";

/**
 * A partner that is itself an x402 server: 402 until paid, then `paid(req)`. `terms` replace parts
 * of its offer (payTo, asset, network, extra), as a partner asking for other terms would.
 */
export const x402Partner =
  (amount: string, paid: (req: Request) => Response, terms: Partial<PaymentRequirements> = {}) =>
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
          payTo: PRICEFEED_WALLET,
          maxTimeoutSeconds: 300,
          extra: { name: "USD Coin", version: "2" },
          ...terms,
        },
      ],
    });
    return Response.json({}, { status: 402, headers: { "payment-required": required } });
  };
export const receipt = (amount: string) => ({
  "payment-response": encodePaymentResponseHeader({
    success: true,
    transaction: PARTNER_TX,
    network: env.X402_NETWORK as `${string}:${string}`,
    amount,
  }),
});

export const send = (path: string, init: RequestInit = {}, e: object = tryEnv) =>
  createApp().fetch(new Request(`${ORIGIN}${path}`, init), e);

/** Asks for the price, then pays it from a fresh caller wallet, as @x402/fetch would. */
export async function paidCall(path: string, init: RequestInit = {}, e: object = tryEnv) {
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

export const upstreamRows = (requestId: string | null) =>
  env.DB.prepare("SELECT * FROM upstream_payments WHERE request_id = ?1")
    .bind(requestId)
    .all<Record<string, unknown>>()
    .then((r) => r.results);
export const payoutRows = (requestId: string | null) =>
  env.DB.prepare("SELECT * FROM payout_ledger WHERE request_id = ?1")
    .bind(requestId)
    .all<Record<string, unknown>>()
    .then((r) => r.results);
