import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { postJson } from "../helpers";
import { emulatorPost, stripe } from "./checkout-helpers";

/** POST /api/cardpay/checkout from a client address, with an optional Idempotency-Key. */
const create = (body: unknown, ip: string, key?: string) =>
  postJson("/api/cardpay/checkout", body, {
    "cf-connecting-ip": ip,
    ...(key === undefined ? {} : { "idempotency-key": key }),
  });

const sessionOf = async (res: Response) => {
  expect(res.status).toBe(200);
  return (await res.json<{ session_id: string }>()).session_id;
};

describe("a client's Idempotency-Key is scoped to the caller's network", () => {
  it("the same key and body from two buyers' addresses make two sessions; a retry from the same address replays", async () => {
    // Agents pick keys like these: counters, or a hash of the body.
    const key = `checkout-${crypto.randomUUID().slice(0, 8)}`;
    const body = { skill_id: "sha256", payload: { text: "same body" } };
    const a = await sessionOf(await create(body, "198.51.100.7", key));
    const b = await sessionOf(await create(body, "203.0.113.9", key));
    // Buyer B never gets buyer A's session (its id is what reveals A's key).
    expect(b).not.toBe(a);
    expect(await sessionOf(await create(body, "198.51.100.7", key))).toBe(a);
    expect(await sessionOf(await create(body, "203.0.113.9", key))).toBe(b);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM checkout_sessions WHERE id IN (?1, ?2)")
      .bind(a, b)
      .first<{ n: number }>();
    expect(rows?.n).toBe(2);
  });

  it("over IPv6 the scope is the /64: another host of the same LAN replays, another /64 does not", async () => {
    const key = crypto.randomUUID();
    const body = { skill_id: "slugify" };
    const a = await sessionOf(await create(body, "2001:db8:5:7::1", key));
    expect(await sessionOf(await create(body, "2001:DB8:5:7:a1b2:c3d4:e5f6:7", key))).toBe(a);
    expect(await sessionOf(await create(body, "2001:db8:5:8::1", key))).not.toBe(a);
    // An IPv4 address written IPv4-mapped is that IPv4 address.
    const v4 = await sessionOf(await create(body, "192.0.2.44", key));
    expect(await sessionOf(await create(body, "::ffff:192.0.2.44", key))).toBe(v4);
    expect(v4).not.toBe(a);
  });
});

/** A pack size no other test buys, so an injected failure hits only this test's creates. */
const uniqueCalls = () => 10 * (2_000 + Math.floor(Math.random() * 7_000));

/** Arms the emulator: the next `times` creates of a pack of `calls` fail inside Stripe (500). */
const failCreates = (calls: number, times = 1) =>
  emulatorPost("/_emulator/fail-creates", { match: `metadata[calls]=${calls}`, times: String(times) });

const detailOf = async (res: Response) => (await res.json<{ detail: string }>()).detail;

describe("Stripe replays a stored failure for the same idempotency key", () => {
  it("the emulator, like Stripe, answers a repeated key with the stored 500; a new key creates", async () => {
    const calls = uniqueCalls();
    await failCreates(calls);
    const params = {
      mode: "payment" as const,
      line_items: [
        { quantity: 1, price_data: { currency: "usd", unit_amount: 500, product_data: { name: "x" } } },
      ],
      success_url: "https://skills.test/ok",
      metadata: { calls: String(calls) },
    };
    const key = crypto.randomUUID();
    const first = await stripe.checkout.sessions.create(params, { idempotencyKey: key }).catch((e) => e);
    expect(first).toMatchObject({ statusCode: 500, type: "StripeAPIError" });
    const again = await stripe.checkout.sessions.create(params, { idempotencyKey: key }).catch((e) => e);
    expect(again).toMatchObject({ statusCode: 500, type: "StripeAPIError" });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(
      (await stripe.checkout.sessions.create(params, { idempotencyKey: crypto.randomUUID() })).id,
    ).toMatch(/^cs_test_/);
  });

  it("with a client key, the 502 says to retry with a new key: the same key gets the same failure", async () => {
    const quantity = uniqueCalls();
    const body = { skill_id: "sha256", quantity };
    await failCreates(quantity);
    const key = crypto.randomUUID();
    const failed = await create(body, "198.51.100.20", key);
    expect(failed.status).toBe(502);
    expect(await detailOf(failed)).toMatch(/retry with a new Idempotency-Key/);
    // What the old answer ("try again") led to: the same key, the same stored failure.
    const same = await create(body, "198.51.100.20", key);
    expect(same.status).toBe(502);
    expect(await detailOf(same)).toMatch(/new Idempotency-Key/);
    expect((await create(body, "198.51.100.20", crypto.randomUUID())).status).toBe(200);
  });

  it("without a client key, the 502 says try again, and trying again works", async () => {
    const quantity = uniqueCalls();
    const body = { skill_id: "sha256", quantity };
    await failCreates(quantity);
    const failed = await create(body, "198.51.100.21");
    expect(failed.status).toBe(502);
    expect(await detailOf(failed)).toBe("Stripe did not create the checkout session; try again.");
    expect((await create(body, "198.51.100.21")).status).toBe(200);
  });

  it("a connection that failed may have stored a result: with a client key, retry with a new one", async () => {
    const down = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
        body: JSON.stringify({ skill_id: "sha256" }),
      }),
      { ...env, STRIPE_API_BASE: "http://127.0.0.1:9" },
    );
    expect(down.status).toBe(502);
    expect(await detailOf(down)).toMatch(/retry with a new Idempotency-Key/);
  });
});
