import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { signedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { ORIGIN } from "../helpers";
import { FACILITATOR, PARTNER_HOSTS, stubNetwork } from "../partners/network";

// A request that carries a card key and an x402 payment is keyed by what can pay it
// (src/payments/idempotency-key.ts) and stored by what did pay it (idempotency.ts): a retry never
// pays twice, whichever of the two paid. Against the facilitator double, which counts settles by
// nonce; payers sign for real (a replay is answered only to its proven payer).
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const PATH = "/api/skills/sha256";

const post = (headers: Record<string, string>, body: unknown = { text: "abc" }) =>
  app.fetch(
    new Request(`${ORIGIN}${PATH}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );

let offer: PaymentRequired | undefined;
async function required(): Promise<PaymentRequired> {
  if (!offer) {
    const res = await post({}, {});
    expect(res.status).toBe(402);
    offer = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
  }
  return offer;
}

/** A fresh authorization (new nonce) of `account`, carrying `paymentId` when given. */
async function signed(account: PrivateKeyAccount, paymentId?: string) {
  const { payload, nonce } = await signedPayment(await required(), account, paymentId);
  return { header: encodePaymentSignatureHeader(payload), nonce };
}

const newAccount = () => privateKeyToAccount(generatePrivateKey());
const settles = async (...nonces: string[]) => {
  let n = 0;
  for (const nonce of nonces) n += await upstreamRequests(`facilitator-settle nonce=${nonce}`);
  return n;
};
const ledgerRowsOf = async (payer: string) =>
  (
    await env.DB.prepare("SELECT count(*) AS n FROM payments WHERE payer = ?1")
      .bind(payer)
      .first<{ n: number }>()
  )?.n;

describe("a retry never pays twice when the call carries a card key and an x402 payment", {
  timeout: 30_000,
}, () => {
  it("a card key with no credits left and a payment id, no Idempotency-Key: the retry gets the stored answer, settled once", async () => {
    const key = await keyWith(env.DB, 0, "sha256");
    const payer = newAccount();
    const id = generatePaymentId();
    const first = await signed(payer, id);
    const paid = await post({ authorization: `Bearer ${key}`, "payment-signature": first.header });
    expect(paid.status).toBe(200);
    expect(paid.headers.get("payment-response")).toBeTruthy();

    const retry = await signed(payer, id);
    const res = await post({ authorization: `Bearer ${key}`, "payment-signature": retry.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-idempotent-replay")).toBe("true");
    expect(await res.text()).toBe(await paid.text());
    expect(await settles(first.nonce, retry.nonce)).toBe(1);
    expect(await ledgerRowsOf(payer.address)).toBe(1);
  });

  it("a card key with no credits left and an Idempotency-Key, paid by x402: the answer is stored under that key, settled once", async () => {
    const key = await keyWith(env.DB, 0, "sha256");
    const payer = newAccount();
    // No payment id: the Idempotency-Key is the only key the retry carries.
    const first = await signed(payer);
    const headers = { authorization: `Bearer ${key}`, "idempotency-key": "order-7" };
    const paid = await post({ ...headers, "payment-signature": first.header });
    expect(paid.status).toBe(200);
    expect(paid.headers.get("payment-response")).toBeTruthy();

    const retry = await signed(payer);
    const res = await post({ ...headers, "payment-signature": retry.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-idempotent-replay")).toBe("true");
    expect(res.headers.get("payment-response")).toBe(paid.headers.get("payment-response"));
    expect(await settles(first.nonce, retry.nonce)).toBe(1);
    expect(await ledgerRowsOf(payer.address)).toBe(1);

    // The key is scoped by the card key: another customer's key with the same string runs (and pays).
    const other = await keyWith(env.DB, 0, "sha256");
    const theirs = await signed(payer);
    const res2 = await post({
      authorization: `Bearer ${other}`,
      "idempotency-key": "order-7",
      "payment-signature": theirs.header,
    });
    expect(res2.status).toBe(200);
    expect(res2.headers.get("x-idempotent-replay")).toBeNull();
    expect(await settles(theirs.nonce)).toBe(1);
  });

  it("a card credit pays a call that also carries a payment id: the retry spends no second credit, and nothing is settled", async () => {
    const key = await keyWith(env.DB, 3, "sha256");
    const payer = newAccount();
    const id = generatePaymentId();
    const first = await signed(payer, id);
    const paid = await post({ "x-api-key": key, "payment-signature": first.header });
    expect(paid.status).toBe(200);
    expect(paid.headers.get("payment-response")).toBeNull(); // the credit paid
    expect(await callsLeft(env.DB, key)).toBe(2);

    const retry = await signed(payer, id);
    const res = await post({ "x-api-key": key, "payment-signature": retry.header });
    expect(res.headers.get("x-idempotent-replay")).toBe("true");
    expect(await res.text()).toBe(await paid.text());
    expect(await callsLeft(env.DB, key)).toBe(2);
    expect(await settles(first.nonce, retry.nonce)).toBe(0);

    // Scoped by the payer the signature proves: another wallet with the same id is refused.
    const stranger = await signed(newAccount(), id);
    const refused = await post({ "x-api-key": key, "payment-signature": stranger.header });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ reason: "idempotency_key_mismatch" });
    expect(await callsLeft(env.DB, key)).toBe(2);
  });
});

describe("a card key sent to a route it cannot pay (partner try calls) keys nothing", {
  timeout: 30_000,
}, () => {
  const tryEnv = {
    ...env,
    FACILITATOR_URL: FACILITATOR,
    PARTNER_BASE_URLS: JSON.stringify({ pricefeed: PARTNER_HOSTS.pricefeed }),
  };
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("with an Idempotency-Key beside it, the payment id keys the call: the retry is replayed, paid once", async () => {
    const { partnerCalls, settled } = stubNetwork(() =>
      Response.json({ prices: { btc: 1 }, nonce: crypto.randomUUID() }),
    );
    const path = "/api/partners/pricefeed/try/price";
    const send = (headers: Record<string, string> = {}) =>
      createApp().fetch(new Request(`${ORIGIN}${path}`, { headers }), tryEnv);
    const signer = newAccount();
    const paymentId = generatePaymentId();
    const card = { authorization: `Bearer ${await keyWith(env.DB, 5, "sha256")}`, "idempotency-key": "k-1" };
    const pay = async (headers: Record<string, string>) => {
      const challenge = await send(headers);
      expect(challenge.status).toBe(402);
      const req = decodePaymentRequiredHeader(challenge.headers.get("payment-required") ?? "");
      const payload = await registerExactEvmScheme(new x402Client(), { signer }).createPaymentPayload(req);
      appendPaymentIdentifierToExtensions(payload.extensions ?? {}, paymentId);
      return send({ ...headers, "payment-signature": encodePaymentSignatureHeader(payload) });
    };
    const first = await pay(card);
    expect(first.status).toBe(200);
    const body = await first.text();
    // The same payment id, with the card key and header or without them: the same stored answer.
    for (const headers of [card, {}]) {
      const retry = await pay(headers);
      expect(retry.status).toBe(200);
      expect(retry.headers.get("x-idempotent-replay")).toBe("true");
      expect(await retry.text()).toBe(body);
    }
    expect(partnerCalls).toHaveLength(1);
    expect(settled).toHaveLength(1);
  });
});
