/**
 * The clear card-credit key must survive from the grant (webhook) to the success page, which
 * shows it once. It waits there sealed: AES-GCM under a key derived (HKDF) from the Stripe
 * secret key and the session id, so a copy of D1 alone reveals no unshown key. Rotating the
 * Stripe key before the buyer opens the page makes that one key unshowable (documented).
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
