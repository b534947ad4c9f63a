import type { PaymentPayload } from "@x402/core/types";
import type { Context } from "hono";
import { rpcUrlProblem } from "../config-urls";
import type { AppEnv } from "../env";
import { requestConfig } from "../http/request-config";
import { SharedLoad, within } from "../http/shared-load";
import { validationResponse } from "../http/validation";
import { varText } from "../var-text";
import { bearerKey, cardKeyAuthorization, hashKey } from "./credits";
import { decodePaymentSignatureHeader } from "./x402-headers";
import { EVM_ADDRESS } from "./x402-terms";

export type Identified =
  | {
      key: string;
      principal: string;
      kind: "x402" | "card";
      /**
       * Set when the payer could not be proven here (a contract wallet): proves it on chain before
       * a stored answer is handed out. Resolves false for a signature the payer did not make;
       * rejects when the chain cannot be asked.
       */
      proveOnChain?: () => Promise<boolean>;
      /** A card key's hash, as api_keys holds it (idempotency.ts asks whether the key exists). */
      keyHash?: string;
    }
  | { invalid: Response }
  | undefined;

/** Stripe's rule for an Idempotency-Key, over HTTP and over MCP (`_meta["marketplace/idempotency-key"]`). */
export const IDEMPOTENCY_KEY_MESSAGE = "Idempotency-Key must be 1 to 255 visible ASCII characters";
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
export const isIdempotencyKey = (value: unknown): value is string =>
  typeof value === "string" && IDEMPOTENCY_KEY.test(value);

/**
 * False when `identify` cannot key this request: it sends neither of the two headers it reads.
 * Checked without an async step for the calls (most) that send neither (gate.ts says why); kept
 * beside `identify` so the two read the same headers.
 */
export const mayIdentify = (c: Context<AppEnv>): boolean =>
  c.req.header("idempotency-key") !== undefined || !!c.req.header("payment-signature");

/**
 * Which idempotency key a request carries, if any, chosen by what can pay it. A card key with an
 * `Idempotency-Key` header, on a route card keys pay: that header, scoped by the key's hash,
 * whichever then pays (a key without credits falls through to x402 in the gate, and the answer
 * must be stored where the retry, carrying the same two, looks). Otherwise the x402
 * payment-identifier extension (`extensions["payment-identifier"].info.id` of the
 * PAYMENT-SIGNATURE payload, scoped by the payer it proves), a card key beside it or not: without
 * an Idempotency-Key a card key must not hide the id of the payment that may be the one settled.
 */
export async function identify(c: Context<AppEnv>, cardKeys: boolean): Promise<Identified> {
  const header = c.req.header("idempotency-key");
  const cardKey = header !== undefined && cardKeys ? cardKeyOf(c) : undefined;
  if (header !== undefined && cardKey) {
    if (!IDEMPOTENCY_KEY.test(header)) {
      return {
        invalid: validationResponse(c, [
          {
            loc: ["header", "idempotency-key"],
            msg: IDEMPOTENCY_KEY_MESSAGE,
            type: "value_error",
            input: header.slice(0, 256),
          },
        ]),
      };
    }
    const keyHash = await hashKey(cardKey);
    return { key: `card:${keyHash}:${header}`, principal: `card:${keyHash}`, kind: "card", keyHash };
  }
  const signature = c.req.header("payment-signature");
  if (!signature) return undefined;
  let payment: PaymentPayload;
  try {
    payment = decodePaymentSignatureHeader(signature);
  } catch {
    return undefined; // the payment middleware answers a malformed signature
  }
  // Any JSON decodes (`null`, `1`): what is no object is no payment either, answered by the gate
  // as invalid_payment_header like the undecodable.
  if (typeof payment !== "object" || payment === null) return undefined;
  const { isValidPaymentId, PAYMENT_IDENTIFIER, usdcDomain } = await import("./paid-call-libs");
  // The id is checked with the extension's format rule only: its validatePaymentIdentifier also
  // compiles the echoed JSON Schema with ajv, which generates code (new Function) and so always
  // fails in workerd (no eval), rejecting every valid id.
  const id = (payment.extensions?.[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | undefined)?.info?.id;
  if (id === undefined) return undefined; // the extension echoed without an id: not idempotent
  if (typeof id !== "string" || !isValidPaymentId(id)) {
    return {
      invalid: validationResponse(c, [
        {
          loc: ["header", "payment-signature", "extensions", PAYMENT_IDENTIFIER, "info", "id"],
          msg: "Invalid payment identifier: use 16-128 characters of A-Z a-z 0-9 _ -",
          type: "value_error",
          input: typeof id === "string" ? id.slice(0, 256) : id,
        },
      ]),
    };
  }
  const cfg = requestConfig(c);
  const terms = signedTerms(payment, {
    network: cfg.network,
    asset: cfg.usdcAddress,
    ...usdcDomain(cfg.network, cfg.usdcAddress),
  });
  if (!terms) return undefined;
  const key = `x402:${id}`;
  const principal = `x402:${terms.auth.from.toLowerCase()}`;
  if (await signedBy(terms)) return { key, principal, kind: "x402" };
  // Not an EOA signature of its `from`: a contract wallet (ERC-1271; ERC-6492 wraps it until the
  // wallet is deployed) signs in a way only the chain can check. Its call is keyed by the `from`
  // it names, and nothing about a stored call is answered until the chain confirms the signature
  // (RPC_URL, idempotency.ts). The first call itself is judged by the facilitator like any other.
  // Without an RPC (of the route's chain, the only one signedTerms takes) it cannot be proven:
  // no idempotency, the retry is paid normally.
  const rpcUrl = varText(c.env.RPC_URL).trim();
  if (!rpcUrl) return undefined;
  // One that is no http(s) URL is not handed to viem (its "HTTP request failed … Invalid URL" named
  // no var), as in reconciliation and the refund checks: the proof fails by name, the retry a 503.
  const malformed = rpcUrlProblem(rpcUrl);
  const proveOnChain = malformed
    ? () => Promise.reject(new RpcUrlUnusable(malformed))
    : () => signedOnChain(rpcUrl, terms);
  return { key, principal, kind: "x402", proveOnChain };
}

/** The proof was not attempted: RPC_URL is set but is no URL viem can be given (config-urls.ts). */
export class RpcUrlUnusable extends Error {}

/** The card key as the payment gate reads it (Authorization: Bearer, or X-API-Key). */
function cardKeyOf(c: Context<AppEnv>): string | undefined {
  const authorization = cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key"));
  return authorization && /^Bearer\s+mk_/i.test(authorization) ? bearerKey(authorization) : undefined;
}

type SignedTerms = NonNullable<ReturnType<typeof signedTerms>>;

/** What the route asks to be paid in: its requirements' network, asset and EIP-712 domain (`extra`). */
interface RouteTerms {
  network: string;
  asset: string;
  name: string;
  version: string;
}

/**
 * The EIP-3009 authorization of a payload and the EIP-712 domain it is signed under, if that is
 * the route's own. This runs before the gate, so no requirements are matched yet, and everywhere
 * else the matched requirements are read, not the payload's `accepted` (the payer writes it). But
 * the signature is recovered under the domain the payer signed, so that domain is the payload's;
 * it counts only when its chain, contract, name and version are the route's (the requirements the
 * gate will match it against). Under a domain of the payer's choosing, a signature made for another
 * token or chain (a settled one is public on that chain) would prove its signer here. Any other
 * domain is no idempotency key: the gate judges the payment as any other.
 */
function signedTerms(payment: PaymentPayload, route: RouteTerms) {
  // The client's JSON, unchecked: a payload that is missing or null names no payer (the gate
  // refuses it as invalid_payment_header).
  if (typeof payment.payload !== "object" || payment.payload === null) return undefined;
  const { authorization: auth, signature } = payment.payload as {
    authorization?: Record<string, string>;
    signature?: string;
  };
  const accepted = (payment.accepted ?? {}) as Partial<PaymentPayload["accepted"]>;
  const extra = (accepted.extra ?? {}) as { name?: unknown; version?: unknown };
  if (
    accepted.network !== route.network ||
    accepted.asset !== route.asset ||
    extra.name !== route.name ||
    extra.version !== route.version
  )
    return undefined;
  const chainId = Number(/^eip155:(\d+)$/.exec(route.network)?.[1]);
  if (!auth || typeof auth.from !== "string" || !EVM_ADDRESS.test(auth.from)) return undefined;
  if (!signature || !chainId) return undefined;
  // The domain the payer signed, equal to the route's (checked above).
  const domain = {
    name: route.name,
    version: route.version,
    chainId,
    verifyingContract: route.asset as `0x${string}`,
  };
  return {
    auth: auth as Record<string, string> & { from: string },
    signature: signature as `0x${string}`,
    domain,
  };
}

const ERC1271_MAGIC = "0x1626ba7e";
const ERC1271_ABI = [
  {
    name: "isValidSignature",
    type: "function",
    stateMutability: "view",
    inputs: [
      { name: "hash", type: "bytes32" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [{ name: "", type: "bytes4" }],
  },
] as const;

/**
 * The chain id an RPC serves, asked once per isolate and URL. A question no request waits for
 * longer than CHAIN_ID_WAIT_MS (above viem's 5 s timeout and one retry), which is also when a
 * question still pending is asked again: one whose request was cancelled never settles
 * (http/shared-load.ts), and every contract-wallet replay waited on it.
 */
const CHAIN_ID_WAIT_MS = 15_000;
const chainIds = new Map<string, SharedLoad<number>>();

/**
 * Whether the contract wallet a payment names signed it, asked of the chain: ERC-1271
 * `isValidSignature` of the wallet deployed at `from` over the authorization's EIP-712 digest (an
 * ERC-6492 wrapper is taken off: a stored answer means the first settlement deployed the wallet).
 * False only for what the chain says: no contract there, a revert, or another value. Anything the
 * RPC fails to answer (down, rate limited, timed out, another chain) throws, so the caller is told
 * to retry rather than that the payment is not theirs. viem's own verifyTypedData cannot tell the
 * two apart: it answers false for any failure of its eth_call.
 */
async function signedOnChain(rpcUrl: string, t: SignedTerms): Promise<boolean> {
  const v = await import("../net/rpc-client");
  const { transferWithAuthorization } = await import("./paid-call-libs");
  let digest: `0x${string}`;
  try {
    digest = v.hashTypedData(transferWithAuthorization(t.auth, t.domain));
  } catch {
    return false; // not an authorization anyone could have signed
  }
  const client = v.createPublicClient({ transport: v.http(rpcUrl, { timeout: 5_000, retryCount: 1 }) });
  let chainId = chainIds.get(rpcUrl);
  if (!chainId) {
    chainId = new SharedLoad(CHAIN_ID_WAIT_MS);
    chainIds.set(rpcUrl, chainId);
  }
  const served = await within(
    chainId.get(() => client.getChainId()),
    CHAIN_ID_WAIT_MS,
    "RPC_URL's eth_chainId",
  );
  if (served !== t.domain.chainId) throw new Error("RPC_URL serves another chain");
  const wallet = t.auth.from as `0x${string}`;
  const code = await client.getCode({ address: wallet });
  if (!code || code === "0x") return false;
  try {
    const magic = await client.readContract({
      address: wallet,
      abi: ERC1271_ABI,
      functionName: "isValidSignature",
      args: [digest, v.parseErc6492Signature(t.signature).signature],
    });
    return magic.toLowerCase() === ERC1271_MAGIC;
  } catch (e) {
    const refused =
      e instanceof v.BaseError &&
      e.walk(
        (x) =>
          x instanceof v.ContractFunctionRevertedError ||
          x instanceof v.ContractFunctionZeroDataError ||
          x instanceof v.ExecutionRevertedError,
      );
    if (refused) return false;
    throw e;
  }
}

/**
 * Whether an authorization's own signature proves its `from`, recovered locally (an EOA). A
 * replay hands out a paid answer without verifying the payment with the facilitator, so the payer
 * must be proven, not read from `from` (anyone can write another's address there).
 */
async function signedBy(t: SignedTerms): Promise<boolean> {
  try {
    const { recoverTypedDataAddress, transferWithAuthorization } = await import("./paid-call-libs");
    const recovered = await recoverTypedDataAddress({
      ...transferWithAuthorization(t.auth, t.domain),
      signature: t.signature,
    });
    return recovered.toLowerCase() === t.auth.from.toLowerCase();
  } catch {
    return false;
  }
}
