import { publicConfig } from "../config";
import type { Bindings } from "../env";
import { type ErrorItem, parseJsonText } from "../http/validation";
import { readCappedBytes } from "../net/read-capped";
import type { Partner, PartnerService } from "./data";
import { baseUrlOf, type PartnerConfig } from "./listing";
import { recordUpstreamPayment, type UpstreamAuthorization } from "./payouts";
import { servicePrices } from "./pricing";

/**
 * Path parameters are slug-like values only, so no value can change the upstream path or host:
 * no "/", "%", ".", "?", "#", "@", ":" or "\\" can get through.
 */
export const PATH_PARAM = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const UPSTREAM_TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_SAME_HOST_REDIRECTS = 3;

export function upstreamPath(
  service: PartnerService,
  query: Record<string, string>,
): { path: string } | { errors: ErrorItem[] } {
  const errors: ErrorItem[] = [];
  const path = service.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = query[name] ?? service.test_params?.[name];
    if (value === undefined) {
      errors.push({ loc: ["query", name], msg: "Field required", type: "missing", input: query });
      return "";
    }
    if (!PATH_PARAM.test(value)) {
      errors.push({
        loc: ["query", name],
        msg: `String should match pattern '${PATH_PARAM.source}'`,
        type: "string_pattern_mismatch",
        input: value,
        ctx: { pattern: PATH_PARAM.source },
      });
      return "";
    }
    return encodeURIComponent(value);
  });
  return errors.length ? { errors } : { path };
}

export class UpstreamFailure extends Error {
  /** An authorization of ours the partner holds (it can collect it whatever it answered). */
  handedOverMicros?: bigint;
  constructor(
    readonly status: 502 | 504,
    message: string,
    readonly upstreamStatus: number | null = null,
  ) {
    super(message);
  }
}

/** The caller's own payment did not settle: the partner is never paid for this call. */
export class CallerNotCharged extends Error {}

/** One call to a partner: which service, at which upstream path, with which body. */
export interface TryTarget {
  partner: Partner;
  service: PartnerService;
  pc: PartnerConfig;
  path: string;
  body: unknown;
  /**
   * Collects the caller's payment before the marketplace pays an x402-priced partner for it
   * (true when it settled). Without it such a partner is never paid: no caller whose payment then
   * fails may cost us the partner's price.
   */
  collect?: () => Promise<boolean>;
}

export interface UpstreamResult {
  status: number;
  body: unknown;
  /** Set when the marketplace paid the partner itself with x402 from its operating wallet. */
  paidUpstream?: { transaction: string | null; amountMicros: bigint };
  /** An authorization of ours handed to the partner, paid or not (it may still collect it). */
  handedOverMicros?: bigint;
}

const isTimeout = (e: unknown) =>
  e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
const timedOut = () => new UpstreamFailure(504, "The partner did not answer within 10 s");

async function readCapped(res: Response): Promise<string> {
  try {
    const bytes = await readCappedBytes(
      res,
      MAX_BODY_BYTES,
      () => new UpstreamFailure(502, `The partner's answer is larger than ${MAX_BODY_BYTES} bytes`),
    );
    return new TextDecoder().decode(bytes);
  } catch (e) {
    if (e instanceof UpstreamFailure) throw e;
    // The deadline also covers the body: a partner that stalls mid-answer is a timeout, not our 500.
    if (isTimeout(e)) throw timedOut();
    throw new UpstreamFailure(502, `The partner's answer could not be read: ${e}`, res.status);
  }
}

/**
 * Only the partner's own origin; same-origin redirects are followed a few times, others are not.
 * `init.signal` is the call's one deadline, shared by every hop.
 */
async function fetchOnHost(url: URL, init: RequestInit, doFetch: typeof fetch): Promise<Response> {
  let current = url;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await doFetch(current.toString(), { ...init, redirect: "manual" });
    } catch (e) {
      if (isTimeout(e)) throw timedOut();
      throw new UpstreamFailure(502, `The partner is unreachable: ${e}`);
    }
    const location = res.headers.get("location");
    if (res.status < 300 || res.status >= 400 || !location) return res;
    const next = new URL(location, current);
    if (next.origin !== url.origin || hop >= MAX_SAME_HOST_REDIRECTS) {
      throw new UpstreamFailure(
        502,
        "The partner redirected away from its own host; not followed",
        res.status,
      );
    }
    current = next;
  }
}

/** JSON answers are relayed as JSON; anything else, or JSON too deep to re-serialize, as text. */
function parseBody(text: string, contentType: string | null): unknown {
  if (!contentType?.includes("json")) return text;
  const parsed = parseJsonText(text);
  return parsed.ok ? parsed.value : text;
}

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
      import("../payments/signer"),
    ]);
  const network = publicConfig(env, "http://localhost").network;
  const client = registerExactEvmScheme(new x402Client(), {
    signer: privateKeyToAccount(env.PARTNER_PAYER_KEY as `0x${string}`),
    policies: [(_v, reqs) => reqs.filter((r) => r.network === network && BigInt(r.amount) <= maxMicros)],
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
async function payPartner(env: Bindings, t: TryTarget, requestId: string, url: URL, init: RequestInit) {
  const { partnerMicros } = servicePrices(t.service, t.pc.multiplierMilli);
  if (!env.PARTNER_PAYER_KEY || partnerMicros === 0n || !t.collect) {
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

export async function callPartner(env: Bindings, t: TryTarget, requestId: string): Promise<UpstreamResult> {
  const url = new URL(`${baseUrlOf(t.partner, t.pc)}${t.path}`);
  const headers = new Headers(t.service.test_headers ?? {});
  headers.set("user-agent", "AgentSkillsMarketplace/2.7.1 (partner try proxy)");
  // One deadline for the whole call: every redirect hop, the paid retry and the body read.
  const init: RequestInit = {
    method: t.service.method,
    headers,
    signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
  };
  if (t.service.method === "POST") {
    // The external partner is only probed with its own sample, never with what the caller sent.
    const body = t.partner.listing_status === "external_x403" ? undefined : t.body;
    headers.set("content-type", "application/json");
    init.body = JSON.stringify(body ?? t.service.test_body ?? {});
  }
  let res = await fetchOnHost(url, init, fetch);
  let paidUpstream: UpstreamResult["paidUpstream"];
  let handedOverMicros: bigint | undefined;
  if (res.status === 402 && t.partner.listing_status === "paid") {
    ({ res, paidUpstream, handedOverMicros } = await payPartner(env, t, requestId, url, init));
  }
  let text: string;
  try {
    text = await readCapped(res);
  } catch (e) {
    if (e instanceof UpstreamFailure) e.handedOverMicros = handedOverMicros;
    throw e;
  }
  return {
    status: res.status,
    body: parseBody(text, res.headers.get("content-type")),
    paidUpstream,
    handedOverMicros,
  };
}
