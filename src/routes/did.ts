import { type Context, Hono } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { serveJson } from "../http/conditional-get";
import { detail } from "../http/errors";
import {
  didDocument,
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
 * Logs a configuration problem of these documents once per isolate and value (`source`: the
 * setting's text). An unset or malformed RECEIPT_SIGNING_KEY is a supported set-up (no receipts),
 * and these routes are public and unauthenticated: logged per request, any crawler wrote an error
 * line per fetch, burying the one a maintainer needs.
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

function keyOr503(c: Context<AppEnv>) {
  const key = receiptKey(c.env.RECEIPT_SIGNING_KEY, publicConfig(c.env, c.req.url).baseUrl);
  if ("error" in key) {
    logOnce(c, "RECEIPT_SIGNING_KEY", c.env.RECEIPT_SIGNING_KEY, "receipt signing key unusable", key.error);
    return detail(
      c,
      503,
      "Receipt signing is not configured on this deployment: answers carry no signed receipts.",
    );
  }
  return key;
}

/**
 * The retired keys still published (RECEIPT_RETIRED_KEYS). A list that cannot be read is logged
 * (once: logOnce) and left out, an entry that cannot be published is logged and left out alone:
 * the current key and the other retired keys are still published.
 */
function retired(c: Context<AppEnv>, key: ReceiptKey): PublicJwk[] {
  const retiredList = retiredKeys(c.env.RECEIPT_RETIRED_KEYS, key);
  const why = "error" in retiredList ? retiredList.error : retiredList.problems.join("; ");
  if (why)
    logOnce(c, "RECEIPT_RETIRED_KEYS", c.env.RECEIPT_RETIRED_KEYS, "retired receipt keys unreadable", why);
  return "error" in retiredList ? [] : retiredList.keys;
}

/** Each document once per configuration, with an ETag (http/conditional-get.ts); a 503 is passed through uncached. */
const keyDocument =
  (path: string, make: (c: Context<AppEnv>, key: ReceiptKey) => unknown, contentType?: string) =>
  (c: Context<AppEnv>) =>
    serveJson(
      c,
      path,
      () => {
        const key = keyOr503(c);
        return key instanceof Response ? key : make(c, key);
      },
      { contentType },
    );

didRoutes.get(
  "/.well-known/did.json",
  keyDocument("/.well-known/did.json", (c, key) => didDocument(key, retired(c, key)), "application/did+json"),
);
didRoutes.get(
  "/.well-known/jwks.json",
  keyDocument("/.well-known/jwks.json", (c, key) => ({ keys: [key.publicJwk, ...retired(c, key)] })),
);
