import type { PaymentPayload } from "@x402/core/types";
import { inject } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { usdcBalance } from "../../scripts/lib/chain.mjs";

export type { ToolResult } from "../helpers";

/** The local stack as the MCP e2e files use it (test/e2e/global-setup.ts provides it). */
export const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  admin_token: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};

/**
 * The MCP files pay from buyers 5-7. Others pay from them too (x402 5, x402-v1 5, partners 6,
 * contract-wallet 6, reconcile 6-8, pages and receipts 7): e2e files run one after another
 * (fileParallelism: false), and each test reads a balance before and after its own calls.
 * The partner and operating wallets are accounts of their own, not among the buyers.
 */
export const buyer = (i: 5 | 6 | 7) => {
  const b = stack.buyers[i];
  if (!b) throw new Error(`the stack has no buyer ${i}`);
  return b;
};
export const balance = (who: string): Promise<bigint> => usdcBalance(stack.rpc_url, who);

/** The payment ledger rows of one signed authorization (by its nonce) for `resource`. */
export async function ledgerRows(p: PaymentPayload, resource: string) {
  const res = await fetch(
    `${stack.base_url}/api/admin/payments?limit=1000&resource=${encodeURIComponent(resource)}`,
    { headers: { authorization: `Bearer ${stack.admin_token}` } },
  );
  const nonce = (p.payload as { authorization: { nonce: string } }).authorization.nonce.toLowerCase();
  return ((await res.json()) as { payments: Record<string, string | number>[] }).payments.filter((r) =>
    String(r.nonce).endsWith(nonce),
  );
}
