import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { firstCallState } from "../../src/payments/checkout-first-call";
import { findSession } from "../../src/payments/checkout-sessions";
import { hashKey } from "../../src/payments/credits";
import { takeKeyReveal } from "../../src/payments/key-reveal";
import { grant, seedSession } from "./checkout-helpers";

/**
 * A checkout's row (checkout-sessions.ts), its first call (checkout-first-call.ts) and its key's one
 * reveal (key-reveal.ts, beside the sealing it undoes) each stand in their own module.
 */
describe("the key a grant sealed, taken from key-reveal.ts", () => {
  it("is handed out once, and is the key the pack's row names", async () => {
    const id = await seedSession("sha256", 170);
    await grant(id);
    const row = await findSession(env.DB, id);
    expect(firstCallState(row)).toBe("none");
    const key = await takeKeyReveal(env, id);
    expect(key).toMatch(/^mk_/);
    const keyRow = await env.DB.prepare("SELECT id FROM api_keys WHERE key_hash = ?1")
      .bind(await hashKey(key as string))
      .first<{ id: string }>();
    expect(keyRow?.id).toBe(row?.api_key_id);
    expect(await takeKeyReveal(env, id)).toBeUndefined();
  });

  it("is not consumed without the secret that opens it", async () => {
    const id = await seedSession("sha256", 170);
    await grant(id);
    expect(await takeKeyReveal({ ...env, STRIPE_SECRET_KEY: "" }, id)).toBeUndefined();
    expect(await takeKeyReveal(env, id)).toMatch(/^mk_/);
  });
});
