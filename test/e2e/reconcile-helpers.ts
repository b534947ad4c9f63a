import { expect, inject } from "vitest";

// What the reconciliation e2e files (reconcile.test.ts, frontrun.test.ts) share: the local chain's
// JSON-RPC, the admin views they read the ledger from, the Cron Trigger, and awaiting a condition.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  admin_token: string;
  scheduled_url: string;
};

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
