import { operatingKey, redactSecrets } from "../config";
import type { Bindings } from "../env";

/** How long a balance read may take before the caller goes on without it. */
const BALANCE_READ_MS = 3_000;

/** The operating wallet's USDC as the chain says now; `micros` undefined when it could not be read. */
export interface OperatingBalance {
  wallet: string;
  micros?: bigint;
}

/**
 * The operating wallet's (PARTNER_PAYER_KEY) balance of `asset`, read with one eth_call over
 * RPC_URL; undefined without a key or an RPC. A failed read is logged (redacted: the RPC URL often
 * holds its key) and answered without `micros`: callers go on as if it were not read.
 */
export async function operatingBalance(
  env: Bindings,
  asset: string,
  requestId?: string,
): Promise<OperatingBalance | undefined> {
  const rpc = env.RPC_URL?.trim();
  const key = operatingKey(env);
  if (!rpc || !key) return undefined;
  const { privateKeyToAccount } = await import("../signer");
  const wallet = privateKeyToAccount(key).address;
  try {
    const res = await fetch(rpc, {
      method: "POST",
      headers: { "content-type": "application/json" },
      // balanceOf(wallet)
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_call",
        params: [{ to: asset, data: `0x70a08231${wallet.slice(2).padStart(64, "0")}` }, "latest"],
      }),
      signal: AbortSignal.timeout(BALANCE_READ_MS),
    });
    const result = ((await res.json()) as { result?: unknown }).result;
    if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(result))
      throw new Error(`HTTP ${res.status}, no balance in the answer`);
    return { wallet, micros: BigInt(result) };
  } catch (e) {
    console.error(
      redactSecrets(
        JSON.stringify({
          level: "warn",
          msg: "operating wallet balance unreadable",
          ...(requestId ? { request_id: requestId } : {}),
          error: String(e),
        }),
        env,
      ),
    );
    return { wallet };
  }
}
