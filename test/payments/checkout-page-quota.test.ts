import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { revealToken } from "../../src/payments/key-reveal";
import {
  CHECKOUT_REVEAL_READS_PER_IP,
  CHECKOUT_REVEAL_READS_PER_SESSION,
  CHECKOUT_STRIPE_READS_PER_MINUTE,
  LIMITS,
} from "../../src/payments/quotas";
import { freshWindow, installWindowGuard, ONE_MORE_RUN } from "../fixtures/rate-window";
import { createCheckout, EMULATOR, granted, keyIn, keysFor, pay } from "./checkout-helpers";

const app = createApp();
const limitedEnv = { ...env, RATE_LIMITS: "on" };

const page = (id: string, ip: string, method: "GET" | "HEAD" = "GET") =>
  app.fetch(
    new Request(`https://skills.test/checkout/success?session_id=${id}`, {
      method,
      headers: { "cf-connecting-ip": ip },
    }),
    limitedEnv,
  );

/** The Reveal POST with the page's valid token, from `ip`; the first call it starts finished. */
async function reveal(id: string, ip: string) {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`https://skills.test/checkout/success?session_id=${id}`, {
      method: "POST",
      headers: { "cf-connecting-ip": ip, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: await revealToken(env.STRIPE_SECRET_KEY as string, id) }),
    }),
    limitedEnv,
    ctx,
  );
  const body = await res.text();
  await waitOnExecutionContext(ctx);
  return { res, body };
}

/** Spends an IP's minute of the views' Stripe reads (`checkout-stripe|ip:…`): all of it, or `times`. */
async function spend(
  budget: "checkout-stripe",
  ip: string,
  times: number = CHECKOUT_STRIPE_READS_PER_MINUTE,
) {
  for (let i = 0; i < times; i++) {
    await env.RL_PAYER_HEAVY.limit({ key: `${budget}|ip:${ip}` });
  }
}

/** Spends a minute of the Reveal's Stripe reads: one session's (RL_FREE) or one IP's cap (RL_PAYER). */
async function spendReveal(of: { session: string } | { ip: string }) {
  const [limiter, key, times] =
    "session" in of
      ? [env.RL_FREE, `checkout-reveal|session:${of.session}`, CHECKOUT_REVEAL_READS_PER_SESSION]
      : [env.RL_PAYER, `checkout-reveal|ip:${of.ip}`, CHECKOUT_REVEAL_READS_PER_IP];
  for (let i = 0; i < times; i++) await limiter.limit({ key });
}

const POSTPONED = "We could not check with Stripe just now";

/** How often the app has read this session from Stripe (the emulator counts its API requests). */
const stripeReads = async (id: string) =>
  (
    await (
      await fetch(
        `${EMULATOR}/_emulator/requests?match=${encodeURIComponent(`GET /v1/checkout/sessions/${id}`)}`,
      )
    ).json<{ count: number }>()
  ).count;

const randomIp = () => `10.${[0, 0, 0].map(() => Math.floor(Math.random() * 250) + 1).join(".")}`;

/** A checkout paid at Stripe (its webhook late), seen from an IP whose views spent their Stripe reads. */
async function paidWithViewsSpent() {
  await freshWindow();
  const ip = randomIp();
  const id = await createCheckout("sha256");
  await pay(id);
  await spend("checkout-stripe", ip);
  return { ip, id };
}

describe("the public success page cannot spend Stripe's rate limit", ONE_MORE_RUN, () => {
  installWindowGuard();

  it("reloads and HEADs of one open session read Stripe once in a few seconds, not once each", async () => {
    // Paid, webhook late: the page asks Stripe, the state in which it refreshes itself.
    const id = await createCheckout("sha256");
    await pay(id);
    const ip = randomIp();
    const first = await page(id, ip);
    expect(first.status).toBe(200);
    expect(await first.text()).toContain("Payment received");
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push((await page(id, ip)).status, (await page(id, ip, "HEAD")).status);
    }
    const together = await Promise.all(Array.from({ length: 20 }, () => page(id, randomIp())));
    expect(new Set([...statuses, ...together.map((r) => r.status)])).toEqual(new Set([200]));
    expect(await stripeReads(id)).toBe(1);
  });

  it("a HEAD reads nothing from Stripe and spends none of its IP's reads: a GET from that IP still asks Stripe", async () => {
    await freshWindow();
    const ip = randomIp();
    // Paid at Stripe, the webhook late: the state in which a GET asks Stripe.
    const [headed, viewed] = await Promise.all([createCheckout("sha256"), createCheckout("sha256")]);
    await Promise.all([pay(headed), pay(viewed)]);
    // One read left in this IP's minute.
    await spend("checkout-stripe", ip, CHECKOUT_STRIPE_READS_PER_MINUTE - 1);
    const heads = [await page(headed, ip, "HEAD"), await page(headed, ip, "HEAD")];
    for (const head of heads) {
      expect(head.status).toBe(200);
      expect(head.headers.get("cache-control")).toBe("no-store");
      expect(head.headers.get("x-robots-tag")).toBe("noindex, nofollow");
      expect(head.headers.get("content-type")).toMatch(/^text\/html/);
      // Answered as a GET whose check with Stripe was postponed: from D1 the session still waits
      // for its payment, so it says when to ask again, where the GET below, which sees it paid, does not.
      expect(head.headers.get("refresh")).toBe("3");
      expect(await head.text()).toBe("");
    }
    expect(await stripeReads(headed)).toBe(0);
    // Before, the first HEAD spent that last read, and this GET was told the check was postponed.
    const view = await page(viewed, ip);
    expect(view.headers.get("refresh")).toBeNull();
    const body = await view.text();
    expect(body).not.toContain(POSTPONED);
    expect(body).toContain("Payment received");
    expect(await stripeReads(viewed)).toBe(1);
    // An unknown session's HEAD is the GET's 404, as before.
    expect((await page("cs_test_made_up_head", ip, "HEAD")).status).toBe(404);
  }, 120_000);

  it(`one IP gets ${LIMITS.RL_IP} success-page requests a minute, then 429 without a Stripe read; other IPs are untouched`, async () => {
    await freshWindow();
    const ip = randomIp();
    const open = await createCheckout("sha256");
    const statuses = new Set<number>();
    for (let i = 0; i < LIMITS.RL_IP; i++) {
      statuses.add((await page(`cs_test_made_up_${i}`, ip, i % 2 ? "HEAD" : "GET")).status);
    }
    expect([...statuses]).toEqual([404]);
    const limited = await page(open, ip);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(await limited.json()).toMatchObject({ reason: "rate_limited", scope: "ip", retry_after: 60 });
    expect(await stripeReads(open)).toBe(0);
    // The Reveal POST counts against the same budget.
    const post = await app.fetch(
      new Request(`https://skills.test/checkout/success?session_id=${open}`, {
        method: "POST",
        headers: { "cf-connecting-ip": ip, "content-type": "application/x-www-form-urlencoded" },
        body: "token=x",
      }),
      limitedEnv,
    );
    expect(post.status).toBe(429);
    expect((await page(open, randomIp())).status).toBe(200);
    expect(await stripeReads(open)).toBe(1);
  }, 120_000);

  it(`views cycling through many open sessions start at most ${CHECKOUT_STRIPE_READS_PER_MINUTE} Stripe reads a minute per IP; past it the page answers from D1`, async () => {
    await freshWindow();
    const ip = randomIp();
    // Sessions are free to create: 20, open (one of them paid at Stripe, its webhook late).
    const open = await Promise.all(Array.from({ length: 20 }, () => createCheckout("sha256")));
    await pay(open[0] as string);
    const { id: done } = await granted();
    // Three rounds, each after the kept views (5 s by this isolate's Date.now) are gone: 60 views
    // that would each read Stripe. The isolate's clock is moved on instead of waited out; the
    // rate limiter counts on miniflare's own clock, whose minute the rounds stay in.
    const statuses = new Set<number>();
    const pages: string[] = [];
    const realNow = Date.now.bind(Date);
    let ahead = 0;
    const clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + ahead);
    try {
      for (let round = 0; round < 3; round++) {
        if (round) ahead += 5_100;
        for (const id of open) {
          const res = await page(id, ip);
          statuses.add(res.status);
          pages.push(await res.text());
        }
      }
    } finally {
      clock.mockRestore();
    }
    expect([...statuses]).toEqual([200]);
    const reads = (await Promise.all(open.map(stripeReads))).reduce((a, b) => a + b, 0);
    expect(reads).toBe(CHECKOUT_STRIPE_READS_PER_MINUTE);
    // Past the budget the page answers from D1, saying so: the session paid at Stripe (open[0])
    // reads as paid in round 1 and as waiting, its check with Stripe postponed, in round 3.
    expect(pages[0]).toContain("Payment received");
    const paidFromD1 = pages[40] as string;
    expect(paidFromD1).not.toContain("Payment received");
    expect(paidFromD1).toContain("Waiting for the payment");
    expect(paidFromD1).toContain(POSTPONED);
    expect(paidFromD1).not.toContain("Stripe has not confirmed");
    expect(paidFromD1).toContain('data-refresh="3"');
    // A session D1 holds granted reads nothing and is shown paid, from the same IP.
    const readsBefore = await stripeReads(done);
    const grantedPage = await page(done, ip);
    expect(grantedPage.status).toBe(200);
    expect(await grantedPage.text()).toContain("Payment received");
    expect(await stripeReads(done)).toBe(readsBefore);
    // Another IP still reads Stripe: the paid session's page says so.
    const other = await page(open[0] as string, randomIp());
    expect(await other.text()).toContain("Payment received");
  }, 120_000);

  it("a Reveal POST reads Stripe on a budget of its own: GET views that spent theirs leave a paid buyer's key to it; spent too, the page says the check was postponed", async () => {
    // Paid at Stripe, the webhook late; this IP's views have spent their minute of Stripe reads.
    const { ip, id } = await paidWithViewsSpent();
    const view = await page(id, ip);
    expect(view.status).toBe(200);
    const waiting = await view.text();
    expect(waiting).toContain("Waiting for the payment");
    expect(waiting).toContain(POSTPONED);
    expect(waiting).not.toContain("Stripe has not confirmed");
    expect(waiting).toContain('data-refresh="3"');
    expect(await stripeReads(id)).toBe(0);
    // The buyer's Reveal from the same IP reads Stripe, grants and shows the key.
    const { res, body } = await reveal(id, ip);
    expect(res.status).toBe(200);
    expect(body).toContain("Payment received");
    expect(keyIn(body)).toMatch(/^mk_/);
    expect((await keysFor(id)).results).toHaveLength(1);
    expect(await stripeReads(id)).toBe(1);

    // With the session's Reveal budget spent, nothing is granted, and the page says why and when.
    const other = await createCheckout("sha256");
    await pay(other);
    await spendReveal({ session: other });
    const held = await reveal(other, ip);
    expect(held.res.status).toBe(200);
    expect(held.res.headers.get("retry-after")).toBe("60");
    expect(held.body).toContain(POSTPONED);
    expect(held.body).toContain("Try again in a minute");
    expect(held.body).not.toContain("Stripe has not confirmed");
    expect(held.body).not.toContain("data-refresh");
    expect((await keysFor(other)).results).toHaveLength(0);
    expect(await stripeReads(other)).toBe(0);
    // The budget is the session's, whatever IP asks.
    expect((await reveal(other, randomIp())).body).toContain(POSTPONED);
    expect(await stripeReads(other)).toBe(0);

    // An IP's cap held back too (one holder of many tokens), another IP's Reveal grants at once.
    const third = await createCheckout("sha256");
    await pay(third);
    await spendReveal({ ip });
    expect((await reveal(third, ip)).body).toContain(POSTPONED);
    expect(await stripeReads(third)).toBe(0);
    expect(keyIn((await reveal(third, randomIp())).body)).toMatch(/^mk_/);
  }, 120_000);

  it("Reveal POSTs from the buyer's IP on other sessions, with their own tokens, do not hold back the buyer's", async () => {
    await freshWindow();
    const ip = randomIp();
    const id = await createCheckout("sha256");
    await pay(id);
    // A neighbour on the same network: 30 free sessions of their own, each POSTed with its token.
    const theirs = await Promise.all(Array.from({ length: 30 }, () => createCheckout("sha256")));
    for (const session of theirs) {
      const { res, body } = await reveal(session, ip);
      expect(res.status).toBe(200);
      expect(body).toContain("Stripe has not confirmed");
    }
    const { res, body } = await reveal(id, ip);
    expect(res.status).toBe(200);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(body).not.toContain(POSTPONED);
    expect(keyIn(body)).toMatch(/^mk_/);
    expect((await keysFor(id)).results).toHaveLength(1);
  }, 120_000);

  it("concurrent views of one open session share one Stripe read and spend the budget once", async () => {
    await freshWindow();
    const ip = randomIp();
    const [a, b] = await Promise.all([createCheckout("sha256"), createCheckout("sha256")]);
    const views = await Promise.all(
      Array.from({ length: CHECKOUT_STRIPE_READS_PER_MINUTE }, () => page(a as string, ip)),
    );
    expect(new Set(views.map((r) => r.status))).toEqual(new Set([200]));
    for (const v of views) expect(await v.text()).not.toContain(POSTPONED);
    expect(await stripeReads(a as string)).toBe(1);
    // The budget has 29 reads left: another session's view reads Stripe.
    const next = await page(b as string, ip);
    expect(await next.text()).not.toContain(POSTPONED);
    expect(await stripeReads(b as string)).toBe(1);
  }, 120_000);

  it("a Reveal POST that joined views' read their spent budget held back asks its own budget and grants", async () => {
    const { ip, id } = await paidWithViewsSpent();
    // The first view starts a read its budget holds back; the second view and the POST join it.
    const [first, second, posted] = await Promise.all([page(id, ip), page(id, ip), reveal(id, ip)]);
    expect(await first.text()).toContain(POSTPONED);
    expect(await second.text()).toContain(POSTPONED);
    expect(posted.res.status).toBe(200);
    expect(posted.body).not.toContain(POSTPONED);
    expect(keyIn(posted.body)).toMatch(/^mk_/);
    expect((await keysFor(id)).results).toHaveLength(1);
    expect(await stripeReads(id)).toBe(1);
  }, 120_000);

  it("a page whose check with Stripe the views' budget postponed offers the Reveal, which checks Stripe on its own budget", async () => {
    const { ip, id } = await paidWithViewsSpent();
    const view = await page(id, ip);
    expect(view.status).toBe(200);
    const waiting = await view.text();
    expect(waiting).toContain(POSTPONED);
    expect(waiting).toContain("Check payment and reveal my key");
    expect(waiting).toContain("/assets/buy.js");
    const token = waiting.match(/name="token" value="([^"]+)"/)?.[1];
    expect(token).toBe(await revealToken(env.STRIPE_SECRET_KEY as string, id));
    expect(await stripeReads(id)).toBe(0);
    const { res, body } = await reveal(id, ip);
    expect(res.status).toBe(200);
    expect(keyIn(body)).toMatch(/^mk_/);
    expect(await stripeReads(id)).toBe(1);

    // Unpaid, the button's POST grants nothing and says so, without claiming the page updates itself.
    const unpaid = await createCheckout("sha256");
    const postponed = await page(unpaid, ip);
    expect(await postponed.text()).toContain("Check payment and reveal my key");
    const asked = await reveal(unpaid, ip);
    expect(asked.body).toContain("Stripe has not confirmed");
    expect(asked.body).not.toContain("updates by itself");
    expect(asked.body).toContain("open the checkout page");
    expect((await keysFor(unpaid)).results).toHaveLength(0);
    // Its session's budget spent, the POST's postponed answer offers the button again.
    const spent = await createCheckout("sha256");
    await spendReveal({ session: spent });
    const held = await reveal(spent, ip);
    expect(held.res.headers.get("retry-after")).toBe("60");
    expect(held.body).toContain(POSTPONED);
    expect(held.body).toContain("Check payment and reveal my key");
    // No refresh to bring buy.js along: the page loads it for the button's form (sent once).
    expect(held.body).not.toContain("data-refresh");
    expect(held.body).toContain("/assets/buy.js");
  }, 120_000);
});
