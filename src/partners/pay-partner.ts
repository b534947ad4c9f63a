import { operatingKey, publicConfig } from "../config";
import type { Bindings } from "../env";
import { recordUpstreamPayment, type UpstreamAuthorization } from "./payouts";
import { servicePrices } from "./pricing";
import { CallerNotCharged, fetchOnHost, type TryTarget, UpstreamFailure } from "./upstream";

/**
 * Pays an x402-priced partner from the operating wallet, never above the partner's listed price.
 * `signed` learns the amount of the authorization handed to the partner, if one was.
 */
async function payingFetch(
  env: Bindings,
  maxMicros: bigint,
  signed: { micros?: bigint; authorization?: UpstreamAuthorization },
): Promise<typeof fetch> {
  const [{ x402Client }, { registerExactEvmScheme }, { wrapFetchWithPayment }, { privateKeyToAccount }] =
    await Promise.all([
      import("@x402/core/client"),
      import("@x402/evm/exact/client"),
      import("@x402/fetch"),
      import("../signer"),
    ]);
  const network = publicConfig(env, "http://localhost").network;
  const client = registerExactEvmScheme(new x402Client(), {
    signer: privateKeyToAccount(operatingKey(env) as `0x${string}`),
    // One authorization per call, whatever the partner does next: a partner that answers a paid
    // hop with a same-host redirect to another 402 would otherwise be paid again on every hop
    // (fetchOnHost follows up to three), while the caller paid for one call. With nothing left
    // to choose, the client refuses to pay and the hop fails as an upstream error.
    policies: [
      (_v, reqs) =>
        signed.micros === undefined
          ? reqs.filter((r) => r.network === network && BigInt(r.amount) <= maxMicros)
          : [],
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
  const { decodePaymentResponseHeader } = await import("@x402/core/http");
  try {
    return decodePaymentResponseHeader(header);
  } catch {
    return undefined;
  }
}

/**
 * The partner answered 402: pays it from the operating wallet and records the authorization at
 * once, before anything else can fail, because the partner can collect it whatever the caller's
 * own payment does next.
 */
export async function payPartner(
  env: Bindings,
  t: TryTarget,
  requestId: string,
  url: URL,
  init: RequestInit,
) {
  const { partnerMicros } = servicePrices(t.service, t.pc.multiplierMilli);
  if (!operatingKey(env) || partnerMicros === 0n || !t.collect) {
    throw new UpstreamFailure(
      502,
      "The partner asks for payment and this marketplace has no operating wallet configured",
      402,
    );
  }
  // The caller pays first (settled now, not after the answer): concurrent calls whose payments
  // cannot all settle never make the operating wallet pay the partner for the ones that fail.
  if (!(await t.collect())) throw new CallerNotCharged();
  const signed: { micros?: bigint; authorization?: UpstreamAuthorization } = {};
  // Once an authorization was handed over, the partner can settle it for its whole validity,
  // answered or not: it is recorded whatever happens next, at the amount we signed.
  const record = (status: number, transaction: string | null) =>
    signed.micros === undefined
      ? Promise.resolve()
      : recordUpstreamPayment(env.DB, {
          requestId,
          partnerId: t.partner.id,
          serviceId: t.service.id,
          amountMicros: signed.micros,
          transaction,
          upstreamStatus: status,
          authorization: signed.authorization,
        });
  let res: Response;
  try {
    res = await fetchOnHost(url, init, await payingFetch(env, partnerMicros, signed));
  } catch (e) {
    await record(0, null);
    const failure =
      e instanceof UpstreamFailure
        ? e
        : new UpstreamFailure(502, `Paying the partner failed: ${e instanceof Error ? e.message : e}`, 402);
    failure.handedOverMicros = signed.micros;
    throw failure;
  }
  const receipt = await settlementOf(res);
  const transaction = receipt?.success ? receipt.transaction : null;
  await record(res.status, transaction);
  // Paid means the partner's receipt says so, or it took our authorization and answered 2xx.
  const paid = Boolean(receipt?.success) || (signed.micros !== undefined && res.ok);
  const handedOverMicros = signed.micros;
  if (!paid || signed.micros === undefined) return { res, handedOverMicros };
  return { res, handedOverMicros, paidUpstream: { transaction, amountMicros: signed.micros } };
}
