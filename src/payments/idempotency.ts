import type { Context, MiddlewareHandler, Next } from "hono";
import { redactSecrets } from "../config";
import { sha256Hex } from "../digest";
import type { AppEnv } from "../env";
import { logWriteFailure, outlastingClient, writeOrRetryAfter } from "../http/after-response";
import { detail } from "../http/errors";
import { INTEGER_TEXT, isRawJsonNumber } from "../http/exact-integers";
import { bodyText, parseJsonText } from "../http/json-text";
import { requestConfig } from "../http/request-config";
import { ownsClaimAfterError } from "./claim-after-error";
import { findKey } from "./credits";
import { identify, mayIdentify, RpcUrlUnusable } from "./idempotency-key";
import { claim, current, type Fingerprint, release, replay, store } from "./idempotent-results";
import { payerProofQuota } from "./quotas";
import { paymentsUnavailable } from "./settlement";

const IN_FLIGHT_RETRY_AFTER_SECONDS = 2;

/**
 * SHA-256 of the body as canonical JSON (RFC 8785's key order and numbers; the x402 library's
 * canonicalizer, which writes a control character as `\u00XX`), so key order and spacing do not matter.
 * Integers past 2^53 stay as written: json_sort and json_flatten answer them exactly, so two bodies
 * that differ only in such a digit are different requests.
 *
 * Two ways two bodies met in one text, and a retry got the other body's stored answer:
 * - the canonicalizer writes such an integer (a `JSON.rawJSON` value) as the object
 *   `{"rawJSON":"<digits>"}`, the text of a body that sends that object itself. A body holding that
 *   object (one key, `rawJSON`, a string of digits: nothing else can meet an integer) is keyed by
 *   the SHA-256 of its text as sent, written `sent:<hex>`, which no bare hex digest is;
 * - a lone surrogate (`"\ud800"`, only an escape can write one) is written as is, and hashing
 *   encodes it to UTF-8 as U+FFFD, so `"\ud800"`, `"\udfff"` and `"\ufffd"` met. It is hashed as
 *   its escape, which canonical text holds nowhere else (a backslash is written `\\`).
 * Every other body keeps its hash, so a retry sent across the deploy still finds its row; a retry
 * of a body holding that object must resend its bytes, as HTTP clients do.
 */
async function bodyHash(text: string): Promise<string> {
  if (text.trim() === "") return sha256Hex("");
  const parsed = parseJsonText(text, true);
  if (!parsed.ok) return sha256Hex(text);
  if (holdsIntegerLookAlike(text, parsed.value)) return `sent:${await sha256Hex(text)}`;
  const { canonicalize } = await import("./paid-call-libs");
  const canonical = canonicalize(parsed.value);
  return sha256Hex(canonical.isWellFormed() ? canonical : canonical.replace(LONE_SURROGATE, escapeUnit));
}

const LONE_SURROGATE = /\p{Cs}/gu;
const escapeUnit = (unit: string) => `\\u${unit.charCodeAt(0).toString(16)}`;

/**
 * Whether an object in the body is `{"rawJSON": "<digits>"}`, what canonicalize makes of an integer
 * past 2^53. Its key's letters can be written only as themselves or as `\u` escapes, so a body with
 * neither in its text holds none and is not walked.
 */
function holdsIntegerLookAlike(text: string, value: unknown): boolean {
  if (!text.includes("rawJSON") && !text.includes("\\u")) return false;
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== "object" || v === null || isRawJsonNumber(v)) continue;
    // One push per value: a spread of a 5 MiB body's array would pass the engine's argument limit.
    if (Array.isArray(v)) for (const item of v) stack.push(item);
    else if (isIntegerLookAlike(v as Record<string, unknown>)) return true;
    else for (const key in v) stack.push((v as Record<string, unknown>)[key]);
  }
  return false;
}

function isIntegerLookAlike(o: Record<string, unknown>): boolean {
  const keys = Object.keys(o);
  return (
    keys.length === 1 &&
    keys[0] === "rawJSON" &&
    typeof o.rawJSON === "string" &&
    INTEGER_TEXT.test(o.rawJSON)
  );
}

/**
 * What makes two requests the same call. Undefined for a body that is no UTF-8, read as the body's
 * validation reads it: that is its 422 (nothing run, nothing paid, nothing to store), never a
 * fingerprint of replacement characters. A function of its own so that the decoded body (up to
 * the 5 MiB cap, as a string) is not kept alive while the call it keys runs and settles.
 */
async function fingerprint(c: Context<AppEnv>, principal: string): Promise<Keyed | undefined> {
  const body = await bodyText(c);
  if (!body.ok) return undefined;
  const url = new URL(c.req.url);
  const path = url.pathname + (await queryPart(url.search));
  const asWritten = url.pathname + url.search;
  return {
    method: c.req.method,
    path,
    body_sha256: await bodyHash(body.text),
    principal,
    ...(path === asWritten ? {} : { pathAsWritten: asWritten }),
  };
}

/**
 * A request's fingerprint, plus its path as written when the stored form keeps its query by digest:
 * a row the code before QUERY_KEPT_MAX stored (or an isolate still running it writes) holds the long
 * query as written, and its retry must get its replay (or 409 in flight), not a 409 mismatch telling
 * it to pay again under a new key. Only `path` is stored. pathAsWritten can go once the 24 h window
 * (IDEMPOTENCY_WINDOW_MS) has passed since the deploy that brought QUERY_KEPT_MAX.
 */
type Keyed = Fingerprint & { pathAsWritten?: string };

/**
 * A query kept as written in the stored row up to this length; a longer one by its digest. The
 * query is the caller's, up to the ~16 KB of URL Cloudflare passes, and every paid call with a fresh
 * key kept it for the window beside its answer (16 KiB at most, RESULT_ROW_MAX): a 16,000-character
 * query on a json_sort call doubled the row (16,022 + 316 + 836 bytes without any body).
 */
export const QUERY_KEPT_MAX = 256;

/**
 * The query part of a fingerprint's path: as written, or past QUERY_KEPT_MAX its SHA-256 after a
 * `#`, which no request's query can hold (a fragment is never sent), so the two forms never meet.
 */
async function queryPart(search: string): Promise<string> {
  // `search` starts with its `?` (or is empty): the query itself is one character shorter.
  return search.length - 1 <= QUERY_KEPT_MAX ? search : `#query-sha256:${await sha256Hex(search)}`;
}

/**
 * Idempotent paid calls. Runs before the payment gate: a request whose key already has a stored
 * answer gets that answer back byte for byte (with its PAYMENT-RESPONSE and receipt), marked
 * `X-Idempotent-Replay: true`; its fresh payment signature is neither verified nor settled and
 * its nonce is not claimed, and a card credit is not spent. The same key with another request
 * is a 409; a duplicate while the first still runs is a 409 with Retry-After. Only a paid 2xx is
 * stored; anything else frees the key, so the retry runs (and pays) normally.
 */
/**
 * `cardKeys`: whether the route takes card keys (the skills', payments/gate.ts). Partner try calls
 * and the refinery take x402 only (partner-calls.ts never reads a card key), so a card key sent
 * there (over MCP the connection's goes with every tools/call) pays nothing and keys nothing.
 *
 * `freeInBeta`: the route runs unpaid in free beta (the skills'), so no answer of it is stored
 * there and its key is not claimed: a call paid before the beta began is still replayed
 * (freeInBetaCall), any other runs free. Claimed, every free call carrying an Idempotency-Key
 * beside a card key, or a payment id signed by any throwaway key, cost two D1 writes (the claim
 * and its release) beside the call itself: 4 statements and 8 rows written instead of 2 and 4.
 * Partner try calls and the refinery are paid even in free beta, and keyed as any other time.
 */
export function idempotent({
  cardKeys,
  freeInBeta = false,
}: {
  cardKeys: boolean;
  freeInBeta?: boolean;
}): MiddlewareHandler<AppEnv> {
  return (c, next) => (mayIdentify(c) ? keyedCall(c, next, cardKeys, freeInBeta) : next());
}

async function keyedCall(c: Context<AppEnv>, next: Next, cardKeys: boolean, freeInBeta: boolean) {
  const id = await identify(c, cardKeys);
  if (!id) return next();
  if ("invalid" in id) return id.invalid;
  const fp = await fingerprint(c, id.principal);
  if (!fp) return next();
  if (freeInBeta && requestConfig(c).freeBeta) return freeInBetaCall(c, next, id, fp);
  const requestId = c.get("requestId");
  const db = c.env.DB;
  // Taken (or read) before anything is verified or charged: if D1 cannot answer, the call cannot
  // be kept from running twice, so it does not run now, and the same request may be sent again.
  let unknownKey = false;
  let claimed = false;
  let row: Awaited<ReturnType<typeof current>> = null;
  try {
    // A card key that does not exist pays for nothing (the gate answers 401 before x402 could
    // pay; in free beta nothing is paid) and has no stored answer, so it claims nothing: read
    // first, its refusal writes nothing. A claim and its release are two D1 writes, and a fresh random key each time
    // escapes the card key's rate limit (RL_PAYER). Unknown now is unknown at the gate: keys
    // are never deleted, and a new one is random.
    unknownKey = id.keyHash !== undefined && !(await findKey(db, id.keyHash));
    if (!unknownKey) {
      claimed = await claim(db, id.key, fp, requestId);
      if (!claimed) row = await current(db, id.key);
    }
  } catch (e) {
    logWriteFailure(requestId, "idempotency key claim", e, 1);
    // D1 can commit the claim and then fail to answer ("Network connection lost"): a claim left
    // `running` under this request would hold every retry at 409 for ABANDONED_AFTER_MS.
    claimed = await ownsClaimAfterError(
      c,
      e,
      "idempotency key release",
      async () => (await current(db, id.key))?.request_id === requestId,
      () => release(db, id.key, requestId),
    );
    if (!claimed) return paymentsUnavailable(c, id.keyHash === undefined ? "x402" : "card");
  }
  if (unknownKey) return next();
  if (!claimed) {
    if (!row)
      return detail(
        c,
        409,
        "This idempotency key is being released; retry.",
        { reason: "idempotent_request_in_flight" },
        { "Retry-After": "1" },
      );
    const mismatch = differs(row, fp);
    // A contract wallet's signature is proven on chain before anything about the stored call
    // (its answer, its request, whether it still runs) is told to this request. Only a request
    // the stored answer could answer (its payer, its request) is worth the chain's two reads:
    // any other is refused without them, told only that the id is taken. Were every one proven,
    // one paid call's id would let anyone have the RPC asked twice per free request for the
    // window's 24 h, naming any contract in `from`. What is left (the stored call's own request
    // with a signature nobody made) is held to a per-IP budget (payerProofQuota).
    if (id.proveOnChain) {
      if (mismatch) {
        return detail(
          c,
          409,
          "This payment identifier was already used for another request. Use a new one for a different request.",
          { reason: "idempotency_key_mismatch" },
        );
      }
      // Still running: told so without a proof (and without its request id), as the request
      // already named the stored call's payer and request. The answer says retry in 2 s, so a
      // wallet polling a long call would otherwise spend the proofs' budget within a minute.
      if (row.status === "running") return inFlight(c);
      const refusal = (await payerProofQuota(c)) ?? (await unproven(c, id.proveOnChain));
      if (refusal) return refusal;
    }
    if (mismatch) {
      return detail(
        c,
        409,
        `This ${id.kind === "x402" ? "payment identifier" : "Idempotency-Key"} was already used for ${mismatch}. Use a new one for a different request.`,
        { reason: "idempotency_key_mismatch", request_id: row.request_id },
      );
    }
    if (row.status === "running") return inFlight(c, row.request_id);
    return replay(c, row);
  }
  // A call the buyer can retry under a key outlasts the buyer's connection: an agent that times
  // out mid-call cancels the request's pending work (the handler's fetches, the settlement, the
  // store below) unless waitUntil holds it. Held, the call finishes, is paid once and stored, and
  // the retry gets it; cut, an x402 settlement could land with no answer stored to give back.
  // Within Cloudflare's 30 s after the disconnect (after-response.ts).
  await outlastingClient(
    c,
    (async () => {
      const free = () =>
        writeOrRetryAfter(c, "idempotency key release", () => release(db, id.key, requestId));
      try {
        await next();
      } catch (e) {
        await free();
        throw e;
      }
      // Paid is judged by what paid, not by which key the request carried: a card key out of
      // credits lets x402 pay under its Idempotency-Key (gate.ts), and a card credit pays a call
      // whose x402 payment id keyed it. Either way the retry looks for the answer under this key.
      const paid =
        c.res.status >= 200 &&
        c.res.status < 300 &&
        (Boolean(c.get("cardCredit")) || c.res.headers.has("payment-response"));
      if (!paid) {
        // A release D1 refuses is retried after the answer, which stays the call's own; until
        // then a retry gets the 409 in flight.
        await free();
        return;
      }
      const bytes = await c.res.arrayBuffer();
      c.res = new Response(bytes, c.res);
      // The buyer has paid for this answer: a failed write must not turn it into a 500. It is
      // retried after the answer; while the key stays `running`, a retry gets 409 in flight.
      const res = c.res;
      await writeOrRetryAfter(c, "idempotent answer", () => store(c, id.key, requestId, res, bytes));
    })(),
  );
}

/**
 * A keyed call of a route that is free in beta, while it is: the answer a call paid before the beta
 * began stored under its key is given back as at any other time (its payer proven as always; a
 * contract wallet's is not asked of the chain, its call just runs), and anything else runs,
 * unpaid, holding no key. One D1 read; one D1 cannot answer just lets the free call run.
 */
async function freeInBetaCall(
  c: Context<AppEnv>,
  next: () => Promise<void>,
  id: { key: string; proveOnChain?: unknown },
  fp: Keyed,
) {
  const row = id.proveOnChain ? null : await current(c.env.DB, id.key).catch(() => null);
  if (row?.status === "done" && !differs(row, fp)) return replay(c, row);
  return next();
}

/** A retry of a call still running; its request id only to a request whose payer is proven. */
const inFlight = (c: Context<AppEnv>, requestId?: string) =>
  detail(
    c,
    409,
    "A request with this idempotency key is still running. Retry after a moment to get its answer; nothing more is charged.",
    { reason: "idempotent_request_in_flight", ...(requestId ? { request_id: requestId } : {}) },
    { "Retry-After": String(IN_FLIGHT_RETRY_AFTER_SECONDS) },
  );

/** The answer for a contract-wallet payment the chain does not confirm, or cannot be asked about. */
async function unproven(c: Context<AppEnv>, prove: () => Promise<boolean>): Promise<Response | undefined> {
  let proven: boolean;
  try {
    proven = await prove();
  } catch (e) {
    if (e instanceof RpcUrlUnusable) {
      // The operator's to fix, said by the var's name (e.message never holds its value).
      console.warn(
        JSON.stringify({
          level: "warn",
          msg: "payer check on chain not made",
          request_id: c.get("requestId"),
          reason: e.message,
        }),
      );
    } else {
      console.error(
        redactSecrets(
          JSON.stringify({
            level: "error",
            request_id: c.get("requestId"),
            error: `payer check on chain: ${e}`,
          }),
          c.env,
        ),
      );
    }
    // A retry of a stored call that cannot be checked now: nothing ran, so the call log counts it
    // as a replay (stats/record.ts), not as the skill's failure once per retry.
    c.set("storedCallRetry", true);
    return detail(
      c,
      503,
      "This payment's signature (a contract wallet's) could not be checked on chain just now. Retry shortly with the same payment identifier; nothing was charged.",
      { reason: "payer_check_unavailable" },
      { "Retry-After": String(IN_FLIGHT_RETRY_AFTER_SECONDS) },
    );
  }
  if (proven) return undefined;
  return detail(
    c,
    409,
    "This payment identifier is already in use, and this payment's signature is not one its payer made (checked on chain). Nothing was charged.",
    { reason: "payment_signature_unproven" },
  );
}

function differs(row: Fingerprint, fp: Keyed): string | undefined {
  if (row.principal !== fp.principal) return "another payer";
  // A row's path as written holds no `#query-sha256:` (a query never holds a `#`): see Keyed.
  const samePath = row.path === fp.path || row.path === fp.pathAsWritten;
  if (row.method !== fp.method || !samePath) return `${row.method} ${row.path}`;
  if (row.body_sha256 !== fp.body_sha256) return `${row.method} ${row.path} with a different body`;
  return undefined;
}
