// Verifies a receipt of the marketplace (docs/receipts-and-retries.md): the JWS signature against
// the key published at /.well-known/did.json (did:web), and the SHA-256 of a saved body against
// the receipt's `bodySha256`. Shared by scripts/verify-receipt.mjs and the tests.
import { decodePaymentResponseHeader } from "@x402/core/http";
import { extractJWSHeader, verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt";

const JWS = /[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/;

/**
 * The receipt JWS in a text: the JWS itself, an `X-Payment-Receipt: …` header line (or a whole
 * header dump), or a PAYMENT-RESPONSE value whose offer-receipt extension holds it.
 */
export function findReceipt(text) {
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:x-)?payment-response\s*:\s*(\S+)/i.exec(line);
    const value = m ? m[1] : line.trim();
    if (!value || JWS.test(value)) continue;
    try {
      const receipt = decodePaymentResponseHeader(value).extensions?.["offer-receipt"]?.info?.receipt;
      if (receipt?.format === "jws") return receipt.signature;
    } catch {}
  }
  const found = JWS.exec(text);
  if (!found) throw new Error("no receipt (JWS compact string) found in the input");
  return found[0];
}

/** `did:web` of a base URL (the host, a port percent-encoded). */
export function didWebOf(baseUrl) {
  const url = new URL(baseUrl);
  const host = url.port ? `${url.hostname}%3A${url.port}` : url.hostname;
  const path = url.pathname.replace(/\/+$/, "");
  return `did:web:${host}${path ? path.split("/").join(":") : ""}`;
}

/** Where a did:web document lives (did:web method spec; plain http only for a local host). */
export function didDocumentUrl(did) {
  const [domainPart, ...pathParts] = did.replace(/^did:web:/, "").split(":");
  const domain = decodeURIComponent(domainPart);
  const host = domain.split(":")[0];
  const scheme = host === "localhost" || host === "127.0.0.1" ? "http" : "https";
  return pathParts.length
    ? `${scheme}://${domain}/${pathParts.map(decodeURIComponent).join("/")}/did.json`
    : `${scheme}://${domain}/.well-known/did.json`;
}

/**
 * The public JWK the receipt's `kid` names, from the issuer's did.json. With `baseUrl` the
 * document is fetched there and the kid must belong to that base URL's did:web (a receipt signed
 * by someone else's key does not verify as ours).
 */
export async function resolveKey(jws, { baseUrl, fetchImpl = fetch } = {}) {
  const { kid, alg } = extractJWSHeader(jws);
  if (!kid) throw new Error("the receipt names no key (JWS header without kid)");
  const did = kid.split("#")[0];
  if (baseUrl && did !== didWebOf(baseUrl))
    throw new Error(`the receipt was signed by ${did}, not by ${didWebOf(baseUrl)}`);
  const url = baseUrl ? `${baseUrl.replace(/\/+$/, "")}/.well-known/did.json` : didDocumentUrl(did);
  const res = await fetchImpl(url, { headers: { accept: "application/did+json, application/json" } });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const doc = await res.json();
  const method = (doc.verificationMethod ?? []).find((m) => m.id === kid);
  if (!method?.publicKeyJwk) throw new Error(`${url} publishes no key ${kid}`);
  return { jwk: { alg, ...method.publicKeyJwk }, kid, url };
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Checks the signature with `jwk`, then (when `body` is given) that the body's SHA-256 is the one
 * the receipt signed. Returns the receipt's claims; throws with the reason on any mismatch.
 */
export async function verifyReceipt(jws, { jwk, body }) {
  let claims;
  try {
    claims = await verifyReceiptSignatureJWS({ format: "jws", signature: jws }, jwk);
  } catch (e) {
    throw new Error(`bad signature: ${e instanceof Error ? e.message : e}`);
  }
  if (body !== undefined) {
    const actual = await sha256Hex(body);
    if (actual !== claims.bodySha256)
      throw new Error(
        `body does not match: its SHA-256 is ${actual}, the receipt signed ${claims.bodySha256}`,
      );
  }
  return claims;
}
