// Verifies a receipt of the marketplace (docs/receipts-and-retries.md): the JWS signature against
// the key published at /.well-known/did.json (did:web), and the SHA-256 of a saved body against
// the receipt's `bodySha256`. Shared by scripts/verify-receipt.mjs and the tests.
import { decodePaymentResponseHeader } from "@x402/core/http";
import {
  extractJWSHeader,
  extractJWSPayload,
  verifyReceiptSignatureJWS,
} from "@x402/extensions/offer-receipt";

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
 * Throws unless `did` (when given) may vouch for the receipt's `resourceUrl`: a key proves only
 * what the host of its did:web says, so anyone could sign a receipt for our URL with a did:web of
 * their own (offer-receipt spec §4.5.1: the verifier MUST confirm the key is authorised for
 * resourceUrl). The did must be the did:web of the resource's origin (port as %3A, host in lower
 * case, as the app writes its own), or of a path above the resource (a deployment whose BASE_URL
 * has a path). With `baseUrl`, the resource must also be one of that base URL's.
 */
export function checkIssuer(did, claims, baseUrl) {
  let url;
  try {
    url = new URL(claims?.resourceUrl);
  } catch {
    throw new Error("the receipt names no resourceUrl: nothing says which seller's key may sign it");
  }
  if (baseUrl) {
    const base = new URL(baseUrl).href.replace(/\/+$/, "");
    if (url.href !== base && !url.href.startsWith(`${base}/`))
      throw new Error(`the receipt is for ${url.href}, not for a resource of ${base}`);
  }
  if (did === undefined) return; // a key the caller gave (--key) vouches for itself
  const segments = url.pathname.split("/").filter(Boolean);
  const allowed = [url.origin];
  for (let i = 1; i < segments.length; i++) allowed.push(`${url.origin}/${segments.slice(0, i).join("/")}`);
  if (!allowed.some((above) => didWebOf(above) === did))
    throw new Error(
      `the receipt was signed by ${did}, which is not ${didWebOf(url.origin)} (the did:web of its resource ${url.href}): that key is not authorised for it`,
    );
}

/**
 * The public JWK the receipt's `kid` names, from the issuer's did.json. The kid's did must be the
 * one of the receipt's resourceUrl (checkIssuer; read here before anything is fetched, and checked
 * again by verifyReceipt on the signed claims), so a receipt signed by someone else's key does not
 * verify as ours. With `baseUrl` the document is fetched there and the kid must belong to that base
 * URL's did:web.
 */
export async function resolveKey(jws, { baseUrl, fetchImpl = fetch } = {}) {
  const { kid, alg } = extractJWSHeader(jws);
  if (!kid) throw new Error("the receipt names no key (JWS header without kid)");
  const did = kid.split("#")[0];
  if (baseUrl && did !== didWebOf(baseUrl))
    throw new Error(`the receipt was signed by ${did}, not by ${didWebOf(baseUrl)}`);
  checkIssuer(did, extractJWSPayload(jws), baseUrl);
  const url = baseUrl ? `${baseUrl.replace(/\/+$/, "")}/.well-known/did.json` : didDocumentUrl(did);
  const res = await fetchImpl(url, { headers: { accept: "application/did+json, application/json" } });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const doc = await res.json();
  const method = (doc.verificationMethod ?? []).find((m) => m.id === kid);
  if (!method?.publicKeyJwk) throw new Error(`${url} publishes no key ${kid}`);
  return { jwk: { alg, ...method.publicKeyJwk }, kid, did, url };
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Checks the signature with `jwk`; with `did` (the issuer resolveKey found the key at), that this
 * did may sign for the receipt's resourceUrl; with `baseUrl`, that the resource is that base URL's;
 * then (when `body` is given) that the body's SHA-256 is the one the receipt signed. Returns the
 * receipt's claims; throws with the reason on any mismatch.
 */
export async function verifyReceipt(jws, { jwk, body, did, baseUrl }) {
  let claims;
  try {
    claims = await verifyReceiptSignatureJWS({ format: "jws", signature: jws }, jwk);
  } catch (e) {
    throw new Error(`bad signature: ${e instanceof Error ? e.message : e}`);
  }
  if (did !== undefined || baseUrl) checkIssuer(did, claims, baseUrl);
  if (body !== undefined) {
    const actual = await sha256Hex(body);
    if (actual !== claims.bodySha256)
      throw new Error(
        `body does not match: its SHA-256 is ${actual}, the receipt signed ${claims.bodySha256}`,
      );
  }
  return claims;
}
