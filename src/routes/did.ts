import { type Context, Hono } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { didDocument, receiptKey } from "../payments/receipt-key";

/** The public key that signs offers and receipts, as did:web (W3C) and as a JWKS (RFC 7517). */
export const didRoutes = new Hono<AppEnv>();

const CACHE = { "cache-control": "public, max-age=300" };

function keyOr503(c: Context<AppEnv>) {
  const key = receiptKey(c.env.RECEIPT_SIGNING_KEY, publicConfig(c.env, c.req.url).baseUrl);
  if ("error" in key) {
    console.error(JSON.stringify({ level: "error", request_id: c.get("requestId"), error: key.error }));
    return detail(
      c,
      503,
      "Receipt signing is not configured on this deployment: answers carry no signed receipts.",
    );
  }
  return key;
}

didRoutes.get("/.well-known/did.json", (c) => {
  const key = keyOr503(c);
  if (key instanceof Response) return key;
  return c.json(didDocument(key), 200, { ...CACHE, "content-type": "application/did+json" });
});

didRoutes.get("/.well-known/jwks.json", (c) => {
  const key = keyOr503(c);
  if (key instanceof Response) return key;
  return c.json({ keys: [key.publicJwk] }, 200, CACHE);
});
