import type { JWSSigner } from "@x402/extensions/offer-receipt";

/**
 * The key that signs offers and receipts: `RECEIPT_SIGNING_KEY` is a private Ed25519 JWK as JSON
 * (`{"kty":"OKP","crv":"Ed25519","d":"…","x":"…","kid":"…"}`; `kid` optional). A JWK keeps the
 * public half (`x`) next to the private one; did.json publishes it once parse has checked it is
 * `d`'s. A key that fails any check is malformed: no offers, no receipts, did.json 503.
 * JWS algorithm EdDSA (RFC 8037), signed with WebCrypto in the Worker.
 */
export interface ReceiptKey {
  /** `did:web:<host>` of this deployment. */
  did: string;
  /** `did:web:<host>#<fragment>`: the JWS `kid`, and the verification method in did.json. */
  kid: string;
  publicJwk: { kty: "OKP"; crv: "Ed25519"; x: string; alg: "EdDSA"; use: "sig"; kid: string };
  signer: JWSSigner;
}

export const DEFAULT_KEY_FRAGMENT = "receipts-1";

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
export function receiptKey(secret: string | undefined, baseUrl: string): ReceiptKey | { error: string } {
  // Compared before didWebOf: its URL parse showed in the profile of every unpaid 402.
  if (cached && cached.source === (secret ?? "") && cached.baseUrl === baseUrl) return cached.key;
  cached = { source: secret ?? "", baseUrl, key: parse(secret, didWebOf(baseUrl)) };
  return cached.key;
}

function parse(secret: string | undefined, did: string): ReceiptKey | { error: string } {
  if (!secret) return { error: "RECEIPT_SIGNING_KEY is not set" };
  let jwk: Record<string, unknown>;
  try {
    jwk = JSON.parse(secret);
  } catch {
    return { error: "RECEIPT_SIGNING_KEY is not JSON (expected a private Ed25519 JWK)" };
  }
  const b64url = /^[A-Za-z0-9_-]{43}$/;
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.d !== "string" || typeof jwk.x !== "string")
    return {
      error: 'RECEIPT_SIGNING_KEY must be a private Ed25519 JWK ({"kty":"OKP","crv":"Ed25519","d","x"})',
    };
  if (!b64url.test(jwk.d) || !b64url.test(jwk.x))
    return { error: "RECEIPT_SIGNING_KEY: d and x must be 32-byte base64url values" };
  // A kid we cannot publish as a DID fragment is refused, not replaced: a key quietly published
  // under another name than its operator gave it is a rotation gone wrong nobody is told about.
  if (jwk.kid !== undefined && (typeof jwk.kid !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(jwk.kid)))
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

/** The did:web document that publishes the public key (W3C DID Core, JsonWebKey2020). */
export function didDocument(key: ReceiptKey) {
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
    id: key.did,
    verificationMethod: [
      { id: key.kid, type: "JsonWebKey2020", controller: key.did, publicKeyJwk: key.publicJwk },
    ],
    assertionMethod: [key.kid],
  };
}
