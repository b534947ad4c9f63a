import type { JWSSigner } from "@x402/extensions/offer-receipt";
import { isRecord } from "../is-record";
import { varText } from "../var-text";

/**
 * The key that signs offers and receipts: `RECEIPT_SIGNING_KEY` is a private Ed25519 JWK as JSON
 * (`{"kty":"OKP","crv":"Ed25519","d":"…","x":"…","kid":"…"}`; `kid` optional). A JWK keeps the
 * public half (`x`) next to the private one; did.json publishes it once parse has checked it is
 * `d`'s. A key that fails any check is malformed, as an unset one: no offers, no receipts, and
 * did.json lists only the retired keys (503 without any; routes/did.ts).
 * JWS algorithm EdDSA (RFC 8037), signed with WebCrypto in the Worker.
 */
export interface ReceiptKey {
  /** `did:web:<host>` of this deployment. */
  did: string;
  /** `did:web:<host>#<fragment>`: the JWS `kid`, and the verification method in did.json. */
  kid: string;
  publicJwk: PublicJwk;
  signer: JWSSigner;
  /** Whether `value` is this key's private half (`d`): a string compare, `d` itself never leaves. */
  isPrivateHalf(value: string): boolean;
}

/** A public key as did.json and jwks.json publish it; `kid` is the full `did:web:<host>#<fragment>`. */
export interface PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  alg: "EdDSA";
  use: "sig";
  kid: string;
}

export const DEFAULT_KEY_FRAGMENT = "receipts-1";
/** A key's `kid` fragment, and the value of an Ed25519 JWK's `d` and `x` (32 bytes, base64url). */
const FRAGMENT = /^[A-Za-z0-9._-]{1,64}$/;
const b64url = /^[A-Za-z0-9_-]{43}$/;

interface Cached {
  source: string;
  baseUrl: string;
  key: ReceiptKey | { error: string };
}
let cached: Cached | undefined;

/** `did:web` of a base URL: the host, with a port percent-encoded (did:web method spec). */
export function didWebOf(baseUrl: string): string {
  const url = new URL(baseUrl);
  const path = url.pathname.replace(/\/+$/, "");
  const host = url.port ? `${url.hostname}%3A${url.port}` : url.hostname;
  return `did:web:${host}${path ? path.split("/").join(":") : ""}`;
}

/**
 * The signing key for this deployment, or why there is none. Parsed once per isolate and secret;
 * the private key is imported non-extractable.
 */
export function receiptKey(value: string | undefined, baseUrl: string): ReceiptKey | { error: string } {
  const secret = varText(value);
  // Compared before didWebOf: its URL parse showed in the profile of every unpaid 402.
  if (cached && cached.source === secret && cached.baseUrl === baseUrl) return cached.key;
  cached = { source: secret, baseUrl, key: parse(secret, didWebOf(baseUrl)) };
  return cached.key;
}

function parse(secret: string | undefined, did: string): ReceiptKey | { error: string } {
  if (!secret) return { error: "RECEIPT_SIGNING_KEY is not set" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(secret);
  } catch {
    return { error: "RECEIPT_SIGNING_KEY is not JSON (expected a private Ed25519 JWK)" };
  }
  // JSON that is no object (`null`, which `jq -r` prints for a missing field) is no key either:
  // reading its fields threw, a 500 on /health, did.json, every 402 and every paid answer (after
  // its credit or settlement stood).
  if (!isRecord(parsed))
    return { error: "RECEIPT_SIGNING_KEY is JSON but no object (expected a private Ed25519 JWK)" };
  const jwk = parsed;
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.d !== "string" || typeof jwk.x !== "string")
    return {
      error: 'RECEIPT_SIGNING_KEY must be a private Ed25519 JWK ({"kty":"OKP","crv":"Ed25519","d","x"})',
    };
  if (!b64url.test(jwk.d) || !b64url.test(jwk.x))
    return { error: "RECEIPT_SIGNING_KEY: d and x must be 32-byte base64url values" };
  // A kid we cannot publish as a DID fragment is refused, not replaced: a key quietly published
  // under another name than its operator gave it is a rotation gone wrong nobody is told about.
  if (jwk.kid !== undefined && (typeof jwk.kid !== "string" || !FRAGMENT.test(jwk.kid)))
    return { error: "RECEIPT_SIGNING_KEY: kid must be 1-64 characters of A-Z a-z 0-9 . _ -" };
  const { d, x } = jwk;
  // x is what did.json publishes, d what signs: a pair that does not match signs offers and
  // receipts no one can verify. WebCrypto imports such a pair without a word (it reads only d), so
  // the public key is derived here, once per isolate and secret (receiptKey is memoized); node:crypto
  // is reached only now, never at start-up.
  if (ed25519PublicX(d, x) !== x)
    return { error: "RECEIPT_SIGNING_KEY: x is not the public key of d (the JWK's halves are of two keys)" };
  const kid = `${did}#${typeof jwk.kid === "string" ? jwk.kid : DEFAULT_KEY_FRAGMENT}`;
  let imported: Promise<CryptoKey> | undefined;
  const privateKey = () => {
    imported ??= crypto.subtle.importKey(
      "jwk",
      { kty: "OKP", crv: "Ed25519", d, x },
      { name: "Ed25519" },
      false,
      ["sign"],
    ) as Promise<CryptoKey>;
    return imported;
  };
  return {
    did,
    kid,
    publicJwk: { kty: "OKP", crv: "Ed25519", x, alg: "EdDSA", use: "sig", kid },
    signer: {
      kid,
      format: "jws",
      algorithm: "EdDSA",
      sign: async (bytes: Uint8Array) => {
        const sig = await crypto.subtle.sign({ name: "Ed25519" }, await privateKey(), bytes);
        return base64url(new Uint8Array(sig));
      },
    },
    isPrivateHalf: (value) => value === d,
  };
}

/**
 * The public half (JWK `x`) derived from the private one `d` (workerd reads only `d`; a runtime that
 * checks the given `x` throws on a mismatch instead); undefined if `d` is no Ed25519 key.
 */
function ed25519PublicX(d: string, x: string): string | undefined {
  try {
    const { createPrivateKey, createPublicKey } = process.getBuiltinModule("node:crypto");
    const privateKey = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d, x }, format: "jwk" });
    return createPublicKey(privateKey).export({ format: "jwk" }).x;
  } catch {
    return undefined;
  }
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The retired keys to publish, and why any entry of the list was left out. `error` alone: the list
 * as a whole cannot be read (not JSON, not an array), and nothing of it is published.
 */
export type RetiredKeys = { keys: PublicJwk[]; problems: string[] } | { error: string };

let retiredCache: { source: string; did: string; current?: ReceiptKey; keys: RetiredKeys } | undefined;

/**
 * The public keys of earlier signing keys (`RECEIPT_RETIRED_KEYS`, a JSON array of public Ed25519
 * JWKs with their `kid`: the fragment, or the whole kid as jwks.json published it), listed beside
 * the current key (`current`, none while the signing key is unset or malformed) so receipts and
 * offers they signed still verify after a rotation (an idempotent replay serves an old receipt for
 * up to 24 h). The current key itself may be in the list (added before the rotation): it is listed
 * once. Parsed once per isolate and value.
 */
export function retiredKeys(value: string | undefined, did: string, current?: ReceiptKey): RetiredKeys {
  // A TOML table or array is no list this reads (varText would make it unset, dropped without a
  // word): said, so did.ts logs it as every unreadable list is.
  const raw: unknown = value;
  if (typeof raw === "object" && raw !== null)
    return { error: "RECEIPT_RETIRED_KEYS: not text (write it as a JSON string)" };
  const source = varText(value).trim();
  // `current` is receiptKey's memo: a new one means another secret or base URL.
  if (retiredCache?.source === source && retiredCache.did === did && retiredCache.current === current)
    return retiredCache.keys;
  retiredCache = { source, did, current, keys: parseRetired(source, did, current) };
  return retiredCache.keys;
}

/**
 * Each entry stands alone: one that cannot be published (a private half, another did, a kid
 * already another key's) is left out and named, and the others are still published. Refusing the
 * whole list for one mistake unpublished every older key with it, so every receipt those keys had
 * signed failed for the one slip of the latest rotation.
 */
function parseRetired(source: string, did: string, current?: ReceiptKey): RetiredKeys {
  if (!source) return { keys: [], problems: [] };
  const error = (why: string) => ({ error: `RECEIPT_RETIRED_KEYS: ${why}` });
  let list: unknown;
  try {
    list = JSON.parse(source);
  } catch {
    return error("not JSON (expected an array of public Ed25519 JWKs)");
  }
  if (!Array.isArray(list)) return error("expected a JSON array of public Ed25519 JWKs");
  const keys: PublicJwk[] = [];
  const problems: string[] = [];
  for (const [i, jwk] of list.entries()) {
    const entry = retiredEntry(jwk, did, current, keys);
    if (typeof entry === "string") problems.push(`RECEIPT_RETIRED_KEYS: entry ${i} left out: ${entry}`);
    else if (entry) keys.push(entry);
  }
  return { keys, problems };
}

/** The entry as published, undefined when it is a key already listed, or why it cannot be published. */
function retiredEntry(
  jwk: unknown,
  did: string,
  current: ReceiptKey | undefined,
  listed: PublicJwk[],
): PublicJwk | string | undefined {
  if (typeof jwk !== "object" || jwk === null) return "not a JWK";
  const e = jwk as Record<string, unknown>;
  // A private half in a plain var would be a leaked signing key: refused, never published.
  if ("d" in e) return "it holds a private key (d): list public keys only";
  if (e.kty !== "OKP" || e.crv !== "Ed25519" || typeof e.x !== "string" || !b64url.test(e.x))
    return 'not a public Ed25519 JWK ({"kty":"OKP","crv":"Ed25519","x","kid"})';
  // The signing key's `d` pasted as an `x` (both are 43 base64url characters) would publish the
  // private key. A string compare, once per isolate and value (retiredKeys is memoized); the value
  // is never put in the message.
  if (current?.isPrivateHalf(e.x))
    return "its x is the current RECEIPT_SIGNING_KEY's private half (d), not a public key: that key is leaked (the var is in wrangler.toml and the dashboard); rotate it as a leaked key (docs/OPERATIONS.md)";
  const fragment =
    typeof e.kid === "string" && e.kid.startsWith(`${did}#`) ? e.kid.slice(did.length + 1) : e.kid;
  if (typeof fragment !== "string" || !FRAGMENT.test(fragment))
    return `kid must be a fragment (1-64 of A-Z a-z 0-9 . _ -) or ${did}#<fragment>`;
  const kid = `${did}#${fragment}`;
  const currentJwk = current?.publicJwk;
  const same = currentJwk?.kid === kid ? currentJwk : listed.find((k) => k.kid === kid);
  // The current key under a retired key's kid: the rotation reused the kid, and receipts the
  // retired key signed name a kid that now selects the new key (they read as forged). Only a new
  // signing key with a kid of its own brings them back (docs/OPERATIONS.md, "Rotating the receipt signing key").
  if (same && same.x !== e.x)
    return same === currentJwk
      ? `${kid} is the current RECEIPT_SIGNING_KEY's kid, and this is another key: receipts that key signed do not verify until RECEIPT_SIGNING_KEY is put again with a new kid`
      : `${kid} is already another key of the list`;
  if (same) return undefined;
  return { kty: "OKP", crv: "Ed25519", x: e.x, alg: "EdDSA", use: "sig", kid };
}

/**
 * The did:web document that publishes the public keys (W3C DID Core, JsonWebKey2020): the current
 * one first (none while signing is off), then the retired ones, each also an assertion method
 * (receipts and offers are assertions).
 */
export function didDocument(did: string, keys: PublicJwk[]) {
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
    id: did,
    verificationMethod: keys.map((jwk) => ({
      id: jwk.kid,
      type: "JsonWebKey2020",
      controller: did,
      publicKeyJwk: jwk,
    })),
    assertionMethod: keys.map((jwk) => jwk.kid),
  };
}
