import { type Context, Hono } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { serveJson } from "../http/conditional-get";
import { detail } from "../http/errors";
import {
  didDocument,
  didWebOf,
  type PublicJwk,
  type ReceiptKey,
  receiptKey,
  retiredKeys,
} from "../payments/receipt-key";

/**
 * The public key that signs offers and receipts, with the retired ones that signed earlier
 * receipts, as did:web (W3C) and as a JWKS (RFC 7517).
 */
export const didRoutes = new Hono<AppEnv>();

/**
 * Logs a configuration problem of these documents once per isolate and value (`source`: what the
 * problem depends on, the setting's text). An unset or malformed RECEIPT_SIGNING_KEY is a supported
 * set-up (no receipts), and these routes are public and unauthenticated: logged per request, any
 * crawler wrote an error line per fetch, burying the one a maintainer needs.
 */
const loggedFor = new Map<string, string>();
function logOnce(
  c: Context<AppEnv>,
  setting: string,
  source: string | undefined,
  msg: string,
  error: string,
) {
  if (loggedFor.get(setting) === (source ?? "")) return;
  loggedFor.set(setting, source ?? "");
  console.error(JSON.stringify({ level: "error", msg, request_id: c.get("requestId"), error }));
}

/**
 * The keys to publish: the current signing key, then the retired ones. The retired keys are
 * published even while the signing key is unset or malformed (logged once): receipts they signed
 * must still verify while signing is off. Nothing to publish at all: the 503 that says so.
 */
function publishedKeys(c: Context<AppEnv>): { did: string; keys: PublicJwk[] } | Response {
  const baseUrl = publicConfig(c.env, c.req.url).baseUrl;
  const key = receiptKey(c.env.RECEIPT_SIGNING_KEY, baseUrl);
  if ("error" in key)
    logOnce(c, "RECEIPT_SIGNING_KEY", c.env.RECEIPT_SIGNING_KEY, "receipt signing key unusable", key.error);
  const current = "error" in key ? undefined : key;
  const did = "error" in key ? didWebOf(baseUrl) : key.did;
  const keys = [...(current ? [current.publicJwk] : []), ...retired(c, did, current)];
  if (keys.length > 0) return { did, keys };
  return detail(
    c,
    503,
    "Receipt signing is not configured on this deployment: answers carry no signed receipts.",
  );
}

/**
 * The retired keys still published (RECEIPT_RETIRED_KEYS). A list that cannot be read is logged
 * (once: logOnce) and left out, an entry that cannot be published is logged and left out alone:
 * the current key and the other retired keys are still published.
 */
function retired(c: Context<AppEnv>, did: string, current?: ReceiptKey): PublicJwk[] {
  const retiredList = retiredKeys(c.env.RECEIPT_RETIRED_KEYS, did, current);
  const why = "error" in retiredList ? retiredList.error : retiredList.problems.join("; ");
  // Keyed on the signing key too: an entry's problem may be with the current key (its kid reused,
  // its d pasted), so another signing key under the same list logs its own.
  const source = `${current?.kid ?? ""} ${current?.publicJwk.x ?? ""} ${c.env.RECEIPT_RETIRED_KEYS ?? ""}`;
  if (why) logOnce(c, "RECEIPT_RETIRED_KEYS", source, "retired receipt keys unreadable", why);
  return "error" in retiredList ? [] : retiredList.keys;
}

/** Each document once per configuration, with an ETag (http/conditional-get.ts); a 503 is passed through uncached. */
const keyDocument =
  (path: string, make: (published: { did: string; keys: PublicJwk[] }) => unknown, contentType?: string) =>
  (c: Context<AppEnv>) =>
    serveJson(
      c,
      path,
      () => {
        const published = publishedKeys(c);
        return published instanceof Response ? published : make(published);
      },
      { contentType },
    );

didRoutes.get(
  "/.well-known/did.json",
  keyDocument("/.well-known/did.json", ({ did, keys }) => didDocument(did, keys), "application/did+json"),
);
didRoutes.get(
  "/.well-known/jwks.json",
  keyDocument("/.well-known/jwks.json", ({ keys }) => ({ keys })),
);
