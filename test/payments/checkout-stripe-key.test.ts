import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { emulatorEvents, emulatorPost, eventOf, pay, remote, sessionEvent, signed } from "./checkout-helpers";

/** A Worker whose STRIPE_SECRET_KEY is a restricted key the emulator knows (test/stripe-setup.ts). */
function withKey(key: string) {
  const app = createApp();
  const e = { ...env, STRIPE_SECRET_KEY: key };
  return {
    checkout: async (body: unknown) => {
      const res = await app.fetch(
        new Request("https://skills.test/api/cardpay/checkout", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
        e,
      );
      expect(res.status).toBe(200);
      return (await res.json<{ session_id: string }>()).session_id;
    },
    webhook: async (event: unknown) => {
      const { payload, header } = await signed(event);
      return app.fetch(
        new Request("https://skills.test/api/cardpay/webhook", {
          method: "POST",
          headers: { "stripe-signature": header },
          body: payload,
        }),
        e,
      );
    },
  };
}

const DOCUMENTED = "rk_test_unit_tests_documented_permissions";
const NO_DISPUTES = "rk_test_unit_tests_without_disputes_read";

/** A pack bought and granted with the documented key, and a dispute opened on its payment. */
async function disputedPack() {
  const worker = withKey(DOCUMENTED);
  const id = await worker.checkout({ skill_id: "sha256" });
  await pay(id);
  const granted = await worker.webhook(await sessionEvent("checkout.session.completed", id));
  expect(await granted.json()).toMatchObject({ outcome: "granted" });
  const pi = (await remote(id)).payment_intent as string;
  const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
  const created = (await emulatorEvents("charge.dispute.created")).find(
    (e) => e.data.object.id === dispute.id,
  );
  return { worker, created, pi };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a restricted Stripe key", () => {
  it("with the permissions the docs list, runs checkout, grant, dispute and a failed refund", async () => {
    const { worker, created, pi } = await disputedPack();
    expect(await (await worker.webhook(created)).json()).toMatchObject({ outcome: "frozen" });
    const refund = await emulatorPost("/v1/refunds", { payment_intent: pi, amount: "17" });
    await emulatorPost(`/_emulator/refunds/${refund.id}/fail`, {});
    const updated = (await emulatorEvents("charge.refund.updated")).find(
      (e) => e.data.object.id === refund.id,
    );
    // Its refunds were listed (no 502): the failed one leaves nothing refunded, nothing to change.
    expect(await (await worker.webhook(updated)).json()).toMatchObject({ outcome: "unchanged" });
  });

  it("without Disputes: Read, a dispute is a 502 logged as a configuration error naming the permission", async () => {
    const { created } = await disputedPack();
    const logs: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => {
      logs.push(String(line));
    });
    const res = await withKey(NO_DISPUTES).webhook(created);
    // Still a 502: Stripe redelivers, and the dispute freezes the key once the key may read it.
    expect(res.status).toBe(502);
    const line = logs
      .map((l) => JSON.parse(l) as Record<string, string>)
      .find((l) => l.call === "readDispute");
    expect(line?.level).toBe("error");
    expect(line?.msg).toMatch(
      /^stripe configuration error: STRIPE_SECRET_KEY is a restricted key without Disputes: Read/,
    );
    expect(await (await withKey(DOCUMENTED).webhook(created)).json()).toMatchObject({ outcome: "frozen" });
  });

  it("a key Stripe does not accept is logged as a configuration error too", async () => {
    const logs: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => {
      logs.push(String(line));
    });
    const res = await withKey("rk_test_unit_tests_unknown_key").webhook(
      eventOf("checkout.session.completed", { id: "cs_test_any", object: "checkout.session" }),
    );
    expect(res.status).toBe(502);
    expect(logs.join("\n")).toMatch(/stripe configuration error: Stripe does not accept STRIPE_SECRET_KEY/);
  });
});
