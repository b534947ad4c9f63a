import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";

/**
 * True when this request was answered with the route's unpaid offer, already explained. A context
 * flag, not the Response's identity: a middleware may replace the Response (Hono copies it when
 * a header is set on a finalized one).
 */
export const isUnpaidOffer = (c: Context<AppEnv>) => c.get("x402UnpaidOffer") === true;

/**
 * The x402 server puts the v2 requirements in the PAYMENT-REQUIRED header and leaves the body
 * empty. The body carries the same offer in x402 **v1** form (`x402Version: 1`, `accepts` with
 * `network: "base"`, `maxAmountRequired`, …) so v1 clients (x402-fetch, x402-axios) can pay, plus
 * the v2 `resource` and `extensions` (bazaar) and an `error` in words with a machine `reason`.
 * v2 clients and crawlers read the header first (@x402/core's client, @agentcash/discovery), so one
 * answer serves both versions. A network without a v1 name keeps the v2 form in the body.
 */
export const explain402: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const res = c.res;
  if (res.status !== 402) return;
  const note = c.get("creditNote");
  // The gate sends the unpaid offer already explained (once per cached answer); only a note about
  // a refused card key changes its text. Asked before the headers: reading PAYMENT-REQUIRED makes
  // a new string of it (~2 KB) on every unpaid 402 (docs/PERFORMANCE.md, stop 40).
  const offer = isUnpaidOffer(c);
  if (offer && note === undefined) return;
  const header = res.headers.get("payment-required");
  if (!header || !res.headers.get("content-type")?.includes("json")) return;
  if (!offer) {
    const existing = await res.clone().text();
    if (existing && existing !== "{}") return;
  }
  // The same header and note always explain the same way: decoded and written once per isolate.
  const cacheKey = `${note ?? ""}\u0000${header}`;
  let body = explained.get(cacheKey);
  if (body === undefined) {
    const { explain } = await import("./x402-offer-body");
    body = explain(header, note);
    if (body === undefined) return;
    if (explained.size >= MAX_EXPLAINED) explained.clear();
    explained.set(cacheKey, body);
  }
  const headers = new Headers(res.headers);
  headers.set("content-type", "application/json");
  c.res = new Response(body, { status: 402, headers });
};

// Offers differ by route, price tier, configuration and reason; the bound only stops growth from
// headers nobody will send again (a rejected payment's reason is part of its header).
const MAX_EXPLAINED = 512;
const explained = new Map<string, string>();
