import { decodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { authorizationTypes } from "@x402/evm";
import { canonicalize } from "@x402/extensions/offer-receipt";
import { isValidPaymentId, PAYMENT_IDENTIFIER } from "@x402/extensions/payment-identifier";
import type { Context, MiddlewareHandler } from "hono";
import { recoverTypedDataAddress } from "viem";
import { sha256Hex } from "../digest";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { parseJsonText, validationResponse } from "../http/validation";
import { bearerKey, cardKeyAuthorization, hashKey } from "./credits";

/** How long a paid answer can be fetched again with its key (stated in docs/idempotency.md). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * A claim still 'running' after this long belongs to a request that died (isolate evicted): a
 * retry may take it over. Longer than any call can run: handler timeouts plus the 45 s settle wait.
 */
export const ABANDONED_AFTER_MS = 5 * 60 * 1000;
/** UTF-8 bodies up to this size are kept in the D1 row; larger or binary ones in KV (D1 values stop at 2 MB). */
const D1_BODY_MAX = 512 * 1024;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
export const REPLAY_HEADER = "X-Idempotent-Replay";
const IN_FLIGHT_RETRY_AFTER_SECONDS = 2;

interface Fingerprint {
  method: string;
  path: string;
  body_sha256: string;
  principal: string;
}

interface Stored extends Fingerprint {
  request_id: string;
  status: "running" | "done";
  http_status: number | null;
  headers: string | null;
  body: string | null;
  body_kv: string | null;
  updated_at: number;
}

type Identified =
  | { key: string; principal: string; kind: "x402" | "card" }
  | { invalid: Response }
  | undefined;

/**
 * Which idempotency key a request carries, if any: the x402 payment-identifier extension
 * (`extensions["payment-identifier"].info.id` of the PAYMENT-SIGNATURE payload, scoped by the
 * payer) or, for a card-credit call, the `Idempotency-Key` header (scoped by the key's hash).
 */
async function identify(c: Context<AppEnv>): Promise<Identified> {
  // The same reading of the card key as the payment gate's (Authorization: Bearer, or X-API-Key).
  const authorization = cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key"));
  const cardKey =
    authorization && /^Bearer\s+mk_/i.test(authorization) ? bearerKey(authorization) : undefined;
  if (cardKey) {
    const header = c.req.header("idempotency-key");
    if (header === undefined) return undefined;
    if (!/^[\x21-\x7e]{1,255}$/.test(header)) {
      return {
        invalid: validationResponse(c, [
          {
            loc: ["header", "Idempotency-Key"],
            msg: "Idempotency-Key must be 1 to 255 visible ASCII characters",
            type: "value_error",
            input: header.slice(0, 256),
          },
        ]),
      };
    }
    const keyHash = await hashKey(cardKey);
    return { key: `card:${keyHash}:${header}`, principal: `card:${keyHash}`, kind: "card" };
  }
  const signature = c.req.header("payment-signature");
  if (!signature) return undefined;
  let payment: PaymentPayload;
  try {
    payment = decodePaymentSignatureHeader(signature);
  } catch {
    return undefined; // the payment middleware answers a malformed signature
  }
  // The id is checked with the extension's format rule only: its validatePaymentIdentifier also
  // compiles the echoed JSON Schema with ajv, which generates code (new Function) and so always
  // fails in workerd (no eval), rejecting every valid id.
  const id = (payment.extensions?.[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | undefined)?.info?.id;
  if (id === undefined) return undefined; // the extension echoed without an id: not idempotent
  if (typeof id !== "string" || !isValidPaymentId(id)) {
    return {
      invalid: validationResponse(c, [
        {
          loc: ["header", "PAYMENT-SIGNATURE", "extensions", PAYMENT_IDENTIFIER, "info", "id"],
          msg: "Invalid payment identifier: use 16-128 characters of A-Z a-z 0-9 _ -",
          type: "value_error",
          input: typeof id === "string" ? id.slice(0, 256) : id,
        },
      ]),
    };
  }
  const from = await signedBy(payment);
  // Unsigned by its `from` (or not an EOA signature we can check here): no stored answer is
  // handed out for it; the call goes down the normal paid path, whose facilitator judges it.
  if (!from) return undefined;
  return { key: `x402:${id}`, principal: `x402:${from.toLowerCase()}`, kind: "x402" };
}

/**
 * The payer a fresh EIP-3009 authorization proves, by recovering its EIP-712 signature locally.
 * A replay hands out a paid answer without verifying the payment with the facilitator, so the
 * payer must be proven, not read from `from` (anyone can write another's address there).
 */
async function signedBy(payment: PaymentPayload): Promise<string | undefined> {
  const { authorization: auth, signature } = payment.payload as {
    authorization?: Record<string, string>;
    signature?: string;
  };
  const chainId = Number(/^eip155:(\d+)$/.exec(payment.accepted?.network ?? "")?.[1]);
  const extra = (payment.accepted?.extra ?? {}) as { name?: string; version?: string };
  if (!auth || typeof auth.from !== "string" || !signature || !chainId) return undefined;
  try {
    const recovered = await recoverTypedDataAddress({
      domain: {
        name: extra.name,
        version: extra.version,
        chainId,
        verifyingContract: payment.accepted.asset as `0x${string}`,
      },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: {
        from: auth.from as `0x${string}`,
        to: auth.to as `0x${string}`,
        value: BigInt(auth.value ?? 0),
        validAfter: BigInt(auth.validAfter ?? 0),
        validBefore: BigInt(auth.validBefore ?? 0),
        nonce: auth.nonce as `0x${string}`,
      },
      signature: signature as `0x${string}`,
    });
    return recovered.toLowerCase() === auth.from.toLowerCase() ? auth.from : undefined;
  } catch {
    return undefined;
  }
}

/** SHA-256 of the body as canonical JSON (RFC 8785), so key order and spacing do not matter. */
async function bodyHash(text: string): Promise<string> {
  if (text.trim() === "") return sha256Hex("");
  const parsed = parseJsonText(text);
  return sha256Hex(parsed.ok ? canonicalize(parsed.value) : text);
}

/**
 * Idempotent paid calls. Runs before the payment gate: a request whose key already has a stored
 * answer gets that answer back byte for byte (with its PAYMENT-RESPONSE and receipt), marked
 * `X-Idempotent-Replay: true`; its fresh payment signature is neither verified nor settled and
 * its nonce is not claimed, and a card credit is not spent. The same key with another request
 * is a 409; a duplicate while the first still runs is a 409 with Retry-After. Only a paid 2xx is
 * stored; anything else frees the key, so the retry runs (and pays) normally.
 */
export function idempotent(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // No free-beta shortcut: partner try calls are paid even in free beta. An unpaid answer is
    // never stored (the key is released), so a free call only costs the claim.
    const id = await identify(c);
    if (!id) return next();
    if ("invalid" in id) return id.invalid;
    const url = new URL(c.req.url);
    const fp: Fingerprint = {
      method: c.req.method,
      path: url.pathname + url.search,
      body_sha256: await bodyHash(await c.req.text()),
      principal: id.principal,
    };
    const requestId = c.get("requestId");
    const db = c.env.DB;
    const claimed = await claim(db, id.key, fp, requestId);
    if (!claimed) {
      const row = await current(db, id.key);
      if (!row)
        return detail(
          c,
          409,
          "This idempotency key is being released; retry.",
          { reason: "idempotent_request_in_flight" },
          { "Retry-After": "1" },
        );
      const mismatch = differs(row, fp);
      if (mismatch) {
        return detail(
          c,
          409,
          `This ${id.kind === "x402" ? "payment identifier" : "Idempotency-Key"} was already used for ${mismatch}. Use a new one for a different request.`,
          { reason: "idempotency_key_mismatch", request_id: row.request_id },
        );
      }
      if (row.status === "running") {
        return detail(
          c,
          409,
          "A request with this idempotency key is still running. Retry after a moment to get its answer; nothing more is charged.",
          { reason: "idempotent_request_in_flight", request_id: row.request_id },
          { "Retry-After": String(IN_FLIGHT_RETRY_AFTER_SECONDS) },
        );
      }
      return replay(c, row);
    }
    try {
      await next();
    } catch (e) {
      await release(db, id.key, requestId);
      throw e;
    }
    const paid =
      c.res.status >= 200 &&
      c.res.status < 300 &&
      (id.kind === "card" ? Boolean(c.get("cardCredit")) : c.res.headers.has("payment-response"));
    if (!paid) {
      await release(db, id.key, requestId);
      return;
    }
    const bytes = await c.res.arrayBuffer();
    c.res = new Response(bytes, c.res);
    await store(c, id.key, requestId, c.res, bytes);
  };
}

function differs(row: Fingerprint, fp: Fingerprint): string | undefined {
  if (row.principal !== fp.principal) return "another payer";
  if (row.method !== fp.method || row.path !== fp.path) return `${row.method} ${row.path}`;
  if (row.body_sha256 !== fp.body_sha256) return `${row.method} ${row.path} with a different body`;
  return undefined;
}

/** Takes the key for this request: new, expired, or abandoned by a request that died. */
async function claim(db: D1Database, key: string, fp: Fingerprint, requestId: string) {
  const now = Date.now();
  const result = await db
    .prepare(
      `INSERT INTO idempotent_results (key, method, path, body_sha256, principal, request_id, status, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?7)
       ON CONFLICT (key) DO UPDATE SET method = ?2, path = ?3, body_sha256 = ?4, principal = ?5, request_id = ?6,
         status = 'running', http_status = NULL, headers = NULL, body = NULL, body_kv = NULL, created_at = ?7, updated_at = ?7
       WHERE idempotent_results.created_at < ?8
          OR (idempotent_results.status = 'running' AND idempotent_results.updated_at < ?9)`,
    )
    .bind(
      key,
      fp.method,
      fp.path,
      fp.body_sha256,
      fp.principal,
      requestId,
      now,
      now - IDEMPOTENCY_WINDOW_MS,
      now - ABANDONED_AFTER_MS,
    )
    .run();
  return result.meta.changes === 1;
}

async function current(db: D1Database, key: string) {
  return db
    .prepare(
      `SELECT method, path, body_sha256, principal, request_id, status, http_status, headers, body, body_kv, updated_at
       FROM idempotent_results WHERE key = ?1 AND created_at >= ?2`,
    )
    .bind(key, Date.now() - IDEMPOTENCY_WINDOW_MS)
    .first<Stored>();
}

async function release(db: D1Database, key: string, requestId: string) {
  await db
    .prepare("DELETE FROM idempotent_results WHERE key = ?1 AND request_id = ?2 AND status = 'running'")
    .bind(key, requestId)
    .run();
}

async function store(c: Context<AppEnv>, key: string, requestId: string, res: Response, bytes: ArrayBuffer) {
  const db = c.env.DB;
  // The request id header is the replaying request's own; everything else is kept as answered.
  const headers = [...res.headers].filter(([name]) => name !== "x-request-id" && name !== "set-cookie");
  let body: string | null = null;
  let bodyKv: string | null = null;
  if (bytes.byteLength <= D1_BODY_MAX) {
    try {
      body = utf8.decode(bytes); // valid UTF-8 round-trips to the same bytes
    } catch {}
  }
  if (body === null) {
    bodyKv = `idempotent:${await sha256Hex(key)}`;
    await c.env.KV.put(bodyKv, bytes, { expirationTtl: IDEMPOTENCY_WINDOW_MS / 1000 });
  }
  const now = Date.now();
  await db
    .prepare(
      `UPDATE idempotent_results SET status = 'done', http_status = ?3, headers = ?4, body = ?5, body_kv = ?6, updated_at = ?7
       WHERE key = ?1 AND request_id = ?2`,
    )
    .bind(key, requestId, res.status, JSON.stringify(headers), body, bodyKv, now)
    .run();
  // Expired rows are dead weight; deleting them after the answer keeps the table at one window.
  const expire = db
    .prepare("DELETE FROM idempotent_results WHERE created_at < ?1")
    .bind(now - IDEMPOTENCY_WINDOW_MS)
    .run()
    .then(() => undefined);
  try {
    c.executionCtx.waitUntil(expire);
  } catch {
    await expire; // no ExecutionContext (app.fetch in tests)
  }
}

async function replay(c: Context<AppEnv>, row: Stored) {
  const body: ArrayBuffer | string | null = row.body_kv
    ? await c.env.KV.get(row.body_kv, "arrayBuffer")
    : row.body;
  if (body === null) {
    return detail(c, 409, "The stored answer for this idempotency key has expired.", {
      reason: "idempotent_result_expired",
      request_id: row.request_id,
    });
  }
  const headers = new Headers(JSON.parse(row.headers ?? "[]") as [string, string][]);
  headers.set(REPLAY_HEADER, "true");
  headers.set("X-Original-Request-Id", row.request_id);
  return new Response(body, { status: row.http_status ?? 200, headers });
}
