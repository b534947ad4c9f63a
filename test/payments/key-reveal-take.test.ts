import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { firstCallState } from "../../src/payments/checkout-first-call";
import { findSession } from "../../src/payments/checkout-sessions";
import { hashKey } from "../../src/payments/credits";
import { takeKeyReveal } from "../../src/payments/key-reveal";
import { type FaultMode, faultEnv } from "../fixtures/storage-faults";
import { cardEnv, grant, keyIn, revealPost, revealTokenFromPage, seedSession } from "./checkout-helpers";

const REQ = "req-reveal-take";
/** The take's compare-and-swap (key-reveal.ts). */
const TAKE = /SET api_key_reveal = NULL/;

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
    const key = await takeKeyReveal(env, id, REQ);
    expect(key).toMatch(/^mk_/);
    const keyRow = await env.DB.prepare("SELECT id FROM api_keys WHERE key_hash = ?1")
      .bind(await hashKey(key as string))
      .first<{ id: string }>();
    expect(keyRow?.id).toBe(row?.api_key_id);
    expect(await takeKeyReveal(env, id, REQ)).toBeUndefined();
  });

  it("is not consumed without the secret that opens it", async () => {
    const id = await seedSession("sha256", 170);
    await grant(id);
    expect(await takeKeyReveal({ ...env, STRIPE_SECRET_KEY: "" }, id, REQ)).toBeUndefined();
    expect(await takeKeyReveal(env, id, REQ)).toMatch(/^mk_/);
  });
});

describe("a take D1 answers with an error", () => {
  it("committed all the same: this request's mark says the key is its own to show", async () => {
    const id = await seedSession("sha256", 170);
    await grant(id);
    const { env: faulty } = faultEnv(env, { db: { n: 1, mode: "after", match: TAKE } });
    expect(await takeKeyReveal(faulty, id, REQ)).toMatch(/^mk_/);
    expect(await takeKeyReveal(env, id, "req-later")).toBeUndefined();
  });

  /** A granted pack's Reveal POST whose take fails as `mode` says; `again` sends it once more. */
  async function revealFailing(mode: FaultMode) {
    const id = await seedSession("sha256", 170);
    await grant(id);
    const token = (await revealTokenFromPage(id)) as string;
    const { env: faulty } = faultEnv(cardEnv, { db: { n: 1, mode, match: TAKE } });
    const res = await revealPost(id, token, {}, faulty);
    return { res, again: () => revealPost(id, token, {}, cardEnv) };
  }

  it("committed, on the Reveal page: the key is shown, and once", async () => {
    const { res, again: resend } = await revealFailing("after");
    expect(res.status).toBe(200);
    expect(keyIn(await res.text())).toMatch(/^mk_/);
    const again = await resend();
    expect(keyIn(await again.text())).toBeUndefined();
  });

  it("never ran: 503 with Retry-After and no key, and the Reveal sent again shows it", async () => {
    const { res, again: resend } = await revealFailing("throw");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("10");
    const body = await res.json<{ detail: string; reason: string }>();
    expect(body.reason).toBe("reveal_unavailable");
    expect(JSON.stringify(body)).not.toMatch(/mk_/);
    const again = await resend();
    expect(again.status).toBe(200);
    expect(keyIn(await again.text())).toMatch(/^mk_/);
  });
});
