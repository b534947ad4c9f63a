import type { JWSSigner } from "@x402/extensions/offer-receipt";

/**
 * The key that signs offers and receipts: `RECEIPT_SIGNING_KEY` is a private Ed25519 JWK as JSON
 * (`{"kty":"OKP","crv":"Ed25519","d":"…","x":"…","kid":"…"}`; `kid` optional). A JWK keeps the
 * public half (`x`) next to the private one, so the did:web document needs no key derivation.
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
  const fragment =
    typeof jwk.kid === "string" && /^[A-Za-z0-9._-]{1,64}$/.test(jwk.kid) ? jwk.kid : DEFAULT_KEY_FRAGMENT;
  const kid = `${did}#${fragment}`;
  const { d, x } = jwk;
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
