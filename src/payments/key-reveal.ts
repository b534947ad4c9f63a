import type { Bindings } from "../env";
import { varText } from "../var-text";

/**
 * The clear card-credit key must survive from the grant (webhook) to the success page, which
 * shows it once. It waits there sealed: AES-GCM under a key derived (HKDF) from the Stripe
 * secret key and the session id, so a copy of D1 alone reveals no unshown key. Rotating the
 * Stripe key before the buyer opens the page makes that one key unshowable (documented). It is
 * opened there once (takeKeyReveal), and the page's form proves it is ours (revealToken).
 */
const INFO = new TextEncoder().encode("agent-skills card-credit key reveal v1");

async function sealingKey(secret: string, sessionId: string) {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new TextEncoder().encode(sessionId), info: INFO },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

const toB64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromB64 = (text: string) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));

/** `v1.<iv>.<ciphertext>`, base64; the session id is bound in as associated data too. */
export async function sealKey(secret: string, sessionId: string, key: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(sessionId) },
    await sealingKey(secret, sessionId),
    new TextEncoder().encode(key),
  );
  return `v1.${toB64(iv)}.${toB64(new Uint8Array(sealed))}`;
}

/** The clear key, or undefined when it cannot be opened (other secret, tampered row). */
export async function openKey(
  secret: string,
  sessionId: string,
  sealed: string,
): Promise<string | undefined> {
  const [version, iv, data] = sealed.split(".");
  if (version !== "v1" || !iv || !data) return undefined;
  try {
    const clear = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromB64(iv), additionalData: new TextEncoder().encode(sessionId) },
      await sealingKey(secret, sessionId),
      fromB64(data),
    );
    return new TextDecoder().decode(clear);
  } catch {
    return undefined;
  }
}

/**
 * The reveal form's CSRF token: HMAC-SHA256 of the session id under a key derived (HKDF) from the
 * Stripe secret. Stateless (no cookie, nothing written when the page is shown, so GET and HEAD stay
 * pure); a cross-site page cannot read it (same-origin policy), so it cannot make a buyer's browser
 * burn the reveal; and it names one session, so a token never opens another.
 */
async function formKey(secret: string) {
  const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: new Uint8Array(0),
      info: new TextEncoder().encode("agent-skills key reveal form token v1"),
    },
    material,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

const b64url = (bytes: Uint8Array) => toB64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

export async function revealToken(secret: string, sessionId: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await formKey(secret), new TextEncoder().encode(sessionId));
  return b64url(new Uint8Array(mac));
}

/** Constant-time check (SubtleCrypto verify) of a token sent back by the reveal form. */
export async function checkRevealToken(secret: string, sessionId: string, token: string): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
  const mac = Uint8Array.from(atob(token.replace(/-/g, "+").replace(/_/g, "/")), (ch) => ch.charCodeAt(0));
  return crypto.subtle.verify("HMAC", await formKey(secret), mac, new TextEncoder().encode(sessionId));
}

/**
 * The clear key, handed out once: compare-and-swap so two reveals cannot both see it. The swap
 * writes `requestId` (migration 0027): when D1 answers it with an error it may still have
 * committed, and then only that mark tells this request's swap from a concurrent Reveal's. So the
 * row is read again: `requestId` there is the key, this request's to show; the sealed key still
 * in place throws (the swap did not run as far as D1 says, and the answer says to try again,
 * whose swap takes it); neither is undefined ("already shown": another Reveal took it). A re-read
 * that fails throws too.
 */
export async function takeKeyReveal(
  env: Bindings,
  sessionId: string,
  requestId: string,
): Promise<string | undefined> {
  const db = env.DB;
  // Never consume the one reveal without the secret that opens it.
  const secret = varText(env.STRIPE_SECRET_KEY);
  if (!secret) return undefined;
  const row = await db
    .prepare("SELECT api_key_reveal FROM checkout_sessions WHERE id = ?1")
    .bind(sessionId)
    .first<{ api_key_reveal: string | null }>();
  if (!row?.api_key_reveal) return undefined;
  const sealed = row.api_key_reveal;
  const taken = await db
    .prepare(
      "UPDATE checkout_sessions SET api_key_reveal = NULL, api_key_revealed_by = ?3 WHERE id = ?1 AND api_key_reveal = ?2",
    )
    .bind(sessionId, sealed, requestId)
    .run()
    .then(
      (r) => r.meta.changes === 1,
      (e: unknown) => swapOutcome(db, sessionId, sealed, requestId, e),
    );
  if (!taken) return undefined;
  return openKey(secret, sessionId, sealed);
}

/** Whether a swap D1 answered with an error took the reveal for `requestId`; throws `e` when unknown. */
async function swapOutcome(db: D1Database, sessionId: string, sealed: string, requestId: string, e: unknown) {
  const now = await db
    .prepare("SELECT api_key_reveal, api_key_revealed_by FROM checkout_sessions WHERE id = ?1")
    .bind(sessionId)
    .first<{ api_key_reveal: string | null; api_key_revealed_by: string | null }>();
  if (now?.api_key_revealed_by === requestId) return true;
  // Still there: the swap never ran, and a retry takes it.
  if (now?.api_key_reveal === sealed) throw e;
  // Taken by another Reveal (it showed the key).
  return false;
}
