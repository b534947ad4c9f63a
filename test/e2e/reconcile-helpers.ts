import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { expect, inject } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { USDC_DOMAIN } from "../../scripts/lib/chain.mjs";
import { resign, signedPayment } from "../fixtures/payments";

// What the reconciliation e2e files (reconcile.test.ts, frontrun.test.ts) share: the local chain's
// JSON-RPC, the paid sha256 call they settle, the admin views they read the ledger from, the Cron
// Trigger, and awaiting a condition.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  admin_token: string;
  scheduled_url: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const SHA256 = `${stack.base_url}/api/skills/sha256`;

/**
 * The sha256 offer signed by buyer `i` with a fresh nonce, carrying `paymentId` when given, and
 * valid for only `validFor` seconds from now when given.
 */
export async function offerSigned(
  i: number,
  { paymentId, validFor }: { paymentId?: string; validFor?: number } = {},
) {
  const res = await fetch(SHA256, { method: "POST", body: "{}" });
  const required: PaymentRequired = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
  const account = privateKeyToAccount((stack.buyers[i] as { privateKey: `0x${string}` }).privateKey);
  const { payload } = await signedPayment(required, account, paymentId);
  if (validFor === undefined) return payload;
  return resign(account, USDC_DOMAIN, payload, {
    validBefore: String(Math.floor(Date.now() / 1000) + validFor),
  });
}

/** The paid sha256 call with `payment`. */
export const paidCall = (payment: PaymentPayload, text: string) =>
  fetch(SHA256, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "payment-signature": encodePaymentSignatureHeader(payment),
    },
    body: JSON.stringify({ text }),
  });

/** A paid call whose settlement stays in the mempool (automine off): 502 settlement_unconfirmed. */
export async function unconfirmedCall(payment: PaymentPayload) {
  await rpc("evm_setAutomine", [false]);
  const res = await paidCall(payment, "reconcile me");
  const text = await res.text();
  expect(res.status, text).toBe(502);
  const body = JSON.parse(text) as { reason: string; transaction: string | null; request_id: string };
  expect(body.reason).toBe("settlement_unconfirmed");
  expect(body.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  return body as { transaction: string; request_id: string };
}

/** One JSON-RPC call to the local anvil (its test methods included: evm_mine, evm_setAutomine...). */
export async function rpc(method: string, params: unknown[] = []) {
  const res = await fetch(stack.rpc_url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

export const admin = { authorization: `Bearer ${stack.admin_token}` };
export type View = {
  payments: { request_id: string; tx_hash: string; amount_atomic: number; reconciled_at: number | null }[];
  unconfirmed: { nonce: string; request_id: string; status: string }[];
  reconciliations: { request_id: string; outcome: string; evidence: string; tx_hash: string | null }[];
};
export type RefundRow = {
  request_id: string;
  payer: string;
  amount_micro: number;
  withheld_micro: number;
  status: string;
  tx_hash: string | null;
};
/** GET /api/admin/payouts's refunds. */
export const refunds = async (): Promise<RefundRow[]> =>
  (
    (await (await fetch(`${stack.base_url}/api/admin/payouts`, { headers: admin })).json()) as {
      refunds: RefundRow[];
    }
  ).refunds;
/** GET /api/admin/payments: the ledger, claims still unconfirmed, and reconciliation's decisions. */
export const view = async (): Promise<View> =>
  (await (await fetch(`${stack.base_url}/api/admin/payments?limit=1000`, { headers: admin })).json()) as View;

/** Fires the Cron Trigger the way `npm start` documents (wrangler dev --test-scheduled). */
export async function fireCron() {
  const res = await fetch(stack.scheduled_url);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/** `probe`'s first defined answer, asked again until it has one (or `timeoutMs` has passed). */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
