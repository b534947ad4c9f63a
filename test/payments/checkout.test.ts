import { env } from "cloudflare:test";
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { runFirstPayload } from "../../src/payments/checkout-first-call";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { openKey, sealKey } from "../../src/payments/key-reveal";
import { callsLeft, keyWith as newKey } from "../fixtures/credits";
import { call, postJson } from "../helpers";
import {
  cardEnv,
  deliver,
  eventOf,
  FIRST_CALL_COSTS,
  firstCallResult,
  keyIn,
  keysFor,
  newEventId,
  revealPost,
  revealTokenFromPage,
  seedSession,
  signed,
} from "./checkout-helpers";

function completedEvent(sessionId: string, id = newEventId(), paid = true) {
  // What the event body claims; the Worker decides from Stripe's own state of the session.
  return eventOf(
    "checkout.session.completed",
    {
      id: sessionId,
      object: "checkout.session",
      status: "complete",
      payment_status: paid ? "paid" : "unpaid",
    },
    id,
  );
}
describe("POST /api/cardpay/checkout", () => {
  it.each([
    ["sha256", undefined, 170, 0.51],
    ["research", undefined, 34, 0.51],
    ["osint_graph", undefined, 50, 0.5],
    ["seo", undefined, 45, 0.54],
    ["json_sort", 1000, 1000, 3],
  ])(
    "%s (quantity %s) sells the smallest whole-cent pack over $0.50: %d calls for $%d",
    async (skill_id, quantity, calls, usd) => {
      const res = await postJson("/api/cardpay/checkout", { skill_id, quantity });
      expect(res.status).toBe(200);
      const body = await res.json<{
        session_id: string;
        checkout_url: string;
        calls: number;
        amount_usd: number;
        skill_id: string;
      }>();
      expect(body).toMatchObject({ skill_id, calls, amount_usd: usd });
      expect(body.session_id).toMatch(/^cs_test_/);
      expect(body.checkout_url).toContain(`/pay/${body.session_id}`);
      const row = await env.DB.prepare(
        "SELECT calls, amount_cents, status FROM checkout_sessions WHERE id = ?1",
      )
        .bind(body.session_id)
        .first();
      expect(row).toEqual({ calls, amount_cents: Math.round(usd * 100), status: "open" });
      const remote = await new Stripe(env.STRIPE_SECRET_KEY as string, {
        httpClient: Stripe.createFetchHttpClient(),
        host: "127.0.0.1",
        port: Number(new URL(env.STRIPE_API_BASE as string).port),
        protocol: "http",
      }).checkout.sessions.retrieve(body.session_id);
      expect(remote.amount_total).toBe(Math.round(usd * 100));
      expect(remote.success_url).toBe(
        "https://skills.test/checkout/success?session_id={CHECKOUT_SESSION_ID}",
      );
      expect(remote.cancel_url).toBe(`https://skills.test/checkout/cancel?skill_id=${skill_id}`);
    },
  );

  it("unknown skill is 404 JSON; bad bodies are 422", async () => {
    expect((await postJson("/api/cardpay/checkout", { skill_id: "nope" })).status).toBe(404);
    expect((await postJson("/api/cardpay/checkout", {})).status).toBe(422);
    expect((await postJson("/api/cardpay/checkout", { skill_id: "sha256", quantity: 0 })).status).toBe(422);
    expect((await postJson("/api/cardpay/checkout", { skill_id: "sha256", payload: "x" })).status).toBe(422);
  });

  it.each([
    ["key", { STRIPE_SECRET_KEY: undefined }],
    // Without the webhook's secret refunds and disputes could never take credits back.
    ["webhook secret", { STRIPE_WEBHOOK_SECRET: undefined }],
  ])(
    "without a Stripe %s: checkout and webhook 503, and the catalog says cardpay_enabled false",
    async (_name, unset) => {
      const app = createApp();
      const noStripe = { ...env, ...unset };
      const res = await app.fetch(
        new Request("https://skills.test/api/cardpay/checkout", {
          method: "POST",
          body: '{"skill_id":"sha256"}',
        }),
        noStripe,
      );
      expect(res.status).toBe(503);
      const hook = await app.fetch(
        new Request("https://skills.test/api/cardpay/webhook", {
          method: "POST",
          headers: { "stripe-signature": "t=1,v1=00" },
          body: "{}",
        }),
        noStripe,
      );
      expect(hook.status).toBe(503);
      const catalog = await (await app.fetch(new Request("https://skills.test/api/catalog"), noStripe)).json<{
        cardpay_enabled: boolean;
      }>();
      expect(catalog.cardpay_enabled).toBe(false);
    },
  );
});

describe("POST /api/cardpay/webhook", () => {
  it("refuses a missing or wrong signature and grants nothing", async () => {
    const id = await seedSession();
    const missing = await call("/api/cardpay/webhook", {
      method: "POST",
      body: JSON.stringify(completedEvent(id)),
    });
    expect(missing.status).toBe(400);
    expect((await deliver(completedEvent(id), "whsec_wrong")).status).toBe(400);
    const { payload, header } = await signed(completedEvent(id));
    const tampered = await call("/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload.replace('"paid"', '"paid" '),
    });
    expect(tampered.status).toBe(400);
    expect((await keysFor(id)).results).toEqual([]);
  });

  it("a valid completed event grants the pack once", async () => {
    const id = await seedSession("sha256", 170);
    const res = await deliver(completedEvent(id));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ outcome: "granted" });
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
  });

  it("redelivered, concurrent and second events for one session grant nothing more", async () => {
    const id = await seedSession("slugify", 170);
    const event = completedEvent(id, "evt_dup_1");
    expect((await deliver(event)).status).toBe(200);
    expect(await (await deliver(event)).json()).toMatchObject({ outcome: "duplicate_event" });
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, () => deliver(completedEvent(id, "evt_dup_2"))),
    );
    expect(concurrent.every((r) => r.status === 200)).toBe(true);
    expect(await (await deliver(completedEvent(id, "evt_other"))).json()).toMatchObject({
      outcome: "already_granted",
    });
    expect((await keysFor(id)).results).toHaveLength(1);

    const fresh = await seedSession("slugify", 170);
    await Promise.all(Array.from({ length: 10 }, () => deliver(completedEvent(fresh, "evt_race"))));
    expect((await keysFor(fresh)).results).toHaveLength(1);
  });

  it("an unpaid completion grants nothing; other events are acknowledged", async () => {
    // Stripe still has the session open (unpaid), whatever the signed event body says.
    const id = await seedSession("sha256", 170, undefined, false);
    expect(await (await deliver(completedEvent(id, undefined, false))).json()).toMatchObject({
      granted: false,
    });
    expect((await keysFor(id)).results).toEqual([]);
    // The buyer's page waits for Stripe and refreshes itself meanwhile.
    const waiting = await call(`/checkout/success?session_id=${id}`);
    expect(waiting.headers.get("refresh")).toBe("3");
    expect(await waiting.text()).toContain("Waiting for the payment");
    const other = await deliver({
      id: "evt_x",
      object: "event",
      type: "payment_intent.created",
      data: { object: {} },
    });
    expect(await other.json()).toMatchObject({ received: true, ignored: "payment_intent.created" });
  });

  it.each(FIRST_CALL_COSTS)(
    "runs the checkout's payload once as the first call and spends a credit only if it succeeds and payments are on ($mode)",
    async ({ bindings, spent }) => {
      const good = await seedSession("slugify", 170, { text: "First Call!" });
      await deliver(completedEvent(good), undefined, bindings);
      expect(await firstCallResult(good)).toMatchObject({
        status: 200,
        body: { slug: "first-call" },
      });
      // In free beta no call takes a credit, and the first call is one: before, it was the only one.
      expect((await keysFor(good)).results).toEqual([{ calls_left: 170 - spent, calls_total: 170 }]);

      // The schema is checked at checkout (a bad payload is a 422 before Stripe): this one passes it,
      // and sha256 refuses it while running (ascii cannot hold "é").
      const bad = await seedSession("sha256", 170, { text: "é", encoding: "ascii" });
      await deliver(completedEvent(bad), undefined, bindings);
      expect((await firstCallResult(bad)).status).toBe(422);
      expect((await keysFor(bad)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
    },
  );

  it("a first call that finishes after the key's last credit was spent shows no answer and takes nothing", async () => {
    // N credits must never buy N+1 results: the buyer spends every credit while the first call runs.
    const id = await seedSession("slugify", 2, { text: "Late Call" });
    await deliver(completedEvent(id), undefined, cardEnv);
    await firstCallResult(id);
    const rerun = async (callsLeft: number, bindings: object = cardEnv) => {
      await env.DB.batch([
        env.DB.prepare(
          "UPDATE checkout_sessions SET payload_result = NULL, payload_started_at = NULL WHERE id = ?1",
        ).bind(id),
        env.DB.prepare("UPDATE api_keys SET calls_left = ?2 WHERE session_id = ?1").bind(id, callsLeft),
      ]);
      await runFirstPayload(bindings as typeof env, id);
      return { result: await firstCallResult(id), left: (await keysFor(id)).results[0]?.calls_left };
    };
    expect(await rerun(0)).toEqual({
      result: { status: 402, body: expect.objectContaining({ charged: false }) },
      left: 0,
    });
    // A disputed pack's first call is not run at all (test/payments/checkout-first-call-held.test.ts).
    expect(await rerun(1)).toMatchObject({ result: { status: 200, body: { slug: "late-call" } }, left: 0 });
    // In free beta a key with no credit left calls for free, as any call then: so does its first call.
    expect(await rerun(0, env)).toMatchObject({
      result: { status: 200, body: { slug: "late-call" } },
      left: 0,
    });
    expect(await rerun(1, env)).toMatchObject({ result: { status: 200 }, left: 1 });
  });
});

describe("spending credits", () => {
  const paidEnv = { ...env, FREE_BETA: "false", X402_ENABLED: "false" };
  const keyWith = (calls: number, skill = "sha256") => newKey(env.DB, calls, skill);
  const app = createApp();
  const callWith = (key: string, body: unknown = { text: "abc" }, path = "/api/skills/sha256") =>
    app.fetch(
      new Request(`https://skills.test${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      }),
      paidEnv,
    );
  const left = (key: string) => callsLeft(env.DB, key);

  it("a credit pays for a call and the balance header counts down", async () => {
    const key = await keyWith(2);
    const res = await callWith(key);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-remaining")).toBe("1");
    expect(await left(key)).toBe(1);
  });

  it("20 concurrent calls with 1 credit left: exactly one 200", async () => {
    const key = await keyWith(1);
    const statuses = (await Promise.all(Array.from({ length: 20 }, () => callWith(key)))).map(
      (r) => r.status,
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 402)).toHaveLength(19);
    expect(await left(key)).toBe(0);
  });

  it("a failed call spends nothing", async () => {
    const key = await keyWith(1);
    const res = await callWith(key, { text: "é", encoding: "ascii" });
    expect(res.status).toBe(422);
    expect(await left(key)).toBe(1);
    expect((await callWith(key, { text: 5 })).status).toBe(422);
    expect(await left(key)).toBe(1);
  });

  it("unknown key 401, malformed key 401, other skill's key 403, exhausted 402", async () => {
    expect((await callWith(newApiKey())).status).toBe(401);
    expect((await callWith("mk_short")).status).toBe(401);
    const other = await keyWith(3, "slugify");
    expect((await callWith(other)).status).toBe(403);
    const empty = await keyWith(0);
    const res = await callWith(empty);
    expect(res.status).toBe(402);
    // Card on, x402 off (this describe's deployment): the checkout only, with the body to send, and
    // that it sells a new key ("Buy more" read as a top-up of this one).
    expect((await res.json<{ detail: string }>()).detail).toBe(
      'This key has no sha256 credits left. Buy a new pack with POST /api/cardpay/checkout {"skill_id":"sha256"}: it comes with a new key (a key cannot be topped up).',
    );
    // The note names only the ways to pay this deployment has on (a checkout that is off answers 503).
    const noteWith = async (over: Record<string, string>) => {
      const res = await app.fetch(
        new Request("https://skills.test/api/skills/sha256", {
          method: "POST",
          headers: { authorization: `Bearer ${empty}` },
          body: JSON.stringify({ text: "abc" }),
        }),
        { ...paidEnv, ...over },
      );
      expect(res.status).toBe(402);
      const body = await res.json<{ detail?: string; error?: string }>();
      return body.detail ?? body.error ?? "";
    };
    const fixture = `${new URL(env.WIKIPEDIA_API_BASE).origin}/facilitator`;
    const both = await noteWith({ X402_ENABLED: "true", FACILITATOR_URL: fixture });
    expect(both).toMatch(
      /^This key has no sha256 credits left\. Buy a new pack with POST \/api\/cardpay\/checkout \{"skill_id":"sha256"\}: it comes with a new key \(a key cannot be topped up\), or pay this call with x402\./,
    );
    const x402Only = await noteWith({
      STRIPE_SECRET_KEY: "",
      X402_ENABLED: "true",
      FACILITATOR_URL: fixture,
    });
    expect(x402Only).toMatch(/^This key has no sha256 credits left\. Pay this call with x402/);
    expect(x402Only).not.toContain("cardpay");
    const neither = await noteWith({ STRIPE_SECRET_KEY: "" });
    expect(neither).toMatch(/no sha256 credits left\. This deployment takes no other payment now/);
    expect(neither).not.toMatch(/cardpay|pay this call with x402/i);
    // Without a key either, the 402 says the same.
    const keyless = await app.fetch(
      new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"abc"}' }),
      { ...paidEnv, STRIPE_SECRET_KEY: "" },
    );
    expect(keyless.status).toBe(402);
    expect((await keyless.json<{ detail: string }>()).detail).toMatch(/takes no payment now/);
  });

  it("GET /api/credits shows what is left; 401 without a known key", async () => {
    const key = await keyWith(7);
    const res = await call("/api/credits", { headers: { authorization: `Bearer ${key}` } });
    expect(await res.json()).toMatchObject({ skill_id: "sha256", calls_total: 7, calls_left: 7 });
    expect((await call("/api/credits")).status).toBe(401);
    expect((await call("/api/credits", { headers: { authorization: `Bearer ${newApiKey()}` } })).status).toBe(
      401,
    );
  });
});

describe("checkout pages", () => {
  const HOSTILE = `"><script>alert(1)</script><img src=x onerror=alert(2)>`;

  it("success without session_id is 422; an unknown or hostile id is an escaped 404 page", async () => {
    expect((await call("/checkout/success")).status).toBe(422);
    const res = await call(`/checkout/success?session_id=${encodeURIComponent(HOSTILE)}`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
  });

  it("cancel echoes a hostile skill_id escaped and links back to real docs", async () => {
    const hostile = await (await call(`/checkout/cancel?skill_id=${encodeURIComponent(HOSTILE)}`)).text();
    expect(hostile).not.toContain("<script>alert(1)");
    expect(hostile).toContain("&lt;script&gt;");
    const real = await (await call("/checkout/cancel?skill_id=json_sort")).text();
    expect(real).toContain('href="/docs/json-sort"');
    expect(real).toContain('href="/applet?skill=json_sort"');
    expect((await call("/checkout/cancel")).status).toBe(200);
  });

  it.each(FIRST_CALL_COSTS)(
    "the success page shows the key exactly once, on the Reveal POST, with calls left and the first call's result ($mode)",
    async ({ bindings, spent, ran }) => {
      const id = await seedSession("slugify", 170, { text: "Hi There" });
      await deliver(completedEvent(id), undefined, bindings);
      await firstCallResult(id);
      // Until it is shown, the key waits sealed: nothing in D1 is the key or contains it.
      const waiting = await env.DB.prepare("SELECT * FROM checkout_sessions WHERE id = ?1").bind(id).first();
      expect(JSON.stringify(waiting)).not.toContain("mk_");
      const page = await (await call(`/checkout/success?session_id=${id}`)).text();
      expect(keyIn(page)).toBeUndefined();
      expect(page).toContain("Reveal my key");
      const token = await revealTokenFromPage(id);
      const first = await (await revealPost(id, token as string, {}, bindings)).text();
      const key = keyIn(first);
      expect(key).toBeTruthy();
      const stored = await env.DB.prepare("SELECT * FROM api_keys WHERE session_id = ?1").bind(id).first();
      expect(JSON.stringify(stored)).not.toContain(key as string);
      expect(stored?.key_hash).toBe(await hashKey(key as string));
      expect(first).toContain(`<dd id="calls-left">${170 - spent}</dd>`);
      expect(first).toContain("hi-there");
      expect(first).toContain(ran);
      const second = await (await revealPost(id, token as string)).text();
      expect(second).not.toContain(key as string);
      expect(second).toContain("already shown once");
      const later = await (await call(`/checkout/success?session_id=${id}`)).text();
      expect(later).not.toContain(key as string);
      expect(later).toContain("already shown once");
      expect(later).not.toContain("Reveal my key");
      // A buyer back here has usually lost the key: the page says whom to write to, and what then.
      expect(later).toContain(`<a href="mailto:${env.CONTACT_EMAIL}">${env.CONTACT_EMAIL}</a>`);
      expect(later).toContain("a new checkout gives a new key");
    },
  );
});

describe("the sealed key waiting for its success page", () => {
  it("opens only with the same Stripe secret and session id, and not after tampering", async () => {
    const key = newApiKey();
    const sealed = await sealKey("sk_test_a", "cs_test_1", key);
    expect(sealed).not.toContain(key);
    expect(await openKey("sk_test_a", "cs_test_1", sealed)).toBe(key);
    expect(await openKey("sk_test_b", "cs_test_1", sealed)).toBeUndefined();
    expect(await openKey("sk_test_a", "cs_test_2", sealed)).toBeUndefined();
    const [v, iv, data] = sealed.split(".");
    const flipped = `${v}.${iv}.${data?.startsWith("A") ? `B${data.slice(1)}` : `A${data?.slice(1)}`}`;
    expect(await openKey("sk_test_a", "cs_test_1", flipped)).toBeUndefined();
    expect(await openKey("sk_test_a", "cs_test_1", key)).toBeUndefined();
  });
});
