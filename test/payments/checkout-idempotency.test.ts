import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";

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
