import type { CallToolResult } from "@modelcontextprotocol/server";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { parseKeepingIntegers } from "../http/exact-integers";
import { scanJson } from "../http/json-text";
import { markMcpRequest } from "../http/mcp-request";
import { isRecord } from "../is-record";
import { IDEMPOTENCY_KEY_MESSAGE, isIdempotencyKey } from "../payments/idempotency-key";
import { REPLAY_HEADER } from "../payments/idempotent-results";
import { RECEIPT_HEADER } from "../payments/receipts";
import { SETTLEMENT_UNCONFIRMED } from "../payments/settlement";
import { settlementInV1Terms } from "../payments/x402-v1";
import { RAW_ARGUMENTS, RawArguments } from "./arguments";
import { cardKeyUse } from "./card-key";
import {
  CREDITS_META,
  IDEMPOTENCY_KEY_META,
  IDEMPOTENT_REPLAY_META,
  MCP_TEXT_COPY_MAX,
  PAYMENT_ERROR_META,
  PAYMENT_META,
  PAYMENT_RESPONSE_META,
  RECEIPT_META,
  RECEIPT_NOTE_META,
  REQUEST_ID_META,
  V1_PAYMENT_META,
  V1_PAYMENT_RESPONSE_META,
} from "./limits";
import type { McpTool } from "./tools";

/** Sends one request through the whole app (the same chain as an HTTP client's call). */
export type Dispatch = (req: Request) => Promise<Response>;

export interface CallContext {
  /** Origin of the MCP request: the internal call goes to the same host, so the price and the
   * x402 resource URL are those of the HTTP route. */
  origin: string;
  /** The MCP request's `Authorization`, forwarded only when it is a card-credit key that pays the
   * tool (card-key.ts). */
  authorization: string | undefined;
  /** Where the card key's skill is read (card-key.ts). */
  db: D1Database;
  /** FREE_BETA: skill tools answer unpaid (no card key is read), and the instructions say so. */
  freeBeta?: boolean;
  /**
   * The MCP client's IP (`CF-Connecting-IP`, set by Cloudflare), carried to the internal request
   * so its calls count against that client's rate limits, not one bucket shared by every client.
   */
  clientIp: string | undefined;
  dispatch: Dispatch;
}

const toolError = (structured: Record<string, unknown>, text: string): CallToolResult => ({
  isError: true,
  structuredContent: structured,
  content: [{ type: "text", text }],
});

/** A header value that decodes to no payment payload (the gate answers invalid_payment_header). */
const NOT_A_PAYMENT = "not-a-payment";

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * An encoded payment whose bytes are Latin-1, re-encoded as the UTF-8 the gate reads. Cloudflare
 * Agents' withX402Client encodes with `btoa(JSON.stringify(payload))`, one byte per character: the
 * extensions it echoes from our offer (slugify's bazaar example, "Crème Brûlée") then decoded to
 * U+FFFD and the payment was refused as extension_echo_mismatch. Valid UTF-8 (every other encoder,
 * and any payload that is ASCII) and anything that does not decode is passed on as it came.
 */
function asUtf8(header: string): string {
  let binary: string;
  try {
    binary = atob(header);
  } catch {
    return header;
  }
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  try {
    STRICT_UTF8.decode(bytes);
    return header;
  } catch {
    // atob's characters are the bytes themselves: as text, exactly what btoa was given.
    try {
      return encodePaymentSignatureHeader(JSON.parse(binary) as PaymentPayload);
    } catch {
      return header;
    }
  }
}

/**
 * The payment payload from `_meta`: the object itself, or an already encoded header value. Any
 * other value (a number, an array, true) is sent as one the gate reads as no payment payload:
 * the caller gets invalid_payment_header with the offer to sign, as a string that is none does,
 * never a bare refusal without the PaymentRequired (transports-v2/mcp.md, "Payment Invalid").
 */
function paymentHeader(payment: unknown): string | undefined {
  if (payment === undefined || payment === null) return undefined;
  if (typeof payment === "string") {
    // Line breaks and spaces of a wrapped base64 string are dropped, as base64 decoders do. What
    // is left must fit in a header: anything else is sent as a value the gate reads as no payment
    // payload, not an internal error from the Headers object.
    const compact = payment.replace(/\s+/g, "");
    return /^[\x21-\x7e]*$/.test(compact) ? asUtf8(compact) : NOT_A_PAYMENT;
  }
  if (typeof payment !== "object" || Array.isArray(payment)) return NOT_A_PAYMENT;
  try {
    return encodePaymentSignatureHeader(payment as PaymentPayload);
  } catch {
    return NOT_A_PAYMENT;
  }
}

/**
 * The call's x402 payment, as the header the HTTP route reads it in: `_meta["x402/payment"]` (v2)
 * as PAYMENT-SIGNATURE, or Vercel x402-mcp's `_meta["x402.payment"]` (a v1 header value) as
 * X-PAYMENT, so the gate lifts and refuses it exactly as an HTTP v1 client's (x402-v1.ts). When
 * both are sent the v2 one is the payment and the v1 one is never read: it reaches no gate, so it
 * is neither claimed nor charged, and a call never goes with two payments. An empty v2 value (or
 * one of spaces only) is no payment, as an empty header is: the v1 one beside it then pays.
 */
function callPayment(meta: Record<string, unknown> | undefined): Payment | undefined {
  const v2 = paymentHeader(meta?.[PAYMENT_META]);
  if (v2) return { header: "payment-signature", value: v2 };
  const v1 = paymentHeader(meta?.[V1_PAYMENT_META]);
  return v1 === undefined ? undefined : { header: "x-payment", value: v1 };
}

interface Payment {
  header: "payment-signature" | "x-payment";
  value: string;
}

/**
 * A GET service's arguments (its path parameters, sent as a query string), parsed from the text the
 * client wrote when the router kept it (routes/mcp.ts).
 */
function queryFields(args: Record<string, unknown>): Record<string, unknown> {
  const raw = rawArguments(args);
  return raw === undefined ? args : (parseExact(raw) as Record<string, unknown>);
}

/** The arguments' text as the client wrote it, when the router kept it (taken: read once). */
const rawArguments = (args: Record<string, unknown>) =>
  args[RAW_ARGUMENTS] instanceof RawArguments ? args[RAW_ARGUMENTS].take() : undefined;

/**
 * An argument a GET service does not take, refused before anything is charged. Its try route reads
 * only its path parameters, so a model's made-up `currency` was dropped and the call charged for
 * an answer it did not ask for. The tool's schema cannot say so itself: an `additionalProperties:
 * false` there made google-genai refuse every tool (tool-calling-schema.ts).
 */
function extraQueryFields(t: McpTool, fields: Record<string, unknown>): CallToolResult | undefined {
  const known = (t.tool.inputSchema.properties ?? {}) as Record<string, unknown>;
  const detail = Object.entries(fields)
    .filter(([k]) => !Object.hasOwn(known, k))
    .map(([k, v]) => ({
      type: "extra_forbidden",
      loc: ["query", k],
      msg: "Extra inputs are not permitted",
      input: v,
    }));
  if (detail.length === 0) return undefined;
  const names = Object.keys(known);
  return toolError(
    { detail },
    `Invalid arguments (not charged): ${detail.map((d) => d.loc.join(".")).join(", ")}: this tool takes ${names.length ? `only ${names.join(", ")}` : "no arguments"}`,
  );
}

/** The internal request: the HTTP route of the tool, paid the way the MCP call is paid. */
function buildRequest(
  t: McpTool,
  args: Record<string, unknown>,
  query: Record<string, unknown> | undefined,
  payment: Payment | undefined,
  idempotencyKey: string | undefined,
  cardKey: string | undefined,
  ctx: CallContext,
) {
  const url = new URL(t.path, ctx.origin);
  const headers = new Headers({ accept: "application/json" });
  let body: Uint8Array | undefined;
  // The arguments as the client wrote them (routes/mcp.ts): sent as they are, parsed only for a
  // query string (a GET service's few parameters, queryFields).
  if (query) {
    for (const [k, v] of Object.entries(query)) {
      url.searchParams.set(k, typeof v === "string" ? v : JSON.stringify(v));
    }
  } else {
    const raw = rawArguments(args);
    body = new TextEncoder().encode(raw ?? JSON.stringify(args));
    headers.set("content-type", "application/json");
    // Known length: the app's body limit then keeps this very Request object (see markMcpRequest).
    headers.set("content-length", String(body.byteLength));
  }
  if (payment) headers.set(payment.header, payment.value);
  if (idempotencyKey !== undefined) headers.set("idempotency-key", idempotencyKey);
  if (ctx.clientIp) headers.set("cf-connecting-ip", ctx.clientIp);
  if (cardKey) headers.set("authorization", cardKey);
  return new Request(url, { method: t.method, headers, body });
}

/** JSON as the app's routes read it: integers past 2^53 (json_sort's, json_flatten's) kept as written. */
const parseExact = (text: string): unknown =>
  scanJson(text).longDigits ? parseKeepingIntegers(text) : JSON.parse(text);

function readJson(text: string): unknown {
  try {
    return parseExact(text);
  } catch {
    return undefined;
  }
}

/** What the result of a paid call over MCP_TEXT_COPY_MAX says about its receipt (see callTool). */
const bigResultReceipt = (t: McpTool) =>
  `Its receipt (_meta["${RECEIPT_META}"]) is signed over the exact JSON text of the HTTP answer, which a result this large does not carry, and structuredContent serialised again need not give those bytes: this result cannot be checked against its receipt. For a receipt you can check on a result this large, call ${t.method} ${t.path} over HTTP.`;

/**
 * The text of a result that asks for payment: the x402 MCP transport's `{"x402/error": {code: 402,
 * message, data: <PaymentRequired>}}`, the only place the @x402/mcp client looks for the offer (a
 * bare PaymentRequired there was never paid by it). Payers that read structuredContent or
 * `_meta["x402/error"]` get the same PaymentRequired there.
 */
function x402ErrorText(data: Record<string, unknown>): string {
  const message = typeof data.error === "string" ? data.error : "Payment required";
  return JSON.stringify({ [PAYMENT_ERROR_META]: { code: 402, message, data } });
}

function detailText(json: unknown, fallback: string): string {
  if (isRecord(json)) {
    if (typeof json.detail === "string") return json.detail;
    if (typeof json.error === "string") return json.error;
  }
  return fallback;
}

/**
 * Runs one paid tool call through the app's own HTTP route and maps the answer to an MCP tool
 * result: payment, validation, nonce claim, settlement and ledger are the HTTP path's, unchanged.
 */
export async function callTool(
  t: McpTool,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  ctx: CallContext,
): Promise<CallToolResult> {
  const payment = callPayment(meta);
  // Checked here, for every call: the route reads an Idempotency-Key only beside a card key, and a
  // value that is no header value must be the caller's error, not the Headers object's. Only a
  // missing key is absent (JSON has no undefined): a null one read as none ran each retry as a new
  // call, a credit each.
  const idempotencyKey =
    meta && Object.hasOwn(meta, IDEMPOTENCY_KEY_META) ? meta[IDEMPOTENCY_KEY_META] : undefined;
  if (idempotencyKey !== undefined && !isIdempotencyKey(idempotencyKey)) {
    return toolError(
      { detail: IDEMPOTENCY_KEY_MESSAGE, reason: "invalid_idempotency_key" },
      `_meta["${IDEMPOTENCY_KEY_META}"] (not charged): ${IDEMPOTENCY_KEY_MESSAGE}`,
    );
  }
  const query = t.argumentsIn === "query" ? queryFields(args) : undefined;
  const extra = query ? extraQueryFields(t, query) : undefined;
  if (extra) return extra;
  const keyUse = await cardKeyUse(ctx.db, ctx.authorization, t, ctx.freeBeta);
  const keyWhy = keyUse.forward ? undefined : keyUse.why;
  const cardKey = keyUse.forward ? ctx.authorization : undefined;
  const req = buildRequest(t, args, query, payment, idempotencyKey, cardKey, ctx);
  markMcpRequest(req, t.tool.name);
  // What is read of the request and of the answer is taken out of them: neither (nor its body) is
  // held while the answer is parsed and sent on.
  const sentCardKey = cardKey !== undefined;
  const res = await ctx.dispatch(req);
  const { status, headers } = res;
  const text = await res.text();
  const json = readJson(text);

  if (status === 200) {
    const _meta: Record<string, unknown> = {};
    const settled = headers.get("payment-response");
    if (settled) _meta[PAYMENT_RESPONSE_META] = decodePaymentResponseHeader(settled);
    const settledV1 = v1Settlement(headers);
    if (settledV1) _meta[V1_PAYMENT_RESPONSE_META] = settledV1;
    const credits = headers.get("x-credits-remaining");
    if (credits !== null) _meta[CREDITS_META] = Number(credits);
    const receipt = headers.get(RECEIPT_HEADER);
    if (receipt) _meta[RECEIPT_META] = receipt;
    const requestId = headers.get("x-original-request-id") ?? headers.get("x-request-id");
    if (requestId) _meta[REQUEST_ID_META] = requestId;
    if (headers.get(REPLAY_HEADER) === "true") _meta[IDEMPOTENT_REPLAY_META] = true;
    // A big result is sent once, as structuredContent: repeating its JSON text beside it doubled
    // the answer past the 8 MB every answer is held to (a 300k-key json_sort answered 14.8 MB).
    // structuredContent cannot go instead (a tool with an outputSchema MUST return it, and the
    // SDK client refuses a result without it), and serialising it again does not give the signed
    // bytes (integer-like keys move, numbers are rewritten): the result says so, rather than
    // hand the buyer a receipt that fails its check without a word.
    const structured = isRecord(json);
    const big = structured && text.length > MCP_TEXT_COPY_MAX;
    const note = big && receipt ? bigResultReceipt(t) : undefined;
    if (note) _meta[RECEIPT_NOTE_META] = note;
    const shown = big
      ? `The result (${text.length} characters of JSON) is in structuredContent.${note ? ` ${note}` : ""}`
      : text;
    return {
      ...(structured ? { structuredContent: json } : {}),
      content: [{ type: "text", text: shown }],
      ...(Object.keys(_meta).length ? { _meta } : {}),
    };
  }

  // A settlement that failed (402) or went unconfirmed (502) says so in x402's own field, as the
  // x402 MCP transport asks: `x402/payment-response` in `_meta` and in the structured content.
  const settledHeader = status === 402 || status === 502 ? headers.get("payment-response") : null;
  const settlement = settledHeader ? safeDecodeSettlement(settledHeader) : undefined;
  // A v1 payer (x402-mcp) reads a failed settlement where it reads a good one: its own `_meta` key,
  // the settle response the gate sent it or, for one the facilitator never answered, the same one
  // the v2 key gets (unansweredSettlement) in v1 terms.
  const settledV1 = status === 402 || status === 502 ? v1Settlement(headers) : undefined;
  const withSettlement = (result: CallToolResult, settled = settlement): CallToolResult => {
    if (!settled) return result;
    const v1 = settledV1 ?? (payment?.header === "x-payment" ? settlementInV1Terms(settled) : undefined);
    return {
      ...result,
      // Every result here has an object (the SDK's type admits any JSON value since 2026-07-28).
      structuredContent: { ...(result.structuredContent as object), [PAYMENT_RESPONSE_META]: settled },
      _meta: {
        ...result._meta,
        [PAYMENT_RESPONSE_META]: settled,
        ...(v1 ? { [V1_PAYMENT_RESPONSE_META]: v1 } : {}),
      },
    };
  };

  // A settlement whose outcome is not known is a settlement failure in the MCP transport's terms:
  // answered as an offer, which the gate sends an MCP call's 502 with (x402-http.ts).
  const unconfirmed = status === 502 && isRecord(json) && json.reason === SETTLEMENT_UNCONFIRMED;
  const required = status === 402 || unconfirmed ? headers.get("payment-required") : null;
  if (required) {
    // x402 MCP transport: the PaymentRequired itself as structured content, and in its `x402/error`
    // wrapper as the text; a refused payment adds why (its `error` and snake_case `reason`).
    const paymentRequired = decodePaymentRequiredHeader(required) as unknown as Record<string, unknown>;
    const body = isRecord(json) ? json : {};
    // An unconfirmed settlement's own words and facts; a refusal's reason; or, when a card key was
    // sent (a known key of this tool, or the gate would have answered 401/403), the route's note
    // that it has no credits left, as HTTP callers read it; or why the connection's key was not
    // sent (card-key.ts).
    const refused = unconfirmed
      ? unconfirmedFacts(body)
      : typeof body.reason === "string" && body.reason !== "payment_required"
        ? { error: body.error ?? paymentRequired.error, reason: body.reason }
        : sentCardKey && typeof body.error === "string"
          ? { error: body.error }
          : keyWhy
            ? { error: `${keyWhy} Pay this call with x402 (the offer is here).` }
            : {};
    const structured = { ...paymentRequired, ...refused };
    // Also under `_meta["x402/error"]`: Cloudflare Agents' withX402Client reads the offer only
    // there (the x402 MCP clients read structuredContent); without it such an agent never pays.
    const offer = withSettlement(
      {
        ...toolError(structured, ""),
        _meta: {
          [PAYMENT_ERROR_META]: structured,
          ...(unconfirmed && typeof body.request_id === "string"
            ? { [REQUEST_ID_META]: body.request_id }
            : {}),
        },
      },
      settlement ?? (unconfirmed ? unansweredSettlement(body, paymentRequired) : undefined),
    );
    const v1Offer = v1OfferText(body, structured, paymentRequired.error);
    return {
      ...offer,
      content: [
        {
          type: "text",
          text: x402ErrorText((offer.structuredContent as Record<string, unknown> | undefined) ?? structured),
        },
        ...(v1Offer ? [{ type: "text" as const, text: v1Offer }] : []),
      ],
    };
  }

  if (status === 422 && isRecord(json) && Array.isArray(json.detail)) {
    const fields = json.detail
      .map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join(".")}: ${d.msg}`)
      .join("; ");
    return toolError(json, `Invalid arguments (not charged): ${fields}`);
  }

  const message = detailText(json, text.slice(0, 500) || `HTTP ${status}`);
  const structured = isRecord(json)
    ? { ...json, detail: json.detail ?? message, status }
    : { detail: message, status };
  const prefix =
    status === 401 || status === 403
      ? "Card-credit key refused"
      : status === 402
        ? "Payment refused"
        : `Call failed (HTTP ${status})`;
  // A 402 without an offer (a deployment that sells no x402 now) says why the connection's key did
  // not pay, as the offer does: the gate's answer alone named only the ways to pay it has on.
  const why = status === 402 && keyWhy ? keyWhy : undefined;
  return withSettlement(
    toolError(
      why ? { ...structured, note: why } : structured,
      `${prefix}: ${message}${why ? ` ${why}` : ""}`,
    ),
  );
}

/**
 * What a 502 settlement_unconfirmed tells its payer, kept whole over MCP: its words (the result is
 * withheld, the authorization stays reserved, a transfer that lands anyway is refunded, so a new
 * authorization is what a retry takes), why, and what to look for on chain under which request id.
 */
function unconfirmedFacts(body: Record<string, unknown>) {
  const { detail, reason, facilitator_reason, transaction, request_id } = body;
  return { error: detail, reason, facilitator_reason, transaction, request_id };
}

/**
 * The settle response of an unconfirmed settlement the facilitator sent none for (no answer at
 * all, or a "success" without a transaction, which the 502 does not carry on): not a success,
 * with the transaction to look for if one is known.
 */
function unansweredSettlement(
  body: Record<string, unknown>,
  required: Record<string, unknown>,
): SettleResponse {
  const [accepted] = (required.accepts ?? []) as Partial<PaymentRequirements>[];
  return {
    success: false,
    errorReason: String(body.facilitator_reason ?? SETTLEMENT_UNCONFIRMED),
    transaction: typeof body.transaction === "string" ? body.transaction : "",
    network: accepted?.network ?? ("" as SettleResponse["network"]),
  };
}

/**
 * The offer for x402 v1 payers (Vercel's x402-mcp, whose model passes one of `accepts` to its
 * generatePaymentAuthorization tool, which takes v1 requirements only): the v1 offer the HTTP 402
 * body carries (x402-offer-body.ts), as a second text item. v2 clients read `content[0]`,
 * `structuredContent` and `_meta` (transports-v2/mcp.md), all left as they were. Its `error` is
 * the result's own whenever that says more than the offer's default (a refusal, why the
 * connection's card key did not pay). Each requirement goes without its `outputSchema` (optional
 * in x402's v1 PaymentRequirementsSchema): the model copies a requirement into its signing tool's
 * arguments, and the schema was most of this item's size (the tools list has it already).
 */
function v1OfferText(
  body: Record<string, unknown>,
  structured: Record<string, unknown>,
  offerError: unknown,
) {
  if (body.x402Version !== 1 || !Array.isArray(body.accepts) || body.accepts.length === 0) return undefined;
  const reason = typeof structured.reason === "string" ? structured.reason : undefined;
  const error =
    typeof structured.error === "string" && (reason || structured.error !== offerError)
      ? structured.error
      : `Payment required (x402 v1): sign one of accepts and send the X-PAYMENT header value in _meta["${V1_PAYMENT_META}"]`;
  const accepts = body.accepts.map((a) => {
    if (!isRecord(a)) return a;
    const { outputSchema: _, ...requirement } = a;
    return requirement;
  });
  return JSON.stringify({ x402Version: 1, error, ...(reason ? { reason } : {}), accepts });
}

/** The v1 settle response (X-PAYMENT-RESPONSE, which the gate sends a v1 payment only), decoded. */
function v1Settlement(headers: Headers) {
  const header = headers.get("x-payment-response");
  return header ? safeDecodeSettlement(header) : undefined;
}

function safeDecodeSettlement(header: string) {
  try {
    return decodePaymentResponseHeader(header);
  } catch {
    return undefined;
  }
}
