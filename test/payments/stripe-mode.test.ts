import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { callIn, deliver, keysFor, seedSession, sessionEvent, signed } from "./checkout-helpers";

/**
 * What a deployment's Stripe configuration does when it is wrong: a webhook secret that is not the
 * endpoint's, a key of the other mode than STRIPE_MODE, an event of the other mode.
 */
afterEach(() => vi.restoreAllMocks());

/** The JSON lines written to console.error and console.warn from here on. */
function logLines() {
  const lines: Record<string, unknown>[] = [];
  const keep = (line: unknown) => {
    lines.push(JSON.parse(String(line)));
  };
  vi.spyOn(console, "error").mockImplementation(keep);
  vi.spyOn(console, "warn").mockImplementation(keep);
  return lines;
}

describe("a webhook whose signature does not verify", () => {
  it("is a 400 and one warn line a minute per isolate (anyone can send one), without the secret or the payload", async () => {
    // A time no other test logged at: the minute starts with this test.
    const t0 = Date.now() + 7 * 24 * 3600_000 + Math.floor(Math.random() * 1e9);
    vi.spyOn(Date, "now").mockReturnValue(t0);
    const lines = logLines();
    const wrongSecret = "whsec_not_this_endpoints_secret_0000";
    const event = {
      id: "evt_sig",
      object: "event",
      type: "charge.refunded",
      data: { object: { id: "ch_1" } },
    };
    for (let i = 0; i < 3; i++) expect((await deliver(event, wrongSecret)).status).toBe(400);
    const refused = lines.filter((l) => l.msg === "stripe webhook signature invalid");
    expect(refused).toEqual([
      { level: "warn", msg: "stripe webhook signature invalid", request_id: expect.any(String) },
    ]);
    const text = JSON.stringify(lines);
    expect(text).not.toContain(wrongSecret);
    expect(text).not.toContain(env.STRIPE_WEBHOOK_SECRET as string);
    expect(text).not.toContain("ch_1");
    // A lasting problem keeps showing: the next minute logs again.
    vi.spyOn(Date, "now").mockReturnValue(t0 + 61_000);
    expect((await deliver(event, wrongSecret)).status).toBe(400);
    expect(lines.filter((l) => l.msg === "stripe webhook signature invalid")).toHaveLength(2);
  });
});

describe("STRIPE_MODE", () => {
  it.each([
    [
      { STRIPE_SECRET_KEY: ` ${env.STRIPE_SECRET_KEY}` },
      /^STRIPE_SECRET_KEY is neither a live nor a test key/,
    ],
    [{ STRIPE_MODE: "Live" }, /^STRIPE_MODE "Live" is neither "live" nor "test"$/],
  ])("%j turns card payments off: checkout and webhook 503, logged", async (vars, error) => {
    const lines = logLines();
    const res = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ skill_id: "sha256" }),
      }),
      { ...env, ...vars },
    );
    expect(res.status).toBe(503);
    const { payload, header } = await signed({ id: "evt_mode", object: "event", type: "charge.refunded" });
    const hook = await callIn({ ...env, ...vars }, "/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    });
    expect(hook.res.status).toBe(503);
    const catalog = await (
      await createApp().fetch(new Request("https://skills.test/api/catalog"), { ...env, ...vars })
    ).json<{ cardpay_enabled: boolean }>();
    expect(catalog.cardpay_enabled).toBe(false);
    expect(lines.filter((l) => l.msg === "stripe key mode mismatch: card payments are off")).toEqual([
      {
        level: "error",
        msg: "stripe key mode mismatch: card payments are off",
        error: expect.stringMatching(error),
      },
    ]);
  });

  it("a test-mode key at a live deployment turns card payments off (503, cardpay_enabled false), logged once", async () => {
    const live = { ...env, STRIPE_MODE: "live", STRIPE_SECRET_KEY: `sk_test_${crypto.randomUUID()}` };
    const lines = logLines();
    const app = createApp();
    const checkout = () =>
      app.fetch(
        new Request("https://skills.test/api/cardpay/checkout", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ skill_id: "sha256" }),
        }),
        live,
      );
    const first = await checkout();
    expect(first.status).toBe(503);
    expect(await first.json()).toEqual({
      detail: expect.stringMatching(/^Card payments are not configured/),
    });
    expect((await checkout()).status).toBe(503);
    const { payload, header } = await signed({
      id: "evt_other_mode",
      object: "event",
      type: "charge.refunded",
    });
    const hook = await callIn(live, "/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    });
    expect(hook.res.status).toBe(503);
    const catalog = await (await app.fetch(new Request("https://skills.test/api/catalog"), live)).json<{
      cardpay_enabled: boolean;
    }>();
    expect(catalog.cardpay_enabled).toBe(false);
    expect(lines.filter((l) => l.msg === "stripe key mode mismatch: card payments are off")).toEqual([
      {
        level: "error",
        msg: "stripe key mode mismatch: card payments are off",
        error: 'STRIPE_SECRET_KEY is a test-mode key and STRIPE_MODE is "live"',
      },
    ]);
    expect(JSON.stringify(lines)).not.toContain(live.STRIPE_SECRET_KEY);
    // The same key where the deployment says test mode (the tests' own bindings) sells.
    expect(env.STRIPE_MODE).toBe("test");
  });

  it.each([
    // Made every checkout and webhook a 500.
    [{ STRIPE_API_BASE: "not a url" }, /^STRIPE_API_BASE is not an absolute http\(s\) URL$/],
    [{ STRIPE_API_BASE: "   " }, /^STRIPE_API_BASE is not an absolute http\(s\) URL$/],
    // An emulator elsewhere than loopback left in a live deployment: the live key would be sent to it.
    [
      {
        STRIPE_MODE: "live",
        STRIPE_SECRET_KEY: `sk_live_${crypto.randomUUID()}`,
        STRIPE_API_BASE: "https://stripe-emulator.staging.dev",
      },
      /^STRIPE_API_BASE points the live key at stripe-emulator\.staging\.dev, not Stripe/,
    ],
  ])(
    "STRIPE_API_BASE %j that cannot carry the key: checkout and webhook 503, logged",
    async (vars, error) => {
      const e = { ...env, ...vars };
      const lines = logLines();
      const app = createApp();
      const checkout = await app.fetch(
        new Request("https://skills.test/api/cardpay/checkout", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ skill_id: "sha256" }),
        }),
        e,
      );
      expect(checkout.status).toBe(503);
      expect(await checkout.json()).toEqual({
        detail: expect.stringMatching(/^Card payments are not configured/),
      });
      const { payload, header } = await signed({ id: "evt_base", object: "event", type: "charge.refunded" });
      const { res } = await callIn(e, "/api/cardpay/webhook", {
        method: "POST",
        headers: { "stripe-signature": header },
        body: payload,
      });
      expect(res.status).toBe(503);
      expect(lines.filter((l) => /^stripe /.test(String(l.msg)))).toEqual([
        {
          level: "error",
          msg: "stripe api base refused: card payments are off",
          error: expect.stringMatching(error),
        },
      ]);
    },
  );

  it("a webhook event of the other mode is acknowledged and not acted on", async () => {
    const id = await seedSession();
    const lines = logLines();
    const event = { ...(await sessionEvent("checkout.session.completed", id)), livemode: true };
    const res = await deliver(event, undefined, env);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, ignored: "livemode true" });
    expect((await keysFor(id)).results).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: "stripe webhook event of the other mode ignored",
        livemode: true,
      }),
    );
    // The same event in this deployment's mode grants the pack.
    const ours = await deliver({ ...event, id: `${event.id}_test`, livemode: false }, undefined, env);
    expect(ours.status).toBe(200);
    expect((await keysFor(id)).results).toHaveLength(1);
  });

  it("a signed event is never acted on while the deployment's key is of the other mode (503, Stripe redelivers)", async () => {
    const live = { ...env, STRIPE_MODE: "live" };
    logLines();
    const { payload, header } = await signed({
      id: "evt_mode",
      object: "event",
      type: "charge.refunded",
      livemode: false,
    });
    const { res } = await callIn(live, "/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    });
    expect(res.status).toBe(503);
  });
});
