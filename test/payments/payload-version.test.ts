import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { authorizationKey, claimAuthorization, recordSettledPayment } from "../../src/payments/ledger";
import { authorizationFor } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// What a payer writes in its payload (`x402Version`, `accepted`) never decides which claim its
// authorization takes or what the ledger records: a v1 payload inside the v2 PAYMENT-SIGNATURE
// header was matched by @x402/core on scheme and network only, so a forged `accepted` (another
// asset, amount 1) gave the same authorization a second claim, a second run, a second settle and a
// ledger row of 1 unit of a made-up token.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const PAYER = "0x00000000000000000000000000000000000a0001"; // the facilitator double settles it
const ROUTE = "/api/skills/sha256";
const FORGED_ASSET = "0x0000000000000000000000000000000000000bad";
const SIGNATURE = `0x${"11".repeat(65)}`;

function post(body: unknown, headers: Record<string, string> = {}) {
  return app.fetch(
    new Request(`https://skills.test${ROUTE}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );
}

async function offer() {
  const res = await post({});
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
  return { required, accepted: required.accepts[0] as PaymentRequirements };
}

const claimsOf = (nonce: string) =>
  env.DB.prepare("SELECT nonce, status FROM payment_nonces WHERE auth_nonce = ?1")
    .bind(nonce)
    .all<{ nonce: string; status: string }>()
    .then((r) => r.results);
const ledgerOf = (nonce: string) =>
  env.DB.prepare(
    `SELECT p.amount_atomic, p.asset, p.pay_to, p.network FROM payments p
     JOIN payment_nonces n ON n.nonce = p.nonce WHERE n.auth_nonce = ?1`,
  )
    .bind(nonce)
    .all<{ amount_atomic: number; asset: string; pay_to: string; network: string }>()
    .then((r) => r.results);

describe("PAYMENT-SIGNATURE takes x402 v2 payloads only", () => {
  it("a v1 payload with a forged accepted, reusing a settled authorization, is refused: one claim, one settle, the route's price in the ledger", async () => {
    const { required, accepted } = await offer();
    const authorization = authorizationFor(accepted, PAYER);
    const payload = { authorization, signature: SIGNATURE };
    const v2 = encodePaymentSignatureHeader({
      x402Version: 2,
      resource: required.resource,
      accepted,
      payload,
    });
    expect((await post({ text: "abc" }, { "payment-signature": v2 })).status).toBe(200);

    const forged = { ...accepted, asset: FORGED_ASSET, amount: "1" };
    const v1 = encodePaymentSignatureHeader({
      x402Version: 1,
      resource: required.resource,
      accepted: forged,
      payload,
    } as PaymentPayload);
    const res = await post({ text: "abc" }, { "payment-signature": v1 });
    expect(res.status).toBe(402);
    const body = await res.json<{ reason: string; error: string; x402Version: number; accepts: unknown[] }>();
    expect(body.reason).toBe("invalid_x402_version");
    expect(body.error).toMatch(/X-PAYMENT/);
    expect(body).not.toHaveProperty("hex");
    // Refused like any malformed payment header: with the route's offer to sign again.
    expect(body.x402Version).toBe(1);
    expect(decodePaymentRequiredHeader(res.headers.get("payment-required") as string).accepts[0]).toEqual(
      accepted,
    );

    const key = `${accepted.network}:${accepted.asset}:${PAYER}:${authorization.nonce}`.toLowerCase();
    expect(await claimsOf(authorization.nonce)).toEqual([{ nonce: key, status: "settled" }]);
    expect(await upstreamRequests(`facilitator-settle nonce=${authorization.nonce}`)).toBe(1);
    expect(await ledgerOf(authorization.nonce)).toEqual([
      {
        amount_atomic: Number(accepted.amount),
        asset: env.USDC_ADDRESS,
        pay_to: accepted.payTo,
        network: accepted.network,
      },
    ]);
    expect(accepted.amount).toBe("3000");
  });

  it.each([
    ["version 1", 1],
    ["version 3", 3],
    ['"2" as a string', "2"],
    ["no version", undefined],
  ])("a payload of %s is a 402 invalid_x402_version before any facilitator call", async (_name, version) => {
    const { required, accepted } = await offer();
    const authorization = authorizationFor(accepted, PAYER);
    const header = encodePaymentSignatureHeader({
      x402Version: version,
      resource: required.resource,
      accepted,
      payload: { authorization, signature: SIGNATURE },
    } as PaymentPayload);
    const res = await post({ text: "abc" }, { "payment-signature": header });
    expect(res.status).toBe(402);
    expect((await res.json<{ reason: string }>()).reason).toBe("invalid_x402_version");
    expect(await claimsOf(authorization.nonce)).toEqual([]);
    expect(await upstreamRequests(`facilitator-settle nonce=${authorization.nonce}`)).toBe(0);
  });

  it("a genuine v1 X-PAYMENT still pays, claimed and recorded at the route's price and asset", async () => {
    const { accepted } = await offer();
    const authorization = authorizationFor(accepted, PAYER);
    const xPayment = btoa(
      JSON.stringify({
        x402Version: 1,
        scheme: "exact",
        network: "base",
        payload: { authorization, signature: SIGNATURE },
      }),
    );
    const res = await post({ text: "abc" }, { "x-payment": xPayment });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-payment-response")).toBeTruthy();
    const key = `${accepted.network}:${accepted.asset}:${PAYER}:${authorization.nonce}`.toLowerCase();
    expect(await claimsOf(authorization.nonce)).toEqual([{ nonce: key, status: "settled" }]);
    expect(await ledgerOf(authorization.nonce)).toEqual([
      { amount_atomic: 3000, asset: env.USDC_ADDRESS, pay_to: accepted.payTo, network: accepted.network },
    ]);
  });
});

describe("the ledger keys and records a payment by the route's requirements, not the payload's accepted", () => {
  const requirements: PaymentRequirements = {
    scheme: "exact",
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    amount: "3000",
    payTo: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    maxTimeoutSeconds: 300,
    extra: { name: "USD Coin", version: "2" },
  };

  it("claim key, asset, network, payee and (with no amount in the settle answer) amount", async () => {
    const authorization = authorizationFor(requirements, PAYER);
    const payment: PaymentPayload = {
      x402Version: 2,
      accepted: {
        ...requirements,
        network: "eip155:1",
        asset: FORGED_ASSET,
        amount: "1",
        payTo: "0x0000000000000000000000000000000000000bee",
      },
      payload: { authorization, signature: SIGNATURE },
    };
    const terms = authorizationKey(payment, requirements);
    expect(terms?.key).toBe(
      `eip155:8453:${requirements.asset}:${PAYER}:${authorization.nonce}`.toLowerCase(),
    );
    expect(terms).toMatchObject({ asset: requirements.asset, network: "eip155:8453" });
    if (!terms) return;
    const requestId = crypto.randomUUID();
    expect(await claimAuthorization(env.DB, terms, requestId, "sha256")).toBe(true);
    await recordSettledPayment(env.DB, {
      key: terms.key,
      requestId,
      resource: "sha256",
      payment,
      requirements,
      settlement: { success: true, transaction: `0x${"ab".repeat(32)}`, network: "eip155:8453" },
    });
    expect(await ledgerOf(authorization.nonce)).toEqual([
      {
        amount_atomic: 3000,
        asset: requirements.asset,
        pay_to: requirements.payTo,
        network: "eip155:8453",
      },
    ]);
  });
});
