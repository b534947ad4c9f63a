import { operatingKey, redactSecrets } from "../config";
import { rpcUrlProblem } from "../config-urls";
import type { Bindings } from "../env";
import { varText } from "../var-text";
import type { PricingConfig } from "./config";
import { paidPartnerServices } from "./pricing";

/** How long a balance read may take before the caller goes on without it. */
const BALANCE_READ_MS = 3_000;

/** The operating wallet's USDC as the chain says now; `micros` undefined when it could not be read. */
export interface OperatingBalance {
  wallet: string;
  micros?: bigint;
}

/**
 * The operating wallet's (PARTNER_PAYER_KEY) balance of `asset`, read with balanceOf over RPC_URL;
 * undefined without a key or an RPC. Never rejects: a failed read is logged (redacted: the RPC URL
 * often holds its key, and viem's errors name it) and answered without `micros`, so callers go on
 * as if it were not read. One try (no retry) within BALANCE_READ_MS: a caller waits for it.
 */
export async function operatingBalance(
  env: Bindings,
  asset: string,
  requestId?: string,
): Promise<OperatingBalance | undefined> {
  const rpc = varText(env.RPC_URL).trim();
  const key = operatingKey(env);
  if (!rpc || !key) return undefined;
  let wallet = "";
  try {
    const { privateKeyToAccount } = await import("../signer");
    wallet = privateKeyToAccount(key).address;
    // Not handed to viem (its "HTTP request failed … Invalid URL" named no var): said by name.
    const malformed = rpcUrlProblem(rpc);
    if (malformed) throw new Error(malformed);
    const { createPublicClient, http, parseAbi } = await import("../net/rpc-client");
    const client = createPublicClient({ transport: http(rpc, { timeout: BALANCE_READ_MS, retryCount: 0 }) });
    const micros = await client.readContract({
      address: asset as `0x${string}`,
      abi: parseAbi(["function balanceOf(address account) view returns (uint256)"]),
      functionName: "balanceOf",
      args: [wallet as `0x${string}`],
    });
    return { wallet, micros };
  } catch (e) {
    console.error(
      redactSecrets(
        JSON.stringify({
          level: "warn",
          msg: "operating wallet balance unreadable",
          ...(requestId ? { request_id: requestId } : {}),
          error: readFailure(e),
        }),
        env,
      ),
    );
    return { wallet };
  }
}

/** How long a paid try reuses a short or unreadable balance (see recentOperatingBalance). */
export const BALANCE_REUSE_MS = 15_000;
/** The last reading of this isolate, under its configuration (one per deployment). */
let last: { key: string; until: number; read: OperatingBalance | undefined } | undefined;

/**
 * The balance for a try whose partner costs `neededMicros`: what this isolate read in the last
 * BALANCE_REUSE_MS when that was short of it or unreadable, else a new read. Why: a try refused
 * before its caller is charged frees the caller's authorization, so one signed payment could be
 * sent again and again, each time costing a read on RPC_URL, which reconciliation needs too. A
 * balance that was enough is never reused: our own payments to partners spend it, and a call let
 * through on an old reading would be charged and then refunded from an empty wallet. So a resent
 * try whose partner fails while the wallet holds enough reads again each time, as it costs a
 * /verify and a partner request each time already (the per-IP and per-payer limits bound them). The price: a
 * wallet just funded is used up to 15 s later. Only settled reads are kept, so no call waits on
 * another request's read (which a cancelled request could leave unsettled).
 */
export async function recentOperatingBalance(
  env: Bindings,
  asset: string,
  neededMicros: bigint,
  requestId?: string,
): Promise<OperatingBalance | undefined> {
  const key = `${env.RPC_URL}\n${asset}\n${env.PARTNER_PAYER_KEY}`;
  if (
    last?.key === key &&
    last.until > Date.now() &&
    !(last.read?.micros !== undefined && last.read.micros >= neededMicros)
  )
    return last.read;
  const read = await operatingBalance(env, asset, requestId);
  last = { key, until: Date.now() + BALANCE_REUSE_MS, read };
  return read;
}

/** Tests: forget the balances this isolate read. */
export function forgetOperatingBalances() {
  last = undefined;
}

/**
 * What failed, in one line: viem's message runs to the whole request and contract call, and its
 * short message leaves out the RPC's HTTP status.
 */
function readFailure(e: unknown): string {
  const v = e as { shortMessage?: string; walk?: (fn: (c: unknown) => boolean) => unknown };
  if (!v.shortMessage) return String(e);
  const http = v.walk?.((c) => typeof (c as { status?: unknown }).status === "number");
  const status = (http as { status?: number } | undefined)?.status;
  return status ? `${v.shortMessage} (HTTP ${status})` : v.shortMessage;
}

/**
 * The highest partner price among the services sold per call (0n when none is): a call whose
 * partner asks x402 is refused, nothing charged, while the wallet holds less than that partner's
 * price, so a wallet below this refuses some partner calls.
 */
export function largestPartnerPrice(pc: PricingConfig): bigint {
  let largest = 0n;
  for (const { prices } of paidPartnerServices(pc))
    if (prices.partnerMicros > largest) largest = prices.partnerMicros;
  return largest;
}
