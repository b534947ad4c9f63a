import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call } from "../helpers";
import {
  callIn,
  cardEnv,
  deliver,
  firstCallResult,
  granted,
  keyIn,
  keysFor,
  makeRefund,
  outcomeOf,
  revealPost,
  revealTokenFromPage,
  seedSession,
  sessionEvent,
} from "../payments/checkout-helpers";

const page = async (id: string) => (await call(`/checkout/success?session_id=${id}`)).text();

describe("the Reveal my key form", () => {
  it("is sent once: the page loads buy.js, which disables the button and says Revealing… on submit", async () => {
    const id = await seedSession("sha256", 170);
    await deliver(await sessionEvent("checkout.session.completed", id));
    const html = await page(id);
    const form = /<form method="post"[^>]*>[\s\S]*?<\/form>/.exec(html)?.[0] ?? "";
    expect(form).toContain('id="reveal"');
    expect(form).toContain('data-once="Revealing…"');
    expect(html).toContain('<script src="/assets/buy.js" defer="">');
    // The script as Workers Assets serves it guards every data-once form (src/browser/once-form.ts).
    const buyJs = await (await env.ASSETS.fetch("https://skills.test/assets/buy.js")).text();
    expect(buyJs).toContain("form[data-once]");
  });
});

describe("the first call's progress on the success page", () => {
  const setClaim = (id: string, startedAt: number) =>
    env.DB.prepare(
      "UPDATE checkout_sessions SET payload_result = NULL, payload_started_at = ?2 WHERE id = ?1",
    )
      .bind(id, startedAt)
      .run();
  /** Granted, and its first call made to look held by a run in another isolate. */
  async function granted(text: string) {
    const id = await seedSession("slugify", 170, { text });
    await deliver(await sessionEvent("checkout.session.completed", id));
    // Its real run finished here; undone (answer and credit), as if it were still running.
    await firstCallResult(id);
    await setClaim(id, Date.now());
    await env.DB.prepare("UPDATE api_keys SET calls_left = calls_total WHERE session_id = ?1").bind(id).run();
    return { id, token: (await revealTokenFromPage(id)) as string };
  }

  it("the reveal POST while a live run holds it says so without promising to check again; it links to the GET page, which checks every 3 s", async () => {
    const { id } = await granted("Live Run");
    const token = (await revealTokenFromPage(id)) as string;
    const post = await revealPost(id, token);
    const html = await post.text();
    expect(keyIn(html)).toBeTruthy();
    expect(post.headers.get("refresh")).toBeNull();
    expect(html).toContain("Running…");
    expect(html).not.toContain("this page updates");
    expect(html).toContain(`<a href="/checkout/success?session_id=${id}">open the success page</a>`);
    const get = await call(`/checkout/success?session_id=${id}`);
    expect(get.headers.get("refresh")).toBe("3");
    expect(await get.text()).toContain("Running… this page updates when its answer is here.");
  }, 30_000);

  it("a run that died stops the GET page's checks; it says so and its Run it now POST runs the call once", async () => {
    const { id, token } = await granted("Run Died Later");
    expect(keyIn(await (await revealPost(id, token)).text())).toBeTruthy();
    await setClaim(id, Date.now() - 10 * 60_000);
    const get = await call(`/checkout/success?session_id=${id}`);
    const html = await get.text();
    expect(get.headers.get("refresh")).toBeNull();
    expect(html).toContain("It did not finish: the server running it stopped. No credit was spent for it.");
    const form = /<form method="post"[^>]*>[\s\S]*?<\/form>/.exec(html)?.[0] ?? "";
    expect(form).toContain('id="rerun"');
    expect(form).toContain(`value="${token}"`);
    expect(form).toContain('data-once="Running…"');
    // Payments on, so its credit shows it ran once (free beta takes none: checkout.test.ts).
    const rerun = await (await revealPost(id, token, {}, cardEnv)).text();
    expect(rerun).toContain("run-died-later");
    expect(keyIn(rerun)).toBeUndefined();
    expect((await firstCallResult(id)).status).toBe(200);
    expect((await keysFor(id)).results).toEqual([{ calls_left: 169, calls_total: 170 }]);
    const after = await call(`/checkout/success?session_id=${id}`);
    expect(after.headers.get("refresh")).toBeNull();
    expect(await after.text()).not.toContain('id="rerun"');
  }, 30_000);

  it("a run that died before the key was revealed: no checks; the Reveal button runs it", async () => {
    const { id } = await granted("Died Before Reveal");
    await setClaim(id, Date.now() - 10 * 60_000);
    const get = await call(`/checkout/success?session_id=${id}`);
    const html = await get.text();
    expect(get.headers.get("refresh")).toBeNull();
    expect(html).toContain("it runs when you reveal your key");
    expect(html).toContain("Reveal my key");
    expect(html).not.toContain('id="rerun"');
  }, 30_000);

  it("paid but not granted yet (late webhook): the first call is not said to be running", async () => {
    const id = await seedSession("slugify", 170, { text: "Late" });
    const html = await page(id);
    expect(html).toContain("Not run yet: it runs when you reveal your key.");
    expect(html).not.toContain("Running…");
  });
});

describe("a checkout this site does not know", () => {
  it("tells a buyer who paid whom to write to, not only to contact support", async () => {
    const res = await call("/checkout/success?session_id=cs_test_never_created_here");
    expect(res.status).toBe(404);
    const html = await res.text();
    expect(html).toContain("We do not know this checkout");
    expect(html).toContain(
      `contact support (<a href="mailto:${env.CONTACT_EMAIL}">${env.CONTACT_EMAIL}</a>) with this id`,
    );
  });

  it.each([
    ["empty", ""],
    ["not an address", "support"],
    ["with its own mail headers", "help@skills.test?cc=someone@else.test&body=hi"],
  ])("names plain support, no mail link, when CONTACT_EMAIL is %s", async (_, email) => {
    const path = "/checkout/success?session_id=cs_test_never_created_here";
    const html = await (await callIn({ ...env, CONTACT_EMAIL: email }, path)).res.text();
    expect(html).toContain("If you paid, contact support with this id.");
    expect(html).not.toContain("mailto:");
  });
});

describe("the success page of a pack whose key was shown, after its payment was refunded", () => {
  it("says the payment was refunded and that a new checkout gives a new key; it offers no refund", async () => {
    const { id, pi } = await granted();
    const token = (await revealTokenFromPage(id)) as string;
    expect(keyIn(await (await revealPost(id, token)).text())).toBeTruthy();
    const { event } = await makeRefund(pi);
    await outcomeOf(await deliver(event));
    const html = await page(id);
    expect(html).toContain('<h1 id="checkout-heading">Payment refunded</h1>');
    const gone = /<p id="key-gone"[^>]*>([\s\S]*?)<\/p>/.exec(html)?.[1] ?? "";
    expect(gone).toContain(
      "The payment was refunded, so its key makes no call: a new checkout gives a new key.",
    );
    expect(gone).not.toContain("can be refunded");
  });
});
