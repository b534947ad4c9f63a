import { parseJsonText } from "../http/json-text";
import type { ErrorItem } from "../http/validation";
import { decodeStrict } from "../net/charset";
import { readCappedBytes } from "../net/read-capped";
import type { PartnerConfig } from "./config";
import type { Partner, PartnerService } from "./data";

/**
 * Path parameters are slug-like values only, so no value can change the upstream path or host:
 * no "/", "%", ".", "?", "#", "@", ":" or "\\" can get through.
 */
export const PATH_PARAM = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const UPSTREAM_TIMEOUT_MS = 10_000;
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

/**
 * A record of money spent that could not be written while answering: the caller has paid, so the
 * answer never waits for, or fails with, the storage; the route retries it after the answer.
 */
export type Unrecorded = () => Promise<unknown>;

export class UpstreamFailure extends Error {
  /** An authorization of ours the partner holds (it can collect it whatever it answered). */
  handedOverMicros?: bigint;
  unrecorded?: Unrecorded;
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
  unrecorded?: Unrecorded;
}

/**
 * The partner's 10 s: counted only while a partner request or its answer is pending. The caller's
 * own settlement (the facilitator's /settle, up to 45 s) runs between the partner's 402 and the
 * paid request with the clock stopped: a slow settlement is the settlement's outcome, never a
 * partner timeout after the caller paid. `signal` is the deadline of the requests sent now.
 */
export class PartnerDeadline {
  signal = AbortSignal.timeout(UPSTREAM_TIMEOUT_MS);
  #spentMs = 0;
  #since = Date.now();

  async pausedFor<T>(work: () => Promise<T>): Promise<T> {
    this.#spentMs += Date.now() - this.#since;
    try {
      return await work();
    } finally {
      this.#since = Date.now();
      this.signal = AbortSignal.timeout(Math.max(1, UPSTREAM_TIMEOUT_MS - this.#spentMs));
    }
  }
}

const isTimeout = (e: unknown) =>
  e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
const timedOut = () => new UpstreamFailure(504, "The partner did not answer within 10 s");

/**
 * The partner's answer as text, in the charset it declares (a BOM, else Content-Type's charset,
 * else UTF-8). An answer whose bytes are not valid in that encoding is the partner's failure (502:
 * never settled, or refunded what we kept): relayed with U+FFFD in place of its characters
 * ("caf\ufffd"), it was charged as a 200 and was not the partner's answer. Only for an answer
 * relayed to the caller; one we only look into is read by readCappedIfDecodable.
 */
export async function readCapped(res: Response): Promise<string> {
  const decoded = decodeStrict(await cappedBytes(res), res.headers.get("content-type") ?? "");
  if ("error" in decoded)
    throw new UpstreamFailure(502, `The partner's answer could not be read: ${decoded.error}`, res.status);
  return decoded.text;
}

/**
 * As readCapped, but an answer that does not decode is no answer (null), not a failure: for one we
 * only look into (an unpaid 402's offer, read from its PAYMENT-REQUIRED header first; the external
 * partner's 403 challenge), which pays nothing for its body and must not fail the call by it.
 */
export async function readCappedIfDecodable(res: Response): Promise<string | null> {
  const decoded = decodeStrict(await cappedBytes(res), res.headers.get("content-type") ?? "");
  return "error" in decoded ? null : decoded.text;
}

/** The answer's bytes, at most MAX_BODY_BYTES, within the call's deadline. */
async function cappedBytes(res: Response): Promise<Uint8Array> {
  try {
    return await readCappedBytes(
      res,
      MAX_BODY_BYTES,
      () => new UpstreamFailure(502, `The partner's answer is larger than ${MAX_BODY_BYTES} bytes`),
    );
  } catch (e) {
    if (e instanceof UpstreamFailure) throw e;
    // The deadline also covers the body: a partner that stalls mid-answer is a timeout, not our 500.
    if (isTimeout(e)) throw timedOut();
    throw new UpstreamFailure(502, `The partner's answer could not be read: ${e}`, res.status);
  }
}

/**
 * Only the partner's own origin; same-origin redirects are followed a few times, others are not.
 * `init.signal` is the call's deadline (PartnerDeadline), shared by every hop.
 */
export async function fetchOnHost(url: URL, init: RequestInit, doFetch: typeof fetch): Promise<Response> {
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
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      throw new UpstreamFailure(502, "The partner redirected to an invalid URL; not followed", res.status);
    }
    if (next.origin !== url.origin) {
      throw new UpstreamFailure(
        502,
        "The partner redirected away from its own host; not followed",
        res.status,
      );
    }
    if (hop >= MAX_SAME_HOST_REDIRECTS) {
      throw new UpstreamFailure(
        502,
        `The partner redirected more than ${MAX_SAME_HOST_REDIRECTS} times; not followed`,
        res.status,
      );
    }
    current = next;
  }
}

/** JSON answers are relayed as JSON; anything else, or JSON too deep to re-serialize, as text. */
export function parseBody(text: string, contentType: string | null): unknown {
  if (!contentType?.includes("json")) return text;
  const parsed = parseJsonText(text);
  return parsed.ok ? parsed.value : text;
}
