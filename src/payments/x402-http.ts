import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
} from "@x402/core/http";
import type { HTTPRequestContext, x402HTTPResourceServer } from "@x402/core/server";
import type { PaymentPayload, SettleResponse } from "@x402/core/types";
import { safeBase64Decode } from "@x402/core/utils";
import type { Context, MiddlewareHandler, Next } from "hono";
import type { AppEnv, Settled, VerifiedPayment } from "../env";
import { MAX_JSON_DEPTH, scanJson } from "../http/json-text";
import { isMcpRequest } from "../http/mcp-request";
import { FACILITATOR_RETRY_AFTER_S, SETTLEMENT_UNCONFIRMED, settlementOutcome } from "./settlement";
import { GateAdapter } from "./x402-adapter";
import { PAYMENT_META, V1_PAYMENT_META } from "./x402-mcp-meta";
import { validBeforeRefusal } from "./x402-terms";
import { HTTP_FIELDS, liftV1Payment, type PaymentFields, v1PaymentResponse } from "./x402-v1";

/** An MCP payer's payment fields, named in what the gate tells it (mcp/call.ts sends them on). */
const MCP_FIELDS: PaymentFields = { v1: `_meta["${V1_PAYMENT_META}"]`, v2: `_meta["${PAYMENT_META}"]` };

/**
 * The x402 exchange of one HTTP request, on @x402/core's framework-free HTTP server.
 *
 * Why not @x402/hono's middleware (used until 2.7.1-r10): it reads the payment from the request's
 * own headers, so it cannot take a v1 `X-PAYMENT` lifted into v2 form (x402-v1.ts), cannot check
 * that a payment names the route it pays for before verifying it, and settles only after the
 * handler, while a partner call that costs us money must settle the buyer first
 * (`settleEarly`). The steps are the library's: build requirements, match, validate extension
 * echoes, verify, run, settle; only the order and these checks are ours. Only the `exact` scheme
 * (the authorization flow: verify before the handler, settle after) is registered, so no
 * before-handler settlement or cancellation hook applies.
 */

/**
 * A payment refused before the facilitator saw it. It still carries an offer to sign again: the
 * given PAYMENT-REQUIRED (v2 clients; its `error` is the refusal's reason: refusalHeader), and the
 * route's own offer in the body (`x402Version`, `accepts`: what v1 clients read), with the
 * refusal's own `error` and `reason`.
 */
function refuse(c: Context<AppEnv>, reason: string, message: string, required?: string, offerBody?: string) {
  if (required) c.header("PAYMENT-REQUIRED", required);
  let offer: Record<string, unknown> = {};
  try {
    offer = offerBody ? (JSON.parse(offerBody) as Record<string, unknown>) : {};
  } catch {}
  return c.json({ ...offer, error: `Payment rejected: ${message}`, reason }, 402);
}

/**
 * What a v2 payment header decodes to: a PaymentPayload at all (the library would read anything
 * else as none), and of version 2. @x402/core's server matches a version 1 payload on scheme and
 * network only, so the payer's own `accepted` (another asset, amount 1) passed unchecked into the
 * claim and the ledger. v1 comes in through `X-PAYMENT` only, lifted against the route's own
 * requirements (x402-v1.ts).
 */
function readPayment(
  header: string,
): { kind: "payment"; payment: PaymentPayload } | { kind: "not_a_payment" | "not_v2" } {
  try {
    const p = decodePaymentSignatureHeader(header) as Partial<PaymentPayload> | null;
    if (typeof p !== "object" || p === null || typeof p.payload !== "object" || p.payload === null)
      return { kind: "not_a_payment" };
    return p.x402Version === 2 ? { kind: "payment", payment: p as PaymentPayload } : { kind: "not_v2" };
  } catch {
    return { kind: "not_a_payment" };
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT256 = /^\d{1,78}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})+$/;

/**
 * What is wrong with a payload's EIP-3009 authorization, if it has one and it is not one: the
 * fields as transferWithAuthorization takes them (addresses, decimal integers, a 32-byte nonce, a
 * hex signature), and a validBefore within the offer's window (x402-terms.ts). A payload without
 * an authorization (another method) is left to the gate.
 */
function malformedAuthorization(payload: unknown): { reason: string; message: string } | undefined {
  const { authorization: a, signature } = (payload ?? {}) as { authorization?: unknown; signature?: unknown };
  if (a === undefined) return undefined;
  const bad = (message: string) => ({ reason: "invalid_payment_payload", message });
  if (typeof a !== "object" || a === null) return bad("payload.authorization is not an object");
  const f = a as Record<string, unknown>;
  const window = validBeforeRefusal(f.validBefore, Math.floor(Date.now() / 1000));
  if (window) return { reason: "invalid_valid_before", message: window };
  for (const k of ["from", "to"])
    if (typeof f[k] !== "string" || !ADDRESS.test(f[k] as string))
      return bad(`authorization.${k} is not an address`);
  for (const k of ["value", "validAfter"])
    if (typeof f[k] !== "string" || !UINT256.test(f[k] as string))
      return bad(`authorization.${k} is not a decimal integer string (atomic units, Unix seconds)`);
  if (typeof f.nonce !== "string" || !BYTES32.test(f.nonce))
    return bad("authorization.nonce is not 32 bytes of hex");
  if (typeof signature !== "string" || !HEX_BYTES.test(signature))
    return bad("payload.signature is not hex bytes");
  return undefined;
}

/**
 * Whether a payment header's JSON nests deeper than a request body may (MAX_JSON_DEPTH). JSON.parse
 * takes any depth, but @x402/core then walks the payment recursively (matching `accepted`, copying
 * and re-encoding it): ~10,000 levels in `extensions`, `payload` or `accepted.extra` (a 28 KB
 * header) overflowed the stack there, answered as "Payment rejected: Maximum call stack size
 * exceeded", and a v1 payload lifted into v2 form was a 500. No payment needs more than a few
 * levels. A header that is not base64 is left to the readers below, which refuse it as such.
 */
function nestedTooDeep(header: string): boolean {
  let text: string;
  try {
    text = safeBase64Decode(header);
  } catch {
    return false;
  }
  return scanJson(text).depth > MAX_JSON_DEPTH;
}

/** An answer of the x402 server for this request only (a refused payment, a non-402 refusal). */
function sendAnswer(c: Context<AppEnv>, response: UnpaidAnswer) {
  for (const [k, v] of Object.entries(response.headers)) c.header(k, v);
  if (response.isHtml) return c.html(String(response.body ?? ""), response.status as 402);
  return c.json((response.body ?? {}) as object, response.status as 402);
}

/** An answer of the x402 server that is the same for every request that reaches it. */
interface UnpaidAnswer {
  status: number;
  headers: Record<string, string>;
  body?: unknown;
  isHtml?: boolean;
}

/** The unpaid answer as it is sent: body text and headers, built once. */
interface ReadyAnswer {
  status: 402;
  body: string;
  /**
   * `body` as UTF-8, encoded once: a string body is encoded again for every Response (V8's
   * WriteUtf8, ~50 kIr of a 3.4 KB offer; docs/PERFORMANCE.md, stop 40); bytes are copied.
   */
  bytes: Uint8Array<ArrayBuffer>;
  headers: Record<string, string>;
  /** A JSON offer (explain402 may add a card-key note), not the HTML page browsers get. */
  offer: boolean;
  until: number;
  /** Its PAYMENT-REQUIRED as each refusal sends it, by reason (refusalHeader). */
  refusals: Map<string, string>;
}

/**
 * How many refusal headers one cached offer keeps: our reasons and the facilitator's settlement
 * codes are a few dozen; past it a header is built per refusal, so words a facilitator chose
 * cannot grow the map.
 */
const MAX_REFUSAL_HEADERS = 64;

/**
 * The offer's PAYMENT-REQUIRED for a refused payment: the same offer, with the refusal's machine
 * reason as its `error`, as @x402/core's server writes a failed verification's (the facilitator's
 * invalidReason) and our resource_mismatch. x402 v2 carries the protocol in headers, and a client
 * that reads only this one (@x402/core's x402HTTPClient takes the failure from its `error`) could
 * not tell a replayed or malformed payment from none while it said "Payment required". Built once
 * per cached offer and reason: a flood of replays costs a map lookup, as unpaid requests do.
 */
function refusalHeader(offer: ReadyAnswer, reason: string): string | undefined {
  const unpaid = offer.headers["payment-required"];
  if (!unpaid) return undefined;
  let header = offer.refusals.get(reason);
  if (header === undefined) {
    header = encodePaymentRequiredHeader({ ...decodePaymentRequiredHeader(unpaid), error: reason });
    if (offer.refusals.size < MAX_REFUSAL_HEADERS) offer.refusals.set(reason, header);
  }
  return header;
}

// A bound on the cached offers: routes x price tiers x (browser or not) stay far below it; past
// it the map starts over rather than grow with request-chosen keys.
const MAX_UNPAID_ANSWERS = 512;
/**
 * How long one cached 402 is served: it carries signed offers (offer-receipt extension) valid for
 * 300 s, so it is rebuilt well within that, and a client always gets an offer it can still use.
 */
const UNPAID_ANSWER_TTL_MS = 60_000;

export interface GateOptions {
  /**
   * The JSON body an unpaid 402 is sent with, from its encoded PAYMENT-REQUIRED header (the v1
   * offer and a readable error: x402-gate.ts). Applied once per cached answer, so the unpaid path
   * sends a ready body instead of building a Response and re-wrapping it in a later middleware
   * (the 402 profile showed both copies, docs/PERFORMANCE.md).
   */
  explainUnpaid?: (header: string, path: string) => string | undefined;
}

export function x402HttpGate(
  httpServer: x402HTTPResourceServer,
  opts: GateOptions = {},
): MiddlewareHandler<AppEnv> {
  const server = httpServer.server;
  // The unpaid 402 of a route (requirements, bazaar extension, encoded PAYMENT-REQUIRED) depends
  // only on this configuration, the route, its price and whether a browser asks; built once per
  // gate (one gate per isolate and configuration, x402-gate.ts) instead of on every request.
  const unpaid = new Map<string, ReadyAnswer>();
  const ready = (answer: UnpaidAnswer, path: string): ReadyAnswer => {
    // One spelling per header name, so the content type below replaces the library's.
    const headers = Object.fromEntries(Object.entries(answer.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const explained = answer.isHtml
      ? undefined
      : opts.explainUnpaid?.(headers["payment-required"] ?? "", path);
    headers["content-type"] = answer.isHtml ? "text/html; charset=UTF-8" : "application/json";
    const body = answer.isHtml ? String(answer.body ?? "") : (explained ?? JSON.stringify(answer.body ?? {}));
    return {
      status: 402,
      body,
      bytes: new TextEncoder().encode(body) as Uint8Array<ArrayBuffer>,
      headers,
      offer: !answer.isHtml,
      until: Date.now() + UNPAID_ANSWER_TTL_MS,
      refusals: new Map(),
    };
  };
  const send = (c: Context<AppEnv>, answer: ReadyAnswer) => {
    if (answer.offer) c.set("x402UnpaidOffer", true);
    return c.body(answer.bytes, answer.status, answer.headers);
  };
  /** A price that depends on the request (the refinery recipe's body tiers, or several offers). */
  const pricedPerRequest = (accepts: unknown): boolean =>
    Array.isArray(accepts) || typeof (accepts as { price?: unknown }).price === "function";
  /**
   * The cache key of a route's unpaid answer: the route, its price ("fixed", or the price tiers of
   * a body-priced route) and whether a browser asks (the library answers it an HTML page). The
   * shortcut below and the full gate's unpaidAnswer both use it, so they cannot drift apart.
   */
  const unpaidKey = (c: Context<AppEnv>, method: string, path: string, price: string): string => {
    const browser =
      (c.req.header("accept") ?? "").includes("text/html") &&
      (c.req.header("user-agent") ?? "").includes("Mozilla");
    return `${method} ${path}|${price}|${browser ? "html" : "json"}`;
  };
  /**
   * The unpaid call's cached answer, found without an async step, a request probe or a closure:
   * every crawler's and every first call's path. Undefined when anything else may apply (a
   * payment header, a price that depends on the body, no answer cached or a stale one); the full
   * gate below then answers, the same way it always did.
   */
  const cachedUnpaid = (c: Context<AppEnv>, method: string, path: string): ReadyAnswer | undefined => {
    if (c.req.header("payment-signature") || c.req.header("x-payment")) return undefined;
    const route = httpServer.routes[`${method} ${path}` as keyof typeof httpServer.routes] as
      | { accepts: unknown }
      | undefined;
    if (!route) return undefined;
    if (pricedPerRequest(route.accepts)) return undefined;
    const cached = unpaid.get(unpaidKey(c, method, path, "fixed"));
    return cached && cached.until > Date.now() ? cached : undefined;
  };
  return (c, next) => {
    const cached = cachedUnpaid(c, c.req.method, c.req.path);
    return cached ? Promise.resolve(send(c, cached)) : gate(c, next);
  };
  async function gate(c: Context<AppEnv>, next: Next) {
    const method = c.req.method;
    const path = c.req.path;
    const route = httpServer.routes[`${method} ${path}` as keyof typeof httpServer.routes] as
      | { resource?: string; accepts: unknown; description?: string; mimeType?: string }
      | undefined;
    let header = c.req.header("payment-signature") || undefined;
    let v1 = false;
    const v1Header = header ? undefined : c.req.header("x-payment");
    // A route of the table is priced (the table's keys are exact paths); no pattern match needed.
    if (!route) return next();
    const probe: HTTPRequestContext = { adapter: new GateAdapter(c, header), path, method };
    const resource = {
      url: route.resource ?? c.req.url,
      description: route.description ?? "",
      mimeType: route.mimeType ?? "application/json",
    };

    /** The route's unpaid answer for this request: cached, or built by the library and cached. */
    const unpaidAnswer = async (): Promise<ReadyAnswer | UnpaidAnswer | undefined> => {
      const accepts = route.accepts as { price?: unknown } | unknown[];
      // A price that depends on the body (the refinery recipe) is part of the key: one answer per
      // price tier. Anything else the library would vary on is fixed per route and configuration.
      let price = "fixed";
      if (pricedPerRequest(accepts)) {
        const requirements = await server.buildPaymentRequirementsFromOptions(
          (Array.isArray(accepts) ? accepts : [accepts]) as Parameters<
            typeof server.buildPaymentRequirementsFromOptions
          >[0],
          probe,
        );
        price = requirements.map((r) => `${r.network}:${r.asset}:${r.amount}`).join(",");
      }
      const key = unpaidKey(c, method, path, price);
      const cached = unpaid.get(key);
      if (cached && cached.until > Date.now()) return cached;
      const result = await httpServer.processHTTPRequest(
        { adapter: new GateAdapter(c, undefined), path, method },
        undefined,
      );
      if (result.type !== "payment-error") return undefined;
      if (result.response.status !== 402) return result.response;
      const answer = ready(result.response, path);
      if (unpaid.size >= MAX_UNPAID_ANSWERS) unpaid.clear();
      unpaid.set(key, answer);
      return answer;
    };
    /** The route's cached unpaid 402, when it is an offer (not the browser's HTML page). */
    const offerAnswer = async () => {
      const answer = await unpaidAnswer();
      return answer && "offer" in answer && answer.offer ? answer : undefined;
    };
    /** A refusal before the facilitator, with the route's offer to sign again. */
    const refuseWithOffer = async (reason: string, message: string) => {
      const offer = await offerAnswer();
      return refuse(c, reason, message, offer && refusalHeader(offer, reason), offer?.body);
    };

    if (!header && !v1Header) {
      const answer = await unpaidAnswer();
      if (!answer) return next();
      return "offer" in answer ? send(c, answer) : sendAnswer(c, answer);
    }

    // An MCP call's payment fields are `_meta` keys (mcp/call.ts sends `_meta[PAYMENT_META]` on
    // here as PAYMENT-SIGNATURE, x402-mcp's v1 `_meta[V1_PAYMENT_META]` as X-PAYMENT): a refusal
    // names the field its caller wrote, not a header it never saw.
    const mcp = isMcpRequest(c.req.raw);
    const fields = mcp ? MCP_FIELDS : HTTP_FIELDS;
    const field = header ? fields.v2 : fields.v1;

    // Refused as no payment (it is none), before anything decodes it for good: see nestedTooDeep.
    if (nestedTooDeep(header ?? v1Header ?? "")) {
      return refuseWithOffer(
        "invalid_payment_header",
        `${field} is not an x402 PaymentPayload: its JSON is nested deeper than ${MAX_JSON_DEPTH} levels`,
      );
    }

    // A header that is not a payment at all would be read by the library as no payment, and
    // answered as a plain "payment required": the client could not tell its encoding bug apart.
    const read = header ? readPayment(header) : undefined;
    if (read?.kind === "not_a_payment") {
      return refuseWithOffer(
        "invalid_payment_header",
        `${field} is not an x402 v2 PaymentPayload (${mcp ? "an object, or its base64-encoded JSON," : "base64-encoded JSON"} with x402Version, resource (the PaymentRequired's), accepted and payload)`,
      );
    }
    if (read?.kind === "not_v2") {
      return refuseWithOffer(
        "invalid_x402_version",
        mcp
          ? `${field} takes x402 v2 payloads only: sign the PaymentRequired in this result (x402Version 2) and send it there, or send an x402 v1 X-PAYMENT value in ${MCP_FIELDS.v1}`
          : "PAYMENT-SIGNATURE must carry an x402Version 2 payload; send v1 payloads in X-PAYMENT",
      );
    }
    let signed = read?.kind === "payment" ? read.payment : undefined;

    if (v1Header) {
      // The route's own requirements, built exactly as the 402 builds them (dynamic prices too).
      const [requirements] = await server.buildPaymentRequirementsFromOptions(
        [route.accepts as Parameters<typeof server.buildPaymentRequirementsFromOptions>[0][number]],
        probe,
      );
      if (!requirements) return next();
      const lifted = liftV1Payment(v1Header, requirements, resource, fields);
      if (!lifted.ok) return refuseWithOffer(lifted.reason, lifted.message);
      header = lifted.header;
      signed = lifted.payload;
      v1 = true;
    }

    // An EIP-3009 authorization the facilitator cannot even read (a value in dollars, a short
    // nonce) made its verify throw, which reads as "no verdict" (a 503 to retry as is, forever):
    // it is the payer's to fix, so it is refused here with the offer.
    const malformed = signed ? malformedAuthorization(signed.payload) : undefined;
    if (malformed) return refuseWithOffer(malformed.reason, `${malformed.message}. Sign a new one.`);

    const context: HTTPRequestContext = {
      adapter: new GateAdapter(c, header),
      path,
      method,
      paymentHeader: header,
    };
    let result: Awaited<ReturnType<typeof httpServer.processHTTPRequest>>;
    try {
      result = await httpServer.processHTTPRequest(context, undefined);
    } catch (e) {
      // The facilitator gave no verdict on the payment (x402-gate.ts OutageAwareFacilitatorClient):
      // nothing was claimed or charged, and the same payment may be sent again. The 503 the
      // guides promise for payments that are temporarily unavailable. Its text quotes the
      // facilitator's error page, redacted by the client (x402-gate.ts) as its keyed path may be in it.
      c.header("Retry-After", String(FACILITATOR_RETRY_AFTER_S));
      return c.json(
        {
          detail: `The payment facilitator did not answer: ${e instanceof Error ? e.message : String(e)}. Nothing was charged; retry the same payment later (if this persists, sign a new one).`,
          reason: "facilitator_unavailable",
        },
        503,
      );
    }
    if (result.type === "no-payment-required") return next();
    if (result.type === "payment-error") return sendAnswer(c, result.response);

    const { paymentPayload, paymentRequirements, declaredExtensions } = result;
    // A payment that names a resource names the one it was made for: a payment made for another
    // route at the same price does not pay for this one (issue 19.4). `resource` is optional in a
    // v2 PaymentPayload (specification §5.2.2), so one without it is taken as made for the route
    // it was sent to: the EIP-3009 signature covers no resource either way (whoever holds a
    // payload can rewrite it), and the nonce claim is what stops a second use.
    const named = paymentPayload.resource as { url?: unknown } | null | undefined;
    if (!v1 && named != null && named.url !== resource.url) {
      const required = await server.createPaymentRequiredResponse(
        [paymentRequirements],
        resource,
        "resource_mismatch",
        declaredExtensions,
      );
      // The offer to sign again for this route, in both forms, as every refusal carries it.
      const header = encodePaymentRequiredHeader(required);
      return refuse(
        c,
        "resource_mismatch",
        `this payment was made for ${typeof named.url === "string" ? named.url : "a resource without a url"}, not ${resource.url}`,
        header,
        opts.explainUnpaid?.(header, path),
      );
    }

    const payment: VerifiedPayment = {
      payload: paymentPayload,
      requirements: paymentRequirements,
      extensions: declaredExtensions,
      v1,
      settle: async () => {
        payment.settlement ??= settleOnce(httpServer, payment, context);
        return (await payment.settlement).result;
      },
      refuse: refuseWithOffer,
    };
    c.set("x402Verified", true);
    c.set("x402Payment", payment);
    await next();

    // A failed call is never settled, unless a handler settled early (a partner call that costs
    // us money, settlement.ts): then its answer, success or error, carries that settlement.
    if (!payment.settlement && c.res.status >= 400) return;
    const res = c.res;
    const body = await res.arrayBuffer();
    await payment.settle();
    const settled = await (payment.settlement as Promise<Settled>);
    const headers = new Headers(res.headers);
    for (const [k, v] of Object.entries(settled.headers)) headers.set(k, v);
    // A v1 client (x402-fetch, x402-axios) reads the settlement in X-PAYMENT-RESPONSE only, a
    // failed one too (transports-v1/http.md): the twin of every PAYMENT-RESPONSE a v1 call gets.
    if (v1 && headers.has("payment-response")) {
      headers.set("X-PAYMENT-RESPONSE", v1PaymentResponse(settled.result));
    }
    const outcome = settlementOutcome(settled.result);
    if (outcome === "unconfirmed" && mcp) {
      // recordPayment (settlement.ts) answers it 502 settlement_unconfirmed. An MCP settlement
      // failure must still carry the PaymentRequired (transports-v2/mcp.md), which mcp/call.ts
      // reads from this header; HTTP callers get the 502 as before.
      const offer = await offerAnswer();
      const required = offer && refusalHeader(offer, SETTLEMENT_UNCONFIRMED);
      if (required) headers.set("PAYMENT-REQUIRED", required);
    }
    if (settled.result.success) {
      headers.set("Cache-Control", "private, no-store");
      c.res = new Response(body, { status: res.status, headers });
      return;
    }
    // Never the paid content on a failed settlement; recordPayment (settlement.ts) decides from
    // PAYMENT-RESPONSE whether the failure is definite (402) or unconfirmed (502). A definite one
    // moved nothing, so its 402 is an offer to sign again, as every x402 refusal is: the route's
    // PAYMENT-REQUIRED (its `error` the settlement's reason), and its offer in the body beside the
    // settlement's own error and reason.
    let failure = settled.failureBody as Record<string, unknown> | undefined;
    if (outcome === "failed") {
      const offer = await offerAnswer();
      if (offer) {
        const reason = failure?.reason ?? settled.result.errorReason;
        headers.set("PAYMENT-REQUIRED", refusalHeader(offer, String(reason ?? "settlement_failed")) ?? "");
        failure = { ...(JSON.parse(offer.body) as Record<string, unknown>), ...failure };
      }
    }
    headers.set("content-type", "application/json");
    c.res = new Response(JSON.stringify(failure), { status: 402, headers });
  }
}

async function settleOnce(
  httpServer: x402HTTPResourceServer,
  payment: VerifiedPayment,
  context: HTTPRequestContext,
): Promise<Settled> {
  try {
    const s = await httpServer.processSettlement(payment.payload, payment.requirements, payment.extensions, {
      request: context,
    });
    const result: SettleResponse = {
      success: s.success,
      transaction: s.transaction,
      network: s.network,
      ...(s.payer ? { payer: s.payer } : {}),
      ...(s.amount ? { amount: s.amount } : {}),
      ...(s.errorReason ? { errorReason: s.errorReason } : {}),
      ...(s.errorMessage ? { errorMessage: s.errorMessage } : {}),
    };
    return { result, headers: s.headers, failureBody: s.success ? undefined : s.response.body };
  } catch (e) {
    // No answer from the facilitator at all: no PAYMENT-RESPONSE, so the outcome is unconfirmed.
    const reason = `facilitator error: ${e instanceof Error ? e.message : String(e)}`;
    return {
      result: { success: false, errorReason: reason, transaction: "", network: payment.requirements.network },
      headers: {},
      failureBody: { error: `Settlement failed: ${reason}`, reason: "facilitator_error" },
    };
  }
}
