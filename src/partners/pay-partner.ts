import type { PaymentRequirements } from "@x402/core/types";
import { operatingKey, publicConfig } from "../config";
import type { Bindings } from "../env";
import { logWriteFailure } from "../http/after-response";
import { parseJsonText } from "../http/json-text";
import { sameAddress, TX_HASH } from "../money";
import { walletOf } from "./config";
import type { OperatingBalance } from "./operating-balance";
import { recordUpstreamPayment, type UpstreamAuthorization } from "./payouts";
import { servicePrices } from "./pricing";
import {
  CallerNotCharged,
  fetchOnHost,
  type PartnerDeadline,
  readCappedIfDecodable,
  type TryTarget,
  type Unrecorded,
  UpstreamFailure,
} from "./upstream";

/** The only terms the operating wallet signs for a partner: the listing's. */
interface Terms {
  network: string;
  asset: string;
  payTo: string;
  maxMicros: bigint;
}

/**
 * The longest validity (x402 `maxTimeoutSeconds`) the operating wallet signs for: @x402/evm signs
 * `validBefore = now + maxTimeoutSeconds`, and until that authorization expires the partner can
 * collect it, so a caller's withheld share waits for it (returned only once reconciliation finds
 * it expired unused). 300 s is what we offer our own buyers (payments/x402-terms.ts, not imported:
 * partners import no payments code) and @x402/core's default, which x402 partners such as
 * PriceFeed (an @x402/hono server) send: a partner answers within its 10 s deadline, and 300 s
 * leaves it ample time to settle.
 */
const MAX_PARTNER_TIMEOUT_SECONDS = 300;

/**
 * Why the operating wallet will not sign this offer (undefined: it will). Only an x402 v2 `exact`
 * EIP-3009 transfer of our USDC on our network, to the partner's listed wallet, at most its listed
 * price, valid for at most MAX_PARTNER_TIMEOUT_SECONDS: a 402 naming another payee would send the
 * caller's money to someone else (another partner's wallet, whose payout row then reads paid), a
 * permit2 authorization is one reconciliation cannot read back from the chain (no EIP-3009 nonce),
 * so it would count as spent forever, and a ten-year window would let a partner that dropped the
 * connection collect for ten years while the caller's withheld share waited as long.
 */
function refusal(version: number, r: PaymentRequirements, terms: Terms): string | undefined {
  if (version !== 2) return `an x402 v${version} offer (only v2 is paid)`;
  if (typeof r !== "object" || r === null) return "an offer that is not an object";
  if (r.scheme !== "exact") return `scheme ${r.scheme}, not exact`;
  if (r.network !== terms.network) return `network ${r.network}, not ${terms.network}`;
  if (!sameAddress(r.asset, terms.asset)) return `asset ${r.asset}, not USDC ${terms.asset}`;
  if (!sameAddress(r.payTo, terms.payTo))
    return `pays ${r.payTo}, not the partner's listed wallet ${terms.payTo}`;
  const method = r.extra?.assetTransferMethod;
  if (method !== undefined && method !== "eip3009")
    return `transfer method ${String(method)} (only EIP-3009 is signed)`;
  const validFor = r.maxTimeoutSeconds;
  if (!Number.isInteger(validFor) || validFor <= 0 || validFor > MAX_PARTNER_TIMEOUT_SECONDS)
    return `maxTimeoutSeconds ${String(validFor)} (an authorization valid for 1 to ${MAX_PARTNER_TIMEOUT_SECONDS} s is signed)`;
  if (typeof r.amount !== "string" || !/^\d{1,30}$/.test(r.amount)) return `amount ${String(r.amount)}`;
  if (BigInt(r.amount) > terms.maxMicros)
    return `price ${r.amount} is above the listed ${terms.maxMicros} (micro-USDC)`;
  return undefined;
}

const notPayable = (why: string) =>
  new UpstreamFailure(
    502,
    `The partner asks for a payment this marketplace does not make (only the listing's price, payee, network and USDC by EIP-3009, valid for at most ${MAX_PARTNER_TIMEOUT_SECONDS} s): ${why}`,
    402,
  );

/**
 * Reads the offers of a partner's unpaid 402 as @x402/fetch reads them (PAYMENT-REQUIRED, or a v1
 * body) and throws unless one of them is payable: checked before the caller is charged, so a
 * partner we will never pay costs the caller nothing.
 */
async function checkOffer(first: Response, terms: Terms) {
  // The header is read first; a body that does not decode is no body (a v1 offer is in the body).
  const text = await readCappedIfDecodable(first);
  const parsed = text === null ? null : parseJsonText(text);
  const { x402HTTPClient, x402Client } = await import("@x402/core/client");
  let offer: { x402Version: number; accepts: PaymentRequirements[] };
  try {
    offer = new x402HTTPClient(new x402Client()).getPaymentRequiredResponse(
      (name) => first.headers.get(name),
      parsed?.ok ? parsed.value : undefined,
    ) as typeof offer;
  } catch {
    throw notPayable("its 402 carries no x402 offer that can be read");
  }
  const accepts = Array.isArray(offer.accepts) ? offer.accepts : [];
  const reasons = accepts.map((r) => refusal(offer.x402Version, r, terms));
  if (!reasons.includes(undefined)) throw notPayable(reasons.join("; ") || "its 402 offers nothing");
}

/**
 * Why the operating wallet cannot pay the partner now: it holds less USDC than the listing's price
 * (undefined: it holds enough, or the chain could not say). Checked before the caller is charged: a
 * dry wallet otherwise took every caller's full price, answered them a 502, and owed them a refund
 * that the same dry wallet could not send (docs/OPERATIONS.md, "Operating wallet short of USDC").
 * Without RPC_URL, or with an RPC that fails, the call goes on as before (logged): a payment check
 * must not stop sales while the wallet may well be funded.
 */
function walletShort(
  read: OperatingBalance | undefined,
  terms: Terms,
  requestId: string,
): string | undefined {
  const balance = read?.micros;
  if (read === undefined || balance === undefined) return undefined;
  const wallet = read.wallet;
  if (balance >= terms.maxMicros) return undefined;
  console.error(
    JSON.stringify({
      level: "error",
      msg: "operating wallet short of USDC: calls to x402-priced partners are refused, nothing charged",
      request_id: requestId,
      wallet,
      balance_micro: Number(balance),
      needed_micro: Number(terms.maxMicros),
      action: `send USDC on ${terms.network} to ${wallet} (PARTNER_PAYER_KEY's address); calls are taken again within 15 s, and refunds still owed are sent by the next reconciliation runs`,
    }),
  );
  return `The marketplace's operating wallet cannot pay this partner right now (it holds less USDC than the partner's price); nothing was charged, try again later`;
}

/**
 * Pays an x402-priced partner from the operating wallet, on the listing's terms only.
 * `signed` learns the amount of the authorization handed to the partner, if one was, and
 * `refused` why nothing was signed when the partner's offer changed after the check.
 */
async function payingFetch(
  env: Bindings,
  terms: Terms,
  signed: { micros?: bigint; authorization?: UpstreamAuthorization; refused?: string },
): Promise<typeof fetch> {
  const [{ x402Client }, { registerExactEvmScheme }, { wrapFetchWithPayment }, { privateKeyToAccount }] =
    await Promise.all([
      import("@x402/core/client"),
      import("@x402/evm/exact/client"),
      import("@x402/fetch"),
      import("../signer"),
    ]);
  const client = registerExactEvmScheme(new x402Client(), {
    signer: privateKeyToAccount(operatingKey(env) as `0x${string}`),
    policies: [
      (version, reqs) => {
        // One authorization per call, whatever the partner does next: a partner that answers a
        // paid hop with a same-host redirect to another 402 would otherwise be paid again on every
        // hop (fetchOnHost follows up to three), while the caller paid for one call. With nothing
        // left to choose, the client refuses to pay and the hop fails as an upstream error.
        if (signed.micros !== undefined) {
          signed.refused = "a second payment for the same call";
          return [];
        }
        const payable = reqs.filter((r) => !refusal(version, r, terms));
        if (!payable.length) signed.refused = reqs.map((r) => refusal(version, r, terms)).join("; ");
        return payable;
      },
    ],
  }).onAfterPaymentCreation(async ({ selectedRequirements, paymentPayload }) => {
    signed.micros = BigInt(selectedRequirements.amount);
    // Kept for reconciliation: whether this authorization landed is read on chain later.
    const a = (paymentPayload.payload as { authorization?: Record<string, string> }).authorization;
    if (a?.from && a.to && a.nonce) {
      const { network, asset } = selectedRequirements;
      signed.authorization = {
        payer: a.from,
        payTo: a.to,
        nonce: a.nonce,
        network,
        asset,
        validBefore: Number(a.validBefore) || 0,
      };
    }
  });
  return wrapFetchWithPayment(fetch, client) as typeof fetch;
}

async function settlementOf(res: Response) {
  const header = res.headers.get("payment-response");
  if (!header) return undefined;
  try {
    const { decodePaymentResponseHeader } = await import("@x402/core/http");
    return decodePaymentResponseHeader(header);
  } catch {
    return undefined;
  }
}

/**
 * The partner answered 402 (`first`): pays it from the operating wallet and records the
 * authorization at once, before anything else can fail, because the partner can collect it
 * whatever the caller's own payment does next.
 */
export async function payPartner(
  env: Bindings,
  t: TryTarget,
  requestId: string,
  url: URL,
  init: RequestInit,
  first: Response,
  deadline: PartnerDeadline,
  balance: Promise<OperatingBalance | undefined>,
) {
  const { partnerMicros } = servicePrices(t.service, t.pc.multiplierMilli);
  if (!operatingKey(env) || partnerMicros === 0n || !t.collect) {
    throw new UpstreamFailure(
      502,
      "The partner asks for payment and this marketplace has no operating wallet configured",
      402,
    );
  }
  const cfg = publicConfig(env, "http://localhost");
  const terms: Terms = {
    network: cfg.network,
    asset: cfg.usdcAddress,
    payTo: walletOf(t.partner, t.pc),
    maxMicros: partnerMicros,
  };
  await checkOffer(first, terms);
  // Started beside the partner's first request (try-proxy.ts): awaited with the partner's clock
  // stopped, as the settlement is, so a slow RPC is never the partner's timeout after the caller paid.
  const short = walletShort(await deadline.pausedFor(() => balance), terms, requestId);
  if (short) throw new UpstreamFailure(502, short, 402);
  const signed: { micros?: bigint; authorization?: UpstreamAuthorization; refused?: string } = {};
  // Once an authorization was handed over, the partner can settle it for its whole validity,
  // answered or not: it is recorded whatever happens next, at the amount we signed. A write that
  // fails is handed back to be retried after the answer (`unrecorded`).
  const record = async (status: number, transaction: string | null): Promise<Unrecorded | undefined> => {
    if (signed.micros === undefined) return undefined;
    const write = () =>
      recordUpstreamPayment(env.DB, {
        requestId,
        partnerId: t.partner.id,
        serviceId: t.service.id,
        amountMicros: signed.micros ?? 0n,
        transaction,
        upstreamStatus: status,
        authorization: signed.authorization,
      });
    try {
      await write();
      return undefined;
    } catch (e) {
      logWriteFailure(requestId, "upstream payment", e, 1);
      return write;
    }
  };
  const collect = t.collect;
  try {
    // The caller pays first (settled now, not after the answer): concurrent calls whose payments
    // cannot all settle never make the operating wallet pay the partner for the ones that fail.
    // The partner's deadline stops meanwhile: the settlement may take the facilitator's 45 s.
    if (!(await deadline.pausedFor(collect))) throw new CallerNotCharged();
    // From here the caller has paid: whatever fails is an UpstreamFailure carrying what we handed
    // over (the caller gets the rest back), never our 500.
    return await paidRequest(env, terms, url, init, deadline, signed, record);
  } catch (e) {
    if (e instanceof CallerNotCharged || e instanceof UpstreamFailure) throw e;
    // An error of ours (a bug, storage) once the caller may have paid. Only here is it known what
    // was handed over: nothing before the wallet signed (the caller gets the whole price back),
    // or the authorization, recorded now, that the caller's share waits for. Thrown on as it is,
    // the route could only guess (partner-calls.ts keeps the listed share back for a person).
    console.error(
      JSON.stringify({ level: "error", request_id: requestId, error: `paying the partner: ${e}` }),
    );
    const failure = new UpstreamFailure(502, "The partner call failed on our side");
    failure.handedOverMicros = signed.micros;
    failure.unrecorded = await record(0, null);
    throw failure;
  }
}

/**
 * The partner's request, paid from the operating wallet (`signed` learns what was handed over),
 * and its authorization recorded (`record`) before anything else is read from the answer.
 */
async function paidRequest(
  env: Bindings,
  terms: Terms,
  url: URL,
  init: RequestInit,
  deadline: PartnerDeadline,
  signed: { micros?: bigint; authorization?: UpstreamAuthorization; refused?: string },
  record: (status: number, transaction: string | null) => Promise<Unrecorded | undefined>,
) {
  let res: Response;
  try {
    const paying = await payingFetch(env, terms, signed);
    res = await fetchOnHost(url, { ...init, signal: deadline.signal }, paying);
  } catch (e) {
    const failure =
      signed.refused !== undefined
        ? notPayable(signed.refused)
        : e instanceof UpstreamFailure
          ? e
          : new UpstreamFailure(502, `Paying the partner failed: ${e instanceof Error ? e.message : e}`, 402);
    failure.handedOverMicros = signed.micros;
    failure.unrecorded = await record(0, null);
    throw failure;
  }
  const receipt = await settlementOf(res);
  // A receipt's transaction only when it is one (a 32-byte hash): "" or garbage is no proof, and
  // reconciliation fills the hash in from the chain for a row that has none.
  const transaction =
    receipt?.success && TX_HASH.test(receipt.transaction ?? "") ? receipt.transaction : null;
  const unrecorded = await record(res.status, transaction);
  // Paid means the partner's receipt says so, or it took our authorization and answered 2xx.
  const paid = Boolean(receipt?.success) || (signed.micros !== undefined && res.ok);
  const handedOverMicros = signed.micros;
  if (!paid || signed.micros === undefined) return { res, handedOverMicros, unrecorded };
  return { res, handedOverMicros, unrecorded, paidUpstream: { transaction, amountMicros: signed.micros } };
}
